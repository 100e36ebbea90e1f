#include "support/limited.hpp"

#include <fcntl.h>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

namespace limited {

Result run(const std::vector<std::string>& args, const Limits& limits, const std::map<std::string, std::string>& env) {
    std::string dir = (std::filesystem::temp_directory_path() / "attntrace-limited-XXXXXX").string();
    if (!::mkdtemp(dir.data())) throw std::runtime_error("mkdtemp failed");
    const std::string out_path = dir + "/stdout", err_path = dir + "/stderr", result_path = dir + "/result";
    // Everything the child needs is made before fork: it only opens and execs the launcher.
    std::vector<std::string> words{ATTNTRACE_MEASURE, result_path, std::to_string(limits.address_space.value_or(0)),
                                   std::to_string(limits.stack_soft.value_or(0)),
                                   std::to_string(limits.stack_hard.value_or(0)), ATTNTRACE_BINARY};
    words.insert(words.end(), args.begin(), args.end());
    cli::Command command(std::move(words), env);

    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
        const int in = ::open("/dev/null", O_RDONLY);
        const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (in < 0 || out < 0 || err < 0) ::_exit(125);
        ::dup2(in, 0);
        ::dup2(out, 1);
        ::dup2(err, 2);
        ::execve(command.argv[0], command.argv.data(), command.envp.data());
        ::_exit(127);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error("the launcher failed");
    Result result;
    std::istringstream(cli::slurp(result_path)) >> result.exit_code >> result.peak_kib;
    result.out = cli::slurp(out_path);
    result.err = cli::slurp(err_path);
    std::filesystem::remove_all(dir);
    return result;
}

}  // namespace limited
