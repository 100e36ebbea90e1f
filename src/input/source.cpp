#include "input/source.hpp"

#include "error.hpp"
#include "input/examples.hpp"
#include "input/json_text.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sys/stat.h>

namespace attntrace {
namespace {

std::string read_all(std::FILE* file, const std::string& origin) {
    const auto too_large = [&] {
        return DataError(fmt::format("{}: input larger than {} MiB, the limit for one input", origin,
                                     max_input_bytes >> 20));
    };
    std::string text;
    // A regular file's size is known: one allocation and one read instead of doubling.
    struct stat info {};
    if (::fstat(::fileno(file), &info) == 0 && S_ISREG(info.st_mode) && info.st_size > 0) {
        if (static_cast<std::size_t>(info.st_size) > max_input_bytes) throw too_large();
        text.resize(static_cast<std::size_t>(info.st_size));
        text.resize(std::fread(text.data(), 1, text.size(), file));
        if (std::ferror(file))
            throw DataError(fmt::format("cannot read {}: {}", origin, std::strerror(errno)));
        const int next = std::fgetc(file);
        if (next == EOF && !std::ferror(file)) return text;
        if (next != EOF) text.push_back(static_cast<char>(next));  // it grew while we read: go on below
    }
    char buffer[1 << 16];
    while (true) {
        const std::size_t n = std::fread(buffer, 1, sizeof buffer, file);
        if (text.size() + n > max_input_bytes) throw too_large();
        text.append(buffer, n);
        if (n < sizeof buffer) break;
    }
    if (std::ferror(file))
        throw DataError(fmt::format("cannot read {}: {}", origin, std::strerror(errno)));
    return text;
}

}  // namespace

InputText read_input(const std::string& path) {
    if (path == "-") return {read_all(stdin, "<stdin>"), "<stdin>"};
    if (path.starts_with("example:")) return example_input(std::string_view(path).substr(8));
    // The path appears in messages and in JSON output: make it printable, valid UTF-8.
    const std::string origin = printable(path, 4096);
    struct stat info {};
    if (::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode))
        throw DataError(fmt::format("cannot read {}: it is a directory", origin));
    const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                               &std::fclose);
    if (!file) throw DataError(fmt::format("cannot read {}: {}", origin, std::strerror(errno)));
    return {read_all(file.get(), origin), origin};
}

InputText example_input(std::string_view name) {
    if (const Example* example = find_example(name))
        return {std::string(example->json), fmt::format("example:{}", name)};
    std::string names;
    for (const auto& example : examples()) names += (names.empty() ? "" : ", ") + std::string(example.name);
    throw UsageError(fmt::format("no example named \"{}\" (examples: {})", name, names));
}

}  // namespace attntrace
