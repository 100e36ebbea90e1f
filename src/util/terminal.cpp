#include "util/terminal.hpp"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <sys/ioctl.h>
#include <unistd.h>

namespace attntrace {

bool is_terminal(int fd) { return ::isatty(fd) == 1; }

bool color_wanted(int fd) {
    const char* no_color = std::getenv("NO_COLOR");
    const char* term = std::getenv("TERM");
    return is_terminal(fd) && (no_color == nullptr || *no_color == '\0') && !(term && std::strcmp(term, "dumb") == 0);
}

std::size_t output_width(int fd, bool is_stdout) {
    if (is_terminal(fd)) {
        winsize size{};
        if (::ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
    }
    if (const char* columns = std::getenv("COLUMNS"); columns && is_stdout) {
        std::size_t value = 0;
        const char* end = columns + std::strlen(columns);
        if (std::from_chars(columns, end, value).ptr == end) return value;
    }
    return 0;
}

}  // namespace attntrace
