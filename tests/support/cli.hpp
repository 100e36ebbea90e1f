// Running the built attntrace binary from tests: arguments in; exit code, stdout, stderr out.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cli {

struct Result {
    int exit_code = -1;  // 128 + N when killed by signal N
    std::string out;
    std::string err;
};

// Runs ATTNTRACE_BINARY with `args`, feeding `input` on stdin (a file holding it; /dev/null,
// which attntrace does not read, when it is empty). `env` entries are added to (or, with an
// empty value, removed from) the environment.
Result run(const std::vector<std::string>& args, const std::string& input = "",
           const std::map<std::string, std::string>& env = {});

// The same, run in `working_dir` (the docs' commands read data/… from the source tree).
Result run_in(const std::string& working_dir, const std::vector<std::string>& args,
              const std::map<std::string, std::string>& env = {});

// The same for any program: words[0] is looked up on PATH.
Result run_program(const std::vector<std::string>& words, const std::string& input = "",
                   const std::map<std::string, std::string>& env = {});

// Runs attntrace with stdout opened on `stdout_path` (such as /dev/full); `out` stays empty.
Result run_to_file(const std::vector<std::string>& args, const std::string& stdout_path);

// Runs attntrace under a file size limit of `bytes` (as after `ulimit -f`), for every file it
// writes; stdout is read back as by run().
Result run_with_file_size_limit(const std::vector<std::string>& args, std::uint64_t bytes);

// Runs attntrace with stdout and stderr opened for appending (as `>> out 2>> err` does) on
// the given files; `out` stays empty and `err` is the whole of `stderr_path` afterwards.
Result run_appending(const std::vector<std::string>& args, const std::string& stdout_path,
                     const std::string& stderr_path);

// Runs attntrace with stdout closed (as `attntrace >&-` does); `out` stays empty.
Result run_with_stdout_closed(const std::vector<std::string>& args);

// Starts attntrace, sends it `signal` after `delay_ms` milliseconds, and waits for it. The
// child starts with the signal's default action and writes no core file.
Result run_and_signal(const std::vector<std::string>& args, int delay_ms, int signal);

// Arguments for a run that keeps attntrace busy for seconds, for tests that signal it while
// it works: the streaming summary (--summary, O(n) memory, so no memory guard refuses it) of
// 20,000 generated tokens of 64 numbers on one thread, about 2.5 s on one 2024 core.
std::vector<std::string> busy_run_args();

// Runs attntrace with stdout a pipe whose reader has already gone. With `ignore_sigpipe`
// the child inherits SIG_IGN for SIGPIPE (its writes fail with EPIPE); otherwise SIGPIPE
// has its default action.
Result run_into_closed_pipe(const std::vector<std::string>& args, bool ignore_sigpipe);

// Runs attntrace with stdout and stderr on a pseudo-terminal (as in an interactive shell),
// `columns` wide; returns what the terminal received, in `out`. `env` as for run().
Result run_in_terminal(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {},
                       unsigned short columns = 200);

// The same, sending `signal` to attntrace once `seen` has appeared in what it wrote (as a
// user presses Ctrl-C, for SIGINT, while a progress bar shows); `out` holds everything the
// terminal received, before and after. Gives up (and kills attntrace) after `timeout_ms`.
Result run_in_terminal_until(const std::vector<std::string>& args, const std::string& seen, int signal,
                             int timeout_ms = 20000);

// The same with standard input on the terminal too, and someone typing: each time `prompt`
// appears once more in what attntrace writes, the next of `typed` is typed, followed by Enter
// ("\x04" alone is Ctrl-D, the end of input, typed without Enter). `out` holds the whole
// screen: attntrace's output with the typed lines echoed by the terminal where they were typed.
// Gives up (and kills attntrace) after `timeout_ms` without output.
Result run_typing_in_terminal(const std::vector<std::string>& args, const std::string& prompt,
                              const std::vector<std::string>& typed,
                              const std::map<std::string, std::string>& env = {}, int timeout_ms = 20000);

// A file in a fresh temporary folder, removed with the object.
class TempFile {
public:
    explicit TempFile(const std::string& contents, const std::string& name = "input.json");
    ~TempFile();
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;
    const std::string& path() const { return path_; }

private:
    std::string dir_;
    std::string path_;
};

// A fresh temporary folder, removed with the object.
class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::string& path() const { return path_; }
    std::string operator/(const std::string& name) const { return path_ + "/" + name; }
    std::vector<std::string> names() const;  // what the folder holds, sorted

private:
    std::string path_;
};

std::string read_file(const std::string& path);  // the whole file, "" when there is none
std::string data_file(const std::string& name);  // path of data/NAME in the source tree

// The whole of a file.
std::string slurp(const std::string& path);

// argv and envp for exec, owning their strings: `words` (the program, then its arguments)
// and this process's environment with `env` applied (an empty value removes a variable).
struct Command {
    std::vector<std::string> argv_storage, env_storage;
    std::vector<char*> argv, envp;

    Command(std::vector<std::string> words, const std::map<std::string, std::string>& env);
};

}  // namespace cli
