#include "util/output.hpp"

#include "error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace attntrace {
namespace {

constexpr std::size_t buffer_size = 1 << 16;
// What an output written directly (stdout, a device, a FIFO) holds before it writes a byte.
// A file is replaced through its temporary, all or nothing; stdout cannot be taken back, so a
// run that fails late (std::bad_alloc while rendering, a failed --svg) leaves nothing there,
// unless its output passed this size and was already streaming.
constexpr std::size_t direct_hold = std::size_t{16} << 20;

// Which of descriptors 0, 1 and 2 were closed when the program started (prepare_output).
std::array<bool, 3> closed_at_start{};

// Temporaries to remove if a signal ends the program: plain arrays, because the handler
// may only call async-signal-safe functions (unlink, signal, raise).
constexpr std::size_t max_temporaries = 8;
constexpr std::size_t no_slot = max_temporaries;
std::array<std::array<char, 4096>, max_temporaries> temporaries{};
std::array<std::atomic<bool>, max_temporaries> in_use{};

extern "C" void remove_temporaries_and_die(int signal) {
    for (std::size_t i = 0; i < max_temporaries; ++i)
        if (in_use[i].load()) ::unlink(temporaries[i].data());
    std::signal(signal, SIG_DFL);
    std::raise(signal);  // delivered when the handler returns: the exit status is the signal's
}

// Every signal whose default action ends the process, except SIGKILL and SIGSTOP, which
// cannot be caught.
std::vector<int> terminating_signals() {
    std::vector<int> signals{SIGHUP,  SIGINT,  SIGQUIT,   SIGILL,  SIGTRAP, SIGABRT, SIGBUS,
                             SIGFPE,  SIGUSR1, SIGSEGV,   SIGUSR2, SIGPIPE, SIGALRM, SIGTERM,
                             SIGSTKFLT, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGIO, SIGPWR, SIGSYS};
    for (int s = SIGRTMIN; s <= SIGRTMAX; ++s) signals.push_back(s);
    return signals;
}

// The handler goes only where the default action is in place: a signal the caller ignores
// stays ignored, and a handler already installed (a sanitizer's) is kept.
void install_signal_handlers() {
    static const bool installed = [] {
        for (const int s : terminating_signals()) {
            struct sigaction old {};
            if (::sigaction(s, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
            struct sigaction action {};
            action.sa_handler = remove_temporaries_and_die;
            sigemptyset(&action.sa_mask);
            ::sigaction(s, &action, nullptr);
        }
        return true;
    }();
    (void)installed;
}

// The slot that lists `path` for the signal handler, or no_slot when all are taken or the
// path is too long (the temporary is still removed on every ordinary path).
std::size_t remember(const std::string& path) {
    install_signal_handlers();
    for (std::size_t i = 0; i < max_temporaries; ++i) {
        if (in_use[i].load() || path.size() >= temporaries[i].size()) continue;
        std::memcpy(temporaries[i].data(), path.c_str(), path.size() + 1);
        in_use[i].store(true);
        return i;
    }
    return no_slot;
}

void forget(std::size_t slot) {
    if (slot != no_slot) in_use[slot].store(false);
}

}  // namespace

struct Destination {
    int fd = 1;
    bool owns_fd = false;
    std::optional<std::string> target;  // a regular file to rename over
    std::string temporary;
    std::size_t slot = no_slot;  // the temporary's signal-cleanup slot
};

namespace {

Destination open_destination(const std::optional<std::string>& path) {
    Destination d;
    if (!path) {
        if (closed_at_start[1]) throw DataError("cannot write output: standard output is closed");
        return d;
    }
    // A symlink is followed: the file it names is replaced, the link stays.
    std::error_code error;
    const std::string resolved = std::filesystem::weakly_canonical(*path, error).string();
    const std::string file = error || resolved.empty() ? *path : resolved;
    struct stat info {};
    const bool exists = ::stat(file.c_str(), &info) == 0;
    if (exists && !S_ISREG(info.st_mode)) {  // a FIFO, a device, a socket: write to it directly
        if (S_ISDIR(info.st_mode)) throw DataError(fmt::format("cannot write {}: it is a directory", *path));
        d.fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
        if (d.fd < 0) throw DataError(fmt::format("cannot write {}: {}", *path, std::strerror(errno)));
        d.owns_fd = true;
        return d;
    }
    d.target = file;
    d.temporary = file + ".attntrace-XXXXXX";
    d.fd = ::mkstemp(d.temporary.data());
    if (d.fd < 0) throw DataError(fmt::format("cannot write {}: {}", *path, std::strerror(errno)));
    d.owns_fd = true;
    d.slot = remember(d.temporary);
    // mkstemp makes the file private (0600): give it the old file's permissions, or those a
    // new file would get.
    mode_t mode = 0;
    if (exists) {
        mode = info.st_mode & 07777;
    } else {
        const mode_t mask = ::umask(0);
        ::umask(mask);
        mode = 0666 & ~mask;
    }
    ::fchmod(d.fd, mode);
    return d;
}

// A write beyond the file size limit (ulimit -f) raises SIGXFSZ, whose default action ends
// the program on the spot. Ignored, the write fails with EFBIG and is reported like any other.
void ignore_file_size_signal() {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    ::sigaction(SIGXFSZ, &ignore, nullptr);
}

}  // namespace

std::optional<std::string> prepare_output() {
    for (int fd = 0; fd <= 2; ++fd) {
        if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
        // open() takes the lowest free number, which is fd: those below it are open.
        if (::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY) < 0)
            return fmt::format("cannot open /dev/null: {}", std::strerror(errno));
        closed_at_start[static_cast<std::size_t>(fd)] = true;
    }
    ignore_file_size_signal();
    return std::nullopt;
}

FdStreambuf::FdStreambuf(int fd, std::string name, std::size_t hold)
    : fd_(fd), name_(std::move(name)), hold_(hold), buffer_(std::min(buffer_size, hold)) {
    setp(buffer_.data(), buffer_.data() + buffer_.size());
}

void FdStreambuf::drain() {
    const char* data = pbase();
    std::size_t left = static_cast<std::size_t>(pptr() - pbase());
    setp(buffer_.data(), buffer_.data() + buffer_.size());  // the buffer is free again, whatever happens
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

void FdStreambuf::make_room() {
    if (buffer_.size() == hold_) return drain();
    const auto used = pptr() - pbase();
    buffer_.resize(std::min(2 * buffer_.size(), hold_));
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    pbump(static_cast<int>(used));
}

FdStreambuf::int_type FdStreambuf::overflow(int_type c) {
    make_room();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
        *pptr() = traits_type::to_char_type(c);
        pbump(1);
    }
    return traits_type::not_eof(c);
}

std::streamsize FdStreambuf::xsputn(const char* data, std::streamsize size) {
    std::streamsize written = 0;
    while (written < size) {
        if (pptr() == epptr()) make_room();
        const auto room = static_cast<std::streamsize>(epptr() - pptr());
        const auto n = std::min(room, size - written);
        std::memcpy(pptr(), data + written, static_cast<std::size_t>(n));
        pbump(static_cast<int>(n));
        written += n;
    }
    return written;
}

Output::Output(const std::optional<std::string>& path)
    : Output(open_destination(path), path) {}

Output::Output(Destination&& d, const std::optional<std::string>& path)
    : target_(std::move(d.target)),
      temporary_(std::move(d.temporary)),
      slot_(d.slot),
      fd_(d.fd),
      owns_fd_(d.owns_fd),
      open_(d.owns_fd),
      name_(path.value_or("output")),
      buffer_(fd_, name_, target_ ? buffer_size : direct_hold),
      stream_(&buffer_) {
    // Errors raised by the buffer come out of the stream operation that hit them.
    stream_.exceptions(std::ios::badbit);
}

Output::~Output() {
    if (open_) ::close(fd_);
    if (target_ && !published_) {
        ::unlink(temporary_.c_str());
        forget(slot_);
    }
}

void Output::finish() {
    buffer_.drain();
    if (!owns_fd_) return;
    open_ = false;
    int error = target_ && ::fsync(fd_) != 0 ? errno : 0;
    if (::close(fd_) != 0 && error == 0) error = errno;
    if (error != 0) throw DataError(fmt::format("cannot write {}: {}", name_, std::strerror(error)));
}

void Output::publish() {
    if (!target_) return;
    if (::rename(temporary_.c_str(), target_->c_str()) != 0)
        throw DataError(fmt::format("cannot write {}: {}", name_, std::strerror(errno)));
    published_ = true;
    forget(slot_);
}

Outputs::Outputs(const std::optional<std::string>& main_path) : main_(std::make_unique<Output>(main_path)) {}

std::ostream& Outputs::add(const std::string& path) {
    others_.push_back(std::make_unique<Output>(path));
    return others_.back()->stream();
}

std::vector<Output*> Outputs::commit_order() const {
    std::vector<Output*> order;
    for (const auto& other : others_) order.push_back(other.get());
    order.push_back(main_.get());
    std::stable_partition(order.begin(), order.end(), [](const Output* o) { return o->replaces_file(); });
    return order;
}

void Outputs::commit() {
    const auto order = commit_order();
    for (Output* output : order) output->finish();
    for (Output* output : order) output->publish();
}

}  // namespace attntrace
