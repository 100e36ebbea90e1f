#include "util/output.hpp"

#include "error.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <sys/stat.h>
#include <unistd.h>

namespace attntrace {

namespace {

// Writes all of `text` to `fd`; returns errno on failure, 0 on success.
int write_all(int fd, std::string_view text) {
    while (!text.empty()) {
        const ssize_t n = ::write(fd, text.data(), text.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        text.remove_prefix(static_cast<std::size_t>(n));
    }
    return 0;
}

}  // namespace

void write_file_atomically(const std::string& path, std::string_view text) {
    std::string temporary = path + ".attntrace-XXXXXX";
    const int fd = ::mkstemp(temporary.data());
    if (fd < 0) throw DataError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
    // mkstemp creates the file private (0600); give it the permissions a new file would get.
    const mode_t mask = ::umask(0);
    ::umask(mask);
    int error = ::fchmod(fd, 0666 & ~mask) == 0 ? 0 : errno;
    if (error == 0) error = write_all(fd, text);
    if (error == 0 && ::fsync(fd) != 0) error = errno;
    if (::close(fd) != 0 && error == 0) error = errno;
    if (error == 0 && ::rename(temporary.c_str(), path.c_str()) != 0) error = errno;
    if (error != 0) {
        ::unlink(temporary.c_str());
        throw DataError(fmt::format("cannot write {}: {}", path, std::strerror(error)));
    }
}

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
