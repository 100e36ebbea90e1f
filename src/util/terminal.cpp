#include "util/terminal.hpp"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <sys/ioctl.h>
#include <unistd.h>

namespace attntrace {

bool stdout_is_terminal() { return ::isatty(STDOUT_FILENO) == 1; }

bool color_wanted() {
    const char* no_color = std::getenv("NO_COLOR");
    return stdout_is_terminal() && (no_color == nullptr || *no_color == '\0');
}

std::size_t output_width() {
    if (stdout_is_terminal()) {
        winsize size{};
        if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
    }
    if (const char* columns = std::getenv("COLUMNS")) {
        std::size_t value = 0;
        const char* end = columns + std::strlen(columns);
        if (std::from_chars(columns, end, value).ptr == end) return value;
    }
    return 0;
}

}  // namespace attntrace
