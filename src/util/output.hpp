// Where output goes: standard output, or files written all or nothing. Commands compute
// everything first and write last, so a data error never leaves output behind. A file is
// written to a temporary through a 64 KiB buffer and renamed into place at the end; what
// cannot be replaced (stdout, a device, a FIFO) is held in memory up to 16 MiB and written at
// the end, so a run that fails late leaves nothing there either, unless its output is larger.
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <streambuf>
#include <string>
#include <sys/types.h>
#include <vector>

namespace attntrace {

// The reader of a pipe went away (EPIPE with SIGPIPE ignored): not an error of ours, so the
// program ends quietly, like one killed by SIGPIPE.
struct BrokenPipe {};
inline constexpr int exit_broken_pipe = 141;  // 128 + SIGPIPE, what a shell shows either way

// To call first thing in main(), before anything is opened. Makes sure descriptors 0, 1 and 2
// are open: a closed one gets /dev/null, so that no file opened later takes its number (a
// temporary on descriptor 1 would receive what is meant for stdout). A closed stdout is
// remembered, and output meant for it is refused: "cannot write output: standard output is
// closed". Also ignores SIGXFSZ, so that a write beyond the file size limit (`ulimit -f`)
// fails with EFBIG ("File too large") like any other write error, instead of killing the
// program and leaving its temporaries. Returns an error message when /dev/null cannot be
// opened.
std::optional<std::string> prepare_output();

// An ostream onto a file descriptor that holds up to `hold` bytes before it writes any: its
// buffer starts at 64 KiB (or `hold`, if smaller) and doubles each time it fills, up to
// `hold`. From then on a full buffer is written at once. flush() writes nothing; drain()
// writes what the buffer holds. A failed write throws BrokenPipe (EPIPE) or
// DataError("cannot write NAME: …") out of the operation that hit it.
class FdStreambuf : public std::streambuf {
public:
    FdStreambuf(int fd, std::string name, std::size_t hold);
    void drain();

protected:
    int_type overflow(int_type c) override;
    std::streamsize xsputn(const char* data, std::streamsize size) override;

private:
    void make_room();  // grows the buffer while it may, else writes it out
    int fd_;
    std::string name_;
    std::size_t hold_;
    std::vector<char> buffer_;
};

struct Destination;  // where a path leads, and what was opened there (output.cpp)

// Which file an output writes: one that is there by its device and inode, one not there yet
// by its folder (symlinks resolved) and name.
struct FileId {
    dev_t device = 0;
    ino_t inode = 0;
    std::string path;
    bool operator==(const FileId&) const = default;
};

// One destination. No path, or "-": standard output. A path of an open descriptor (/dev/stdout,
// /dev/fd/N, /proc/self/fd/N) is written through that descriptor. A path to a regular file
// (or to nothing yet, or a symlink to either, followed to its end): a temporary file beside the
// file, renamed over it by publish(), with the old file's permissions and, where the system
// lets us, its owner and group; without publish() — an error on the way, or a signal — the
// temporary is removed and the file is left as it was. A file we may not write, or one
// without any write permission bit, is refused. A path to a FIFO or a device is written
// directly: it cannot be replaced, and must not be (nor a socket, which open() refuses).
class Output {
public:
    explicit Output(Destination&& destination);
    ~Output();
    Output(const Output&) = delete;
    Output& operator=(const Output&) = delete;

    std::ostream& stream() { return stream_; }
    const std::optional<std::string>& path() const { return path_; }
    const FileId& id() const { return id_; }
    bool replaces_file() const { return target_.has_value(); }
    // The descriptor written (a temporary's for a file), to ask whether it is a terminal.
    int descriptor() const { return fd_; }
    bool is_stdout() const { return stdout_; }  // written through descriptor 1
    // Writes what is buffered now, held or not: for output that is read as it comes (JSON
    // Lines), at the price of the all-or-nothing rule on standard output.
    void drain() { buffer_.drain(); }
    // Writes what is still buffered and closes the output.
    void finish();
    // Renames the temporary over the file; nothing to do for an output written directly.
    void publish();

private:
    std::optional<std::string> path_;    // as given; none for stdout
    std::string name_;                   // the path, or "output" for stdout: for messages
    FileId id_;
    std::optional<std::string> target_;  // the file renamed over, if any
    std::string temporary_;
    std::size_t slot_;  // where the signal handler finds temporary_
    int fd_;            // ours (a duplicate, for a descriptor), until finish() closes it
    bool stdout_;
    bool published_ = false;
    FdStreambuf buffer_;
    std::ostream stream_;
};

// What one command writes: its main output (stdout, or -o FILE) and any other files (--svg),
// committed together at the end. Nothing is renamed into place before every output has been
// written and closed, so a failure on the way (a full disk, `ulimit -f`) leaves every file as
// it was and no temporary behind.
class Outputs {
public:
    explicit Outputs(const std::optional<std::string>& main_path);
    std::ostream& main() { return main_->stream(); }
    const Output& main_output() const { return *main_; }
    Output& main_output() { return *main_; }
    // Opens one more output; refuses (UsageError) a path that names the file of an output
    // already open, however it is spelled.
    std::ostream& add(const std::string& path);
    void commit();

private:
    void refuse_same_file(const Destination& destination) const;
    // The temporaries first, then the outputs written directly, the main output last.
    std::vector<Output*> commit_order() const;

    std::unique_ptr<Output> main_;
    std::vector<std::unique_ptr<Output>> others_;
};

}  // namespace attntrace
