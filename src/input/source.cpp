#include "input/source.hpp"

#include "error.hpp"
#include "input/examples.hpp"
#include "input/json_text.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sys/mman.h>
#include <sys/stat.h>

namespace attntrace {
namespace {

DataError too_large(const std::string& origin, std::uint64_t max_bytes) {
    return DataError(fmt::format("{}: input larger than {} bytes, the limit set by --max-input", origin, max_bytes));
}

// Standard input (or a pipe, a FIFO): read in chunks until the end.
std::string read_stream(std::FILE* file, const std::string& origin, std::uint64_t max_bytes) {
    std::string text;
    char buffer[1 << 16];
    while (true) {
        const std::size_t n = std::fread(buffer, 1, sizeof buffer, file);
        if (text.size() + n > max_bytes) throw too_large(origin, max_bytes);
        text.append(buffer, n);
        if (n < sizeof buffer) break;
    }
    if (std::ferror(file)) throw DataError(fmt::format("cannot read {}: {}", origin, std::strerror(errno)));
    return text;
}

InputText from_string(std::string text, std::string origin) {
    auto owned = std::make_shared<const std::string>(std::move(text));
    return {*owned, std::move(origin), owned};
}

// A regular file is mapped, not copied: the parser reads the page cache directly.
class Mapping {
public:
    Mapping(void* address, std::size_t size) : address_(address), size_(size) {}
    ~Mapping() { ::munmap(address_, size_); }
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    std::string_view text() const { return {static_cast<const char*>(address_), size_}; }

private:
    void* address_;
    std::size_t size_;
};

}  // namespace

InputText read_input(const std::string& path, std::uint64_t max_bytes) {
    if (path == "-") return from_string(read_stream(stdin, "<stdin>", max_bytes), "<stdin>");
    if (path.starts_with("example:")) return example_input(std::string_view(path).substr(8));
    // The path appears in messages and in JSON output: make it printable, valid UTF-8.
    const std::string origin = printable(path, 4096);
    const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                               &std::fclose);
    if (!file) throw DataError(fmt::format("cannot read {}: {}", origin, std::strerror(errno)));
    struct stat info {};
    if (::fstat(::fileno(file.get()), &info) != 0)
        throw DataError(fmt::format("cannot read {}: {}", origin, std::strerror(errno)));
    if (S_ISDIR(info.st_mode)) throw DataError(fmt::format("cannot read {}: it is a directory", origin));
    if (!S_ISREG(info.st_mode) || info.st_size == 0)
        return from_string(read_stream(file.get(), origin, max_bytes), origin);
    const auto size = static_cast<std::size_t>(info.st_size);
    if (size > max_bytes) throw too_large(origin, max_bytes);
    // MAP_POPULATE maps every page at once: far cheaper than a fault per page as it is read.
    void* address = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, ::fileno(file.get()), 0);
    if (address == MAP_FAILED) return from_string(read_stream(file.get(), origin, max_bytes), origin);
    auto mapping = std::make_shared<const Mapping>(address, size);
    return {mapping->text(), origin, mapping};
}

InputText example_input(std::string_view name) {
    if (const Example* example = find_example(name)) return {example->json, fmt::format("example:{}", name), nullptr};
    std::string names;
    for (const auto& example : examples()) names += (names.empty() ? "" : ", ") + std::string(example.name);
    throw UsageError(fmt::format("no example named \"{}\" (examples: {})", name, names));
}

}  // namespace attntrace
