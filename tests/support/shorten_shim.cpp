// An LD_PRELOAD shim for the tests of files shortened while attntrace reads them: it passes
// every fstat() through, counts those that describe one file, and right after the Nth of them
// returns, truncates that file, as another program might do at that moment. attntrace
// checks a mapped file's size with fstat() (before mapping it, and each time it makes sure
// the file is still whole), so "after the Nth fstat" walks through every moment between two
// checks, deterministically.
//
//   ATTNTRACE_SHORTEN_FILE  the file (an absolute path)
//   ATTNTRACE_SHORTEN_AT    N, from 1
//   ATTNTRACE_SHORTEN_TO    its new size in bytes
//   ATTNTRACE_SHORTEN_LOG   a file to which "shortened" is written when it happened

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace {

int (*real_fstat)(int, struct stat*);
int (*real_fstat64)(int, struct stat64*);
int calls;
bool done;

void after(dev_t dev, ino_t ino) {
    const char* path = getenv("ATTNTRACE_SHORTEN_FILE");
    const char* at = getenv("ATTNTRACE_SHORTEN_AT");
    const char* to = getenv("ATTNTRACE_SHORTEN_TO");
    if (done || !path || !at || !to) return;
    struct stat target;
    if (stat(path, &target) != 0 || target.st_dev != dev || target.st_ino != ino) return;
    if (++calls != std::atoi(at)) return;
    done = true;
    if (truncate(path, static_cast<off_t>(std::strtoll(to, nullptr, 10))) != 0) return;
    if (const char* log = getenv("ATTNTRACE_SHORTEN_LOG"))
        if (FILE* f = std::fopen(log, "w")) {
            std::fputs("shortened\n", f);
            std::fclose(f);
        }
}

}  // namespace

extern "C" int fstat(int fd, struct stat* info) noexcept {
    if (!real_fstat) real_fstat = reinterpret_cast<int (*)(int, struct stat*)>(dlsym(RTLD_NEXT, "fstat"));
    const int result = real_fstat(fd, info);
    if (result == 0) after(info->st_dev, info->st_ino);
    return result;
}

extern "C" int fstat64(int fd, struct stat64* info) noexcept {
    if (!real_fstat64) real_fstat64 = reinterpret_cast<int (*)(int, struct stat64*)>(dlsym(RTLD_NEXT, "fstat64"));
    const int result = real_fstat64(fd, info);
    if (result == 0) after(info->st_dev, info->st_ino);
    return result;
}
