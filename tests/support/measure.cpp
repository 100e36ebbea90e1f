// attntrace_measure RESULT_FILE AS_BYTES STACK_SOFT STACK_HARD PROGRAM [ARGS…]
// Runs PROGRAM under the given resource limits (0: leave as it is) and writes "EXIT PEAK_KIB"
// to RESULT_FILE. A process's peak resident memory includes what it had before exec, so the
// tests measure attntrace through this small launcher rather than from their own large process.
#include <cstdio>
#include <cstdlib>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

void limit(int resource, unsigned long soft, unsigned long hard) {
    rlimit r{};
    getrlimit(resource, &r);
    if (hard) r.rlim_max = hard;
    if (soft) r.rlim_cur = soft;
    if (r.rlim_cur > r.rlim_max) r.rlim_cur = r.rlim_max;
    setrlimit(resource, &r);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 6) return 125;
    const unsigned long address_space = std::strtoul(argv[2], nullptr, 10);
    const unsigned long stack_soft = std::strtoul(argv[3], nullptr, 10);
    const unsigned long stack_hard = std::strtoul(argv[4], nullptr, 10);
    const pid_t pid = fork();
    if (pid < 0) return 125;
    if (pid == 0) {
        if (address_space) limit(RLIMIT_AS, address_space, 0);
        if (stack_soft || stack_hard) limit(RLIMIT_STACK, stack_soft, stack_hard);
        execv(argv[5], argv + 5);
        _exit(127);
    }
    int status = 0;
    rusage usage{};
    while (wait4(pid, &status, 0, &usage) < 0) {
    }
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    FILE* result = std::fopen(argv[1], "w");
    if (!result) return 125;
    std::fprintf(result, "%d %ld\n", code, usage.ru_maxrss);
    std::fclose(result);
    return 0;
}
