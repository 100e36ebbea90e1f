#include "util/output.hpp"

#include "core/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>
#include <variant>
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

// Where a path leads, found by locate() before anything is opened; then what opened() opened.
struct Destination {
    enum class Kind { descriptor, device, file };
    Kind kind = Kind::descriptor;
    std::optional<std::string> path;      // as given; none for stdout
    FileId id;                            // which file this is
    int descriptor = 1;                   // Kind::descriptor: the open descriptor to write through
    std::string file;                     // Kind::device, Kind::file: the path at the end of any symlinks
    std::optional<struct stat> existing;  // Kind::file: the file to replace, if there is one
    int fd = -1;                          // opened: ours, a duplicate for Kind::descriptor
    std::string temporary;                // opened, Kind::file: the file renamed over `file`
    std::size_t slot = no_slot;           // the temporary's signal-cleanup slot

    std::string name() const { return path.value_or("output"); }  // for messages
};

namespace {

using Kind = Destination::Kind;

constexpr int max_symlinks = 40;  // as many as the kernel follows in one path
constexpr std::array<const char*, 3> standard_names{"standard input", "standard output", "standard error"};

[[noreturn]] void cannot_write(const std::string& name, std::string_view why) {
    throw DataError(fmt::format("cannot write {}: {}", name, why));
}

// `path` split at its last slash: the folder ("." when there is none) and the name.
std::pair<std::string, std::string> split(const std::string& path) {
    const auto slash = path.rfind('/');
    if (slash == std::string::npos) return {".", path};
    return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

// N when `path` names descriptor N of this process: its name is a number and its folder is
// /proc/<our pid>/fd, which /proc/self/fd and /dev/fd lead to.
std::optional<int> named_descriptor(const std::string& path) {
    const auto [folder, name] = split(path);
    int n = 0;
    const char* end = name.data() + name.size();
    if (name.empty() || name.front() < '0' || name.front() > '9' || std::from_chars(name.data(), end, n).ptr != end)
        return std::nullopt;
    char resolved[PATH_MAX];
    if (!::realpath(folder.c_str(), resolved) || resolved != fmt::format("/proc/{}/fd", ::getpid()))
        return std::nullopt;
    return n;
}

// What the symlink `link` points to; a relative target is taken from the link's folder.
std::string link_target(const std::string& link, const std::string& name) {
    std::string target(PATH_MAX, '\0');
    const ssize_t n = ::readlink(link.c_str(), target.data(), target.size());
    if (n < 0) cannot_write(name, std::strerror(errno));
    if (static_cast<std::size_t>(n) == target.size()) cannot_write(name, std::strerror(ENAMETOOLONG));
    target.resize(static_cast<std::size_t>(n));
    if (target.starts_with('/')) return target;
    const auto slash = link.rfind('/');
    return slash == std::string::npos ? target : link.substr(0, slash + 1) + target;
}

// Where `path` leads: the descriptor it names, or the path at the end of its symlinks. The
// links are followed here, one at a time, because the system would not follow one to a file
// not there yet, and must not follow /proc/self/fd/N, which leads to the file behind the
// descriptor and not to the descriptor.
std::variant<int, std::string> follow(const std::string& path) {
    std::string current = path;
    for (int links = 0;; ++links) {
        if (const auto n = named_descriptor(current)) return *n;
        struct stat info {};
        if (::lstat(current.c_str(), &info) != 0 || !S_ISLNK(info.st_mode)) return current;
        if (links == max_symlinks) cannot_write(path, std::strerror(ELOOP));
        current = link_target(current, path);
    }
}

FileId id_of(const struct stat& info) { return {info.st_dev, info.st_ino, {}}; }

// A file not there yet is known by its folder, symlinks resolved, and its name.
FileId id_of_new(const std::string& file) {
    const auto [folder, name] = split(file);
    char resolved[PATH_MAX];
    return {0, 0, fmt::format("{}/{}", ::realpath(folder.c_str(), resolved) ? resolved : folder.c_str(), name)};
}

// stdout, /dev/stdout, /dev/fd/N, /proc/self/fd/N: written through the open descriptor, so
// that its append mode (`>>`) and its offset hold, and the file behind it is never replaced.
Destination through_descriptor(int n, const std::optional<std::string>& path) {
    Destination d;
    d.path = path;
    if (n <= 2 && closed_at_start[static_cast<std::size_t>(n)])
        cannot_write(d.name(), fmt::format("{} is closed", standard_names[static_cast<std::size_t>(n)]));
    struct stat info {};
    const int flags = ::fcntl(n, F_GETFL);
    if (flags < 0 || ::fstat(n, &info) != 0)
        cannot_write(d.name(), errno == EBADF ? fmt::format("descriptor {} is not open", n) : std::strerror(errno));
    if ((flags & O_ACCMODE) == O_RDONLY) cannot_write(d.name(), fmt::format("descriptor {} is not open for writing", n));
    d.descriptor = n;
    d.id = id_of(info);
    return d;
}

// A file we may not write is not replaced, as `cp` without -f would not replace it. A file
// without any write permission bit counts as read-only even where access() allows writing
// (root may write anything).
void refuse_read_only(const std::string& name, const std::string& file, const struct stat& info) {
    if ((info.st_mode & 0222) == 0) cannot_write(name, "it is read-only");
    if (::faccessat(AT_FDCWD, file.c_str(), W_OK, AT_EACCESS) != 0)
        cannot_write(name, errno == EACCES ? "it is read-only" : std::strerror(errno));
}

Destination locate(const std::optional<std::string>& path) {
    if (!path || *path == "-") return through_descriptor(1, path);  // "-": standard output, as for the input
    const auto end = follow(*path);
    if (const int* n = std::get_if<int>(&end)) return through_descriptor(*n, path);
    Destination d;
    d.kind = Kind::file;
    d.path = path;
    d.file = std::get<std::string>(end);
    struct stat info {};
    if (::stat(d.file.c_str(), &info) != 0) {  // a new file (or an error that mkstemp reports)
        d.id = id_of_new(d.file);
        return d;
    }
    if (S_ISDIR(info.st_mode)) cannot_write(*path, "it is a directory");
    if (!S_ISREG(info.st_mode)) {
        d.kind = Kind::device;  // a FIFO, a device: written directly (a socket: open fails, ENXIO)
    } else {
        refuse_read_only(*path, d.file, info);
        d.existing = info;
    }
    d.id = id_of(info);
    return d;
}

// The permissions a new file gets: 0666 less the umask.
mode_t new_file_mode() {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    return 0666 & ~mask;
}

// FILE.attntrace-XXXXXX, for mkstemp: the temporary beside `file`. The name part is shortened,
// at a UTF-8 character boundary, when the temporary's own name would pass NAME_MAX bytes.
std::string temporary_template(const std::string& file) {
    constexpr std::string_view suffix = ".attntrace-XXXXXX";
    const auto slash = file.rfind('/');
    const std::size_t name_start = slash == std::string::npos ? 0 : slash + 1;
    std::size_t keep = file.size() - name_start;
    if (keep + suffix.size() > NAME_MAX) {
        keep = NAME_MAX - suffix.size();
        // Back up while the first byte left out continues a character.
        while (keep > 0 && (static_cast<unsigned char>(file[name_start + keep]) & 0xC0) == 0x80) --keep;
    }
    return file.substr(0, name_start + keep).append(suffix);
}

// Gives the temporary the old file's owner and group, where the system lets us, and its
// permissions (mkstemp makes it private, 0600), or those a new file would get. Returns 0 or
// an errno. Only root may give a file away: for anyone else (EPERM), or an owner this system
// cannot represent (EINVAL), the file becomes the user's, as any file they create. The owner
// comes first: chown clears the set-user-ID and set-group-ID bits.
int take_over_attributes(int fd, const std::optional<struct stat>& existing) {
    if (existing && ::fchown(fd, existing->st_uid, existing->st_gid) != 0 && errno != EPERM && errno != EINVAL)
        return errno;
    return ::fchmod(fd, existing ? existing->st_mode & 07777 : new_file_mode()) == 0 ? 0 : errno;
}

// A temporary file beside the file to replace, ready to be renamed over it.
Destination open_temporary(Destination d) {
    d.temporary = temporary_template(d.file);
    d.fd = ::mkstemp(d.temporary.data());
    if (d.fd < 0) cannot_write(d.name(), std::strerror(errno));
    d.slot = remember(d.temporary);
    if (const int error = take_over_attributes(d.fd, d.existing)) {
        ::close(d.fd);
        ::unlink(d.temporary.c_str());
        forget(d.slot);
        cannot_write(d.name(), std::strerror(error));
    }
    return d;
}

Destination opened(Destination d) {
    if (d.kind == Kind::file) return open_temporary(std::move(d));
    d.fd = d.kind == Kind::descriptor ? ::fcntl(d.descriptor, F_DUPFD_CLOEXEC, 0)
                                      : ::open(d.file.c_str(), O_WRONLY | O_CLOEXEC);
    if (d.fd < 0) cannot_write(d.name(), std::strerror(errno));
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

Output::Output(Destination&& d)
    : path_(std::move(d.path)),
      name_(path_.value_or("output")),
      id_(std::move(d.id)),
      target_(d.kind == Kind::file ? std::optional(std::move(d.file)) : std::nullopt),
      temporary_(std::move(d.temporary)),
      slot_(d.slot),
      fd_(d.fd),
      stdout_(d.kind == Kind::descriptor && d.descriptor == 1),
      buffer_(fd_, name_, target_ ? buffer_size : direct_hold),
      stream_(&buffer_) {
    // Errors raised by the buffer come out of the stream operation that hit them.
    stream_.exceptions(std::ios::badbit);
}

Output::~Output() {
    if (fd_ >= 0) ::close(fd_);
    if (target_ && !published_) {
        ::unlink(temporary_.c_str());
        forget(slot_);
    }
}

// A temporary is not forced to disk (no fsync), as sort -o, sed -i and hyperfine's exports
// are not: what is promised is about attntrace's own failures, and an fsync cost the lecture
// example 0.96 to 1.20 ms per file (strace -T, docs/performance.md's second machine). After a
// power cut a file just written may be empty; running attntrace again writes it again.
void Output::finish() {
    buffer_.drain();
    const int closed = ::close(fd_);
    fd_ = -1;
    if (closed != 0) throw DataError(fmt::format("cannot write {}: {}", name_, std::strerror(errno)));
}

void Output::publish() {
    if (!target_) return;
    if (::rename(temporary_.c_str(), target_->c_str()) != 0)
        throw DataError(fmt::format("cannot write {}: {}", name_, std::strerror(errno)));
    published_ = true;
    forget(slot_);
}

Outputs::Outputs(const std::optional<std::string>& main_path)
    : main_(std::make_unique<Output>(opened(locate(main_path)))) {}

std::ostream& Outputs::add(const std::string& path) {
    Destination d = locate(path);
    refuse_same_file(d);
    others_.push_back(std::make_unique<Output>(opened(std::move(d))));
    return others_.back()->stream();
}

void Outputs::refuse_same_file(const Destination& d) const {
    // How a message names an output: "-" and no path are the standard output.
    const auto named = [](const std::optional<std::string>& path) {
        return !path || *path == "-" ? std::string("the standard output (-)") : *path;
    };
    const std::string hint = d.path == "-" ? " (-o FILE for the main output, and - for this one)" : "";
    for (const Output* output : commit_order()) {
        if (output->id() != d.id) continue;
        if (named(output->path()) == named(d.path))  // the same name twice
            throw UsageError(fmt::format("two outputs go to {}: give each output its own{}", named(d.path), hint));
        throw UsageError(fmt::format("{} and {} are the same file: give each output its own{}", named(output->path()),
                                     named(d.path), hint));
    }
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
