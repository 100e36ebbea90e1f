#include "util/terminal.hpp"

#include "util/utf8.hpp"

#include <fmt/format.h>

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

std::string shell_word(const std::string& word) {
    if (!word.empty() && word.find_first_of(" \t\"'\\$`&|;<>()*?[]#~!{}") == std::string::npos && !first_control_character(word))
        return word;
    if (!first_control_character(word)) {
        std::string out = "'";
        for (const char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
        return out + "'";
    }
    std::string out = "$'";
    for (const char c : word) {
        const auto byte = static_cast<unsigned char>(c);
        if (c == '\'' || c == '\\') out += '\\', out += c;
        else if (byte < 0x20 || byte == 0x7f) out += fmt::format("\\x{:02x}", byte);
        else out += c;
    }
    return out + "'";
}

}  // namespace attntrace
