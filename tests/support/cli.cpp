#include "support/cli.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <csignal>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <spawn.h>
#include <stdexcept>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace cli {
namespace {

std::string make_temp_dir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "attntrace-test-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    return pattern;
}


// Lowers this process's soft limit on `resource` to `value` while it lives, so that a child
// spawned meanwhile inherits it.
class ScopedLimit {
public:
    ScopedLimit(int resource, rlim_t value) : resource_(resource) {
        ::getrlimit(resource_, &old_);
        struct rlimit lower = old_;
        lower.rlim_cur = std::min(value, old_.rlim_max);
        ::setrlimit(resource_, &lower);
    }
    ~ScopedLimit() { ::setrlimit(resource_, &old_); }
    ScopedLimit(const ScopedLimit&) = delete;
    ScopedLimit& operator=(const ScopedLimit&) = delete;

private:
    int resource_;
    struct rlimit old_ {};
};

int wait_for(pid_t pid) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::vector<std::string> with_binary(const std::vector<std::string>& args) {
    std::vector<std::string> words{ATTNTRACE_BINARY};
    words.insert(words.end(), args.begin(), args.end());
    return words;
}

}  // namespace

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

Command::Command(std::vector<std::string> words, const std::map<std::string, std::string>& env)
    : argv_storage(std::move(words)) {
    for (auto& a : argv_storage) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (char** e = environ; *e; ++e) {
        const std::string entry(*e);
        if (!env.contains(entry.substr(0, entry.find('=')))) env_storage.push_back(entry);
    }
    for (const auto& [name, value] : env)
        if (!value.empty()) env_storage.push_back(name + "=" + value);
    for (auto& e : env_storage) envp.push_back(e.data());
    envp.push_back(nullptr);
}

namespace {

// Spawns `words` (a program, found on PATH, and its arguments) with stdin, stdout and stderr
// opened on the given files, stdout and stderr with `flags`; an empty `out_path` leaves stdout
// closed.
Result spawn_words(const std::vector<std::string>& words, const std::map<std::string, std::string>& env,
                   const std::string& in_path, const std::string& out_path, const std::string& err_path,
                   int flags = O_WRONLY | O_CREAT | O_TRUNC, const std::string& working_dir = "") {
    Command command(words, env);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (!working_dir.empty()) posix_spawn_file_actions_addchdir_np(&actions, working_dir.c_str());
    posix_spawn_file_actions_addopen(&actions, 0, in_path.c_str(), O_RDONLY, 0);
    if (out_path.empty()) posix_spawn_file_actions_addclose(&actions, 1);
    else posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), flags, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), flags, 0644);
    pid_t pid = 0;
    const int spawned = posix_spawnp(&pid, command.argv[0], &actions, nullptr, command.argv.data(), command.envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0) throw std::runtime_error(std::string("posix_spawn ") + words.at(0) + ": " + std::strerror(spawned));
    Result result;
    result.exit_code = wait_for(pid);
    result.err = slurp(err_path);
    return result;
}

Result spawn(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
             const std::string& in_path, const std::string& out_path, const std::string& err_path,
             int flags = O_WRONLY | O_CREAT | O_TRUNC, const std::string& working_dir = "") {
    return spawn_words(with_binary(args), env, in_path, out_path, err_path, flags, working_dir);
}

}  // namespace

Result run_in(const std::string& working_dir, const std::vector<std::string>& args,
              const std::map<std::string, std::string>& env) {
    const std::string dir = make_temp_dir();
    const std::string out_path = dir + "/stdout";
    Result result = spawn(args, env, "/dev/null", out_path, dir + "/stderr", O_WRONLY | O_CREAT | O_TRUNC, working_dir);
    result.out = slurp(out_path);
    std::filesystem::remove_all(dir);
    return result;
}

Result run_program(const std::vector<std::string>& words, const std::string& input,
                   const std::map<std::string, std::string>& env) {
    const std::string dir = make_temp_dir();
    // Nothing to feed: stdin is /dev/null, which attntrace does not read (as from a terminal).
    std::string in_path = "/dev/null";
    if (!input.empty()) {
        in_path = dir + "/stdin";
        std::ofstream(in_path, std::ios::binary) << input;
    }
    const std::string out_path = dir + "/stdout";
    Result result = spawn_words(words, env, in_path, out_path, dir + "/stderr");
    result.out = slurp(out_path);
    std::filesystem::remove_all(dir);
    return result;
}

Result run(const std::vector<std::string>& args, const std::string& input,
           const std::map<std::string, std::string>& env) {
    return run_program(with_binary(args), input, env);
}

Result run_and_signal(const std::vector<std::string>& args, int delay_ms, int signal) {
    Command command(with_binary(args), {});
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);  // nothing piped in: not read
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, signal);
    posix_spawnattr_setsigdefault(&attributes, &signals);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF);
    const ScopedLimit no_core(RLIMIT_CORE, 0);
    pid_t pid = 0;
    const int spawned =
        posix_spawn(&pid, command.argv[0], &actions, &attributes, command.argv.data(), command.envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (spawned != 0) throw std::runtime_error(std::string("posix_spawn: ") + std::strerror(spawned));
    ::usleep(static_cast<useconds_t>(delay_ms) * 1000);
    ::kill(pid, signal);
    Result result;
    result.exit_code = wait_for(pid);
    return result;
}

std::vector<std::string> busy_run_args() {
    static const TempFile input(run({"generate", "--tokens", "20000", "--dim", "64"}).out, "busy.json");
    return {input.path(), "--summary", "--threads", "1"};
}

Result run_to_file(const std::vector<std::string>& args, const std::string& stdout_path) {
    const std::string dir = make_temp_dir();
    Result result = spawn(args, {}, "/dev/null", stdout_path, dir + "/stderr");
    std::filesystem::remove_all(dir);
    return result;
}

Result run_with_file_size_limit(const std::vector<std::string>& args, std::uint64_t bytes) {
    const std::string dir = make_temp_dir();
    Result result;
    {
        const ScopedLimit limit(RLIMIT_FSIZE, bytes);  // inherited by the child
        result = spawn(args, {}, "/dev/null", dir + "/stdout", dir + "/stderr");
    }
    result.out = slurp(dir + "/stdout");
    std::filesystem::remove_all(dir);
    return result;
}

Result run_appending(const std::vector<std::string>& args, const std::string& stdout_path,
                     const std::string& stderr_path) {
    return spawn(args, {}, "/dev/null", stdout_path, stderr_path, O_WRONLY | O_CREAT | O_APPEND);
}

Result run_with_stdout_closed(const std::vector<std::string>& args) {
    const std::string dir = make_temp_dir();
    Result result = spawn(args, {}, "/dev/null", "", dir + "/stderr");
    std::filesystem::remove_all(dir);
    return result;
}

Result run_into_closed_pipe(const std::vector<std::string>& args, bool ignore_sigpipe) {
    const std::string dir = make_temp_dir();
    const std::string err_path = dir + "/stderr";
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    ::close(fds[0]);  // the reader is gone before the writer starts

    Command command(with_binary(args), {});

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);  // nothing piped in: not read
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGPIPE);
    struct sigaction old_action {};
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    if (ignore_sigpipe) {
        ::sigaction(SIGPIPE, &ignore, &old_action);  // inherited through exec
    } else {
        posix_spawnattr_setsigdefault(&attributes, &signals);
        posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF);
    }
    pid_t pid = 0;
    const int spawned = posix_spawn(&pid, command.argv[0], &actions, &attributes, command.argv.data(),
                                    command.envp.data());
    if (ignore_sigpipe) ::sigaction(SIGPIPE, &old_action, nullptr);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    ::close(fds[1]);
    if (spawned != 0) throw std::runtime_error(std::string("posix_spawn: ") + std::strerror(spawned));
    Result result;
    result.exit_code = wait_for(pid);
    result.err = slurp(err_path);
    std::filesystem::remove_all(dir);
    return result;
}

// Opens a pseudo-terminal `columns` wide and 50 rows high and spawns attntrace with `args` on it: its
// output and errors go to the terminal, and its input too when `reads_terminal` (else
// /dev/null). Returns the controlling side, which the caller reads and closes, and the child.
namespace {

std::pair<int, pid_t> spawn_on_terminal(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                                        bool reads_terminal, unsigned short columns = 200) {
    const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
    if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0)
        throw std::runtime_error("no pseudo-terminal");
    const int terminal = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
    struct winsize size {};
    size.ws_col = columns;
    size.ws_row = 50;
    ::ioctl(terminal, TIOCSWINSZ, &size);
    Command command(with_binary(args), env);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (reads_terminal) posix_spawn_file_actions_adddup2(&actions, terminal, 0);
    else posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, terminal, 1);
    posix_spawn_file_actions_adddup2(&actions, terminal, 2);
    pid_t pid = 0;
    const int spawned = posix_spawn(&pid, command.argv[0], &actions, nullptr, command.argv.data(), command.envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(terminal);
    if (spawned != 0) throw std::runtime_error(std::string("posix_spawn: ") + std::strerror(spawned));
    return {master, pid};
}

}  // namespace

Result run_in_terminal(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                       unsigned short columns) {
    const auto [master, pid] = spawn_on_terminal(args, env, false, columns);
    Result result;
    char buffer[4096];
    for (ssize_t n; (n = ::read(master, buffer, sizeof buffer)) > 0;) result.out.append(buffer, static_cast<std::size_t>(n));
    ::close(master);
    result.exit_code = wait_for(pid);
    return result;
}

Result run_in_terminal_until(const std::vector<std::string>& args, const std::string& seen, int signal,
                             int timeout_ms) {
    const auto [master, pid] = spawn_on_terminal(args, {}, false);
    Result result;
    bool sent = false;
    char buffer[4096];
    while (true) {
        struct pollfd ready {master, POLLIN, 0};
        if (::poll(&ready, 1, timeout_ms) <= 0) {
            ::kill(pid, SIGKILL);
            break;
        }
        const ssize_t n = ::read(master, buffer, sizeof buffer);
        if (n <= 0) break;  // EIO: attntrace has ended
        result.out.append(buffer, static_cast<std::size_t>(n));
        if (!sent && result.out.find(seen) != std::string::npos) {
            ::kill(pid, signal);
            sent = true;
        }
    }
    ::close(master);
    result.exit_code = wait_for(pid);
    return result;
}

Result run_typing_in_terminal(const std::vector<std::string>& args, const std::string& prompt,
                              const std::vector<std::string>& typed, const std::map<std::string, std::string>& env,
                              int timeout_ms) {
    const auto [master, pid] = spawn_on_terminal(args, env, true);
    Result result;
    std::size_t sent = 0, seen = 0, searched = 0;
    char buffer[4096];
    while (true) {
        struct pollfd ready {master, POLLIN, 0};
        if (::poll(&ready, 1, timeout_ms) <= 0) {  // silent too long: stuck waiting for input
            ::kill(pid, SIGKILL);
            break;
        }
        const ssize_t n = ::read(master, buffer, sizeof buffer);
        if (n <= 0) break;  // EIO: every copy of the terminal is closed, attntrace has ended
        result.out.append(buffer, static_cast<std::size_t>(n));
        for (std::size_t at; (at = result.out.find(prompt, searched)) != std::string::npos;) {
            searched = at + prompt.size();
            ++seen;
        }
        while (sent < seen && sent < typed.size()) {
            const std::string keys = typed[sent] == "\x04" ? typed[sent] : typed[sent] + "\n";
            if (::write(master, keys.data(), keys.size()) != static_cast<ssize_t>(keys.size()))
                throw std::runtime_error("cannot type on the pseudo-terminal");
            ++sent;
        }
    }
    ::close(master);
    result.exit_code = wait_for(pid);
    return result;
}

TempFile::TempFile(const std::string& contents, const std::string& name)
    : dir_(make_temp_dir()), path_(dir_ + "/" + name) {
    std::ofstream(path_, std::ios::binary) << contents;
}

TempFile::~TempFile() { std::filesystem::remove_all(dir_); }

TempDir::TempDir() : path_(make_temp_dir()) {}

TempDir::~TempDir() { std::filesystem::remove_all(path_); }

std::vector<std::string> TempDir::names() const {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(path_)) names.push_back(entry.path().filename());
    std::sort(names.begin(), names.end());
    return names;
}

std::string read_file(const std::string& path) { return slurp(path); }

std::string data_file(const std::string& name) {
    return std::string(ATTNTRACE_SOURCE_DIR) + "/data/" + name;
}

}  // namespace cli
