// Where output goes: standard output, or a file written all or nothing. Commands compute
// everything first and write last, so a data error never leaves output behind; writing
// streams through a buffer, so a large result is never held twice.
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <streambuf>
#include <string>

namespace attntrace {

// The reader of a pipe went away (EPIPE with SIGPIPE ignored): not an error of ours, so the
// program ends quietly, like one killed by SIGPIPE.
struct BrokenPipe {};
inline constexpr int exit_broken_pipe = 141;  // 128 + SIGPIPE, what a shell shows either way

// An ostream onto a file descriptor. A failed write throws BrokenPipe (EPIPE) or
// DataError("cannot write NAME: …") out of the stream operation that hit it.
class FdStreambuf : public std::streambuf {
public:
    FdStreambuf(int fd, std::string name);
    ~FdStreambuf() override;

protected:
    int_type overflow(int_type c) override;
    std::streamsize xsputn(const char* data, std::streamsize size) override;
    int sync() override;

private:
    void drain();
    int fd_;
    std::string name_;
    std::unique_ptr<char[]> buffer_;
};

class Output {
public:
    // No path: standard output. A path: a temporary file beside it, renamed over it by
    // commit(); without commit() (an error on the way) the temporary is removed and the path
    // is left as it was.
    explicit Output(const std::optional<std::string>& path);
    ~Output();
    Output(const Output&) = delete;
    Output& operator=(const Output&) = delete;

    std::ostream& stream() { return stream_; }
    void commit();

private:
    std::optional<std::string> path_;
    std::string temporary_;
    int fd_ = 1;
    FdStreambuf buffer_;
    std::ostream stream_;
    bool committed_ = false;
};

}  // namespace attntrace
