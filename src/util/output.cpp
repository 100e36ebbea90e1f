#include "util/output.hpp"

#include "error.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace attntrace {

void write_stdout(std::string_view text) {
    while (!text.empty()) {
        const ssize_t n = ::write(STDOUT_FILENO, text.data(), text.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EPIPE) throw BrokenPipe{};
            throw DataError(fmt::format("cannot write output: {}", std::strerror(errno)));
        }
        text.remove_prefix(static_cast<std::size_t>(n));
    }
}

}  // namespace attntrace
