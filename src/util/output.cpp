#include "util/output.hpp"

#include "error.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

namespace attntrace {
namespace {

constexpr std::size_t buffer_size = 1 << 16;

// Creates PATH's temporary sibling; returns its descriptor and fills `temporary`.
int open_temporary(const std::string& path, std::string& temporary) {
    temporary = path + ".attntrace-XXXXXX";
    const int fd = ::mkstemp(temporary.data());
    if (fd < 0) throw DataError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
    // mkstemp makes the file private (0600); give it the permissions a new file would get.
    const mode_t mask = ::umask(0);
    ::umask(mask);
    ::fchmod(fd, 0666 & ~mask);
    return fd;
}

}  // namespace

FdStreambuf::FdStreambuf(int fd, std::string name)
    : fd_(fd), name_(std::move(name)), buffer_(new char[buffer_size]) {
    setp(buffer_.get(), buffer_.get() + buffer_size);
}

FdStreambuf::~FdStreambuf() = default;

void FdStreambuf::drain() {
    const char* data = pbase();
    std::size_t left = static_cast<std::size_t>(pptr() - pbase());
    setp(buffer_.get(), buffer_.get() + buffer_size);  // the buffer is free again, whatever happens
    while (left > 0) {
        const ssize_t n = ::write(fd_, data, left);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EPIPE) throw BrokenPipe{};
            throw DataError(fmt::format("cannot write {}: {}", name_, std::strerror(errno)));
        }
        data += n;
        left -= static_cast<std::size_t>(n);
    }
}

FdStreambuf::int_type FdStreambuf::overflow(int_type c) {
    drain();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
        *pptr() = traits_type::to_char_type(c);
        pbump(1);
    }
    return traits_type::not_eof(c);
}

std::streamsize FdStreambuf::xsputn(const char* data, std::streamsize size) {
    std::streamsize written = 0;
    while (written < size) {
        if (pptr() == epptr()) drain();
        const auto room = static_cast<std::streamsize>(epptr() - pptr());
        const auto n = std::min(room, size - written);
        std::memcpy(pptr(), data + written, static_cast<std::size_t>(n));
        pbump(static_cast<int>(n));
        written += n;
    }
    return written;
}

int FdStreambuf::sync() {
    drain();
    return 0;
}

Output::Output(const std::optional<std::string>& path)
    : path_(path),
      fd_(path ? open_temporary(*path, temporary_) : 1),
      buffer_(fd_, path ? *path : std::string("output")),
      stream_(&buffer_) {
    // Errors raised by the buffer come out of the stream operation that hit them.
    stream_.exceptions(std::ios::badbit);
}

Output::~Output() {
    if (!path_) return;
    if (!committed_) {
        ::close(fd_);
        ::unlink(temporary_.c_str());
    }
}

void Output::commit() {
    stream_.flush();
    if (!path_) return;
    int error = ::fsync(fd_) == 0 ? 0 : errno;
    if (::close(fd_) != 0 && error == 0) error = errno;
    if (error == 0 && ::rename(temporary_.c_str(), path_->c_str()) != 0) error = errno;
    if (error != 0) {
        ::unlink(temporary_.c_str());
        committed_ = true;  // nothing left to clean up
        throw DataError(fmt::format("cannot write {}: {}", *path_, std::strerror(error)));
    }
    committed_ = true;
}

}  // namespace attntrace
