#include "input/source.hpp"

#include "core/error.hpp"
#include "input/examples.hpp"
#include "util/suggest.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <array>
#include <atomic>
#include <csignal>
#include <cstdint>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace attntrace {
namespace {

// `limit`: what set max_bytes, as the message says it ("the limit set by --max-input").
DataError too_large(const std::string& origin, std::uint64_t max_bytes, std::string_view limit) {
    return DataError(fmt::format("{}: input larger than {} bytes, {}", origin, max_bytes, limit));
}

// Standard input (or a pipe, a FIFO): read in chunks until the end.
std::string read_stream(std::FILE* file, const std::string& origin, std::uint64_t max_bytes,
                        std::string_view limit = max_input_limit) {
    std::string text;
    char buffer[1 << 16];
    while (true) {
        const std::size_t n = std::fread(buffer, 1, sizeof buffer, file);
        if (text.size() + n > max_bytes) throw too_large(origin, max_bytes, limit);
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

// A file shortened by another process while it is mapped makes every read of the lost pages
// raise SIGBUS. The handler below maps a page of zeros over such a page of one of our
// mappings, notes that the file changed, and lets the read go on; the reader then reports
// the change as an error (InputText::require_unchanged) instead of dying. Fixed slots, so the
// handler only reads atomics and calls mmap.
struct MappedSlot {
    std::atomic<std::uintptr_t> start{0};
    std::atomic<std::size_t> size{0};
    std::atomic<bool> truncated{false};
    std::atomic<const void*> owner{nullptr};  // the Mapping, for require_intact()
};
constexpr std::size_t max_mappings = 8;
std::array<MappedSlot, max_mappings> mapped{};
std::size_t page_size = 4096;
struct sigaction previous_sigbus {};

extern "C" void zero_lost_pages(int signal, siginfo_t* info, void* context) {
    const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
    for (auto& slot : mapped) {
        const std::uintptr_t start = slot.start.load();
        if (start == 0 || address < start || address >= start + slot.size.load()) continue;
        void* page = reinterpret_cast<void*>(address & ~(page_size - 1));
        if (::mmap(page, page_size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
            slot.truncated.store(true);
            return;  // the read is repeated, and finds zeros
        }
    }
    // Not one of ours: whoever handled SIGBUS before (the default: end the program) does.
    if (previous_sigbus.sa_flags & SA_SIGINFO) {
        previous_sigbus.sa_sigaction(signal, info, context);
    } else {
        ::sigaction(SIGBUS, &previous_sigbus, nullptr);  // the fault repeats under that action
    }
}

void install_sigbus_handler() {
    static const bool installed = [] {
        page_size = static_cast<std::size_t>(::sysconf(_SC_PAGE_SIZE));
        struct sigaction action {};
        action.sa_sigaction = zero_lost_pages;
        action.sa_flags = SA_SIGINFO;
        sigemptyset(&action.sa_mask);
        return ::sigaction(SIGBUS, &action, &previous_sigbus) == 0;
    }();
    (void)installed;
}

}  // namespace

// A regular file is mapped, not copied: the parser reads the page cache directly.
class detail::Mapping {
public:
    Mapping(void* address, std::size_t size, int fd) : address_(address), size_(size), fd_(::dup(fd)) {
        install_sigbus_handler();
        for (std::size_t i = 0; i < max_mappings; ++i) {
            std::uintptr_t free = 0;
            if (mapped[i].start.compare_exchange_strong(free, reinterpret_cast<std::uintptr_t>(address))) {
                mapped[i].size.store(size);
                mapped[i].truncated.store(false);
                mapped[i].owner.store(this);
                slot_ = i;
                break;
            }
        }
    }
    ~Mapping() {
        if (slot_ < max_mappings) {
            mapped[slot_].owner.store(nullptr);
            mapped[slot_].start.store(0);
        }
        ::munmap(address_, size_);
        if (fd_ >= 0) ::close(fd_);
    }
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    std::string_view text() const { return {static_cast<const char*>(address_), size_}; }
    bool guarded() const { return slot_ < max_mappings && fd_ >= 0; }
    // A lost page was read (SIGBUS), or the file is shorter now than when it was mapped (the
    // reading may have stopped at the zeros past its new end before reaching a lost page).
    bool truncated() const {
        struct stat now {};
        return (guarded() && mapped[slot_].truncated.load()) ||
               (fd_ >= 0 && ::fstat(fd_, &now) == 0 && static_cast<std::size_t>(now.st_size) < size_);
    }

private:
    void* address_;
    std::size_t size_;
    int fd_;  // the file stays open, to see whether it shrank
    std::size_t slot_ = max_mappings;
};

namespace {

DataError shortened(std::string_view origin) {
    return DataError(fmt::format("{}: the file was shortened by another program while it was read; "
                                 "read it again once it is complete",
                                 origin));
}

}  // namespace

void InputText::require_unchanged() const {
    if (mapping && mapping->truncated()) throw shortened(origin);
}

void require_intact(const std::shared_ptr<const void>& storage, std::string_view origin) {
    if (!storage) return;
    for (const auto& slot : mapped)
        if (slot.owner.load() == storage.get()) {
            if (static_cast<const detail::Mapping*>(storage.get())->truncated()) throw shortened(origin);
            return;
        }
}

InputText read_input(const std::string& path, std::uint64_t max_bytes, std::string_view limit) {
    if (path == "-") return from_string(read_stream(stdin, "<stdin>", max_bytes, limit), "<stdin>");
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
        return from_string(read_stream(file.get(), origin, max_bytes, limit), origin);
    const auto size = static_cast<std::size_t>(info.st_size);
    if (size > max_bytes) throw too_large(origin, max_bytes, limit);
    // MAP_POPULATE maps every page at once: far cheaper than a fault per page as it is read.
    void* address = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, ::fileno(file.get()), 0);
    if (address == MAP_FAILED) return from_string(read_stream(file.get(), origin, max_bytes, limit), origin);
    auto mapping = std::make_shared<const detail::Mapping>(address, size, ::fileno(file.get()));
    if (!mapping->guarded()) return from_string(std::string(mapping->text()), origin);  // no slot: a copy is safe
    return {mapping->text(), origin, mapping, mapping.get()};
}

std::optional<InputText> piped_input(std::uint64_t max_bytes, bool* empty) {
    struct stat info {};
    if (::fstat(STDIN_FILENO, &info) != 0 || !(S_ISFIFO(info.st_mode) || S_ISREG(info.st_mode))) return std::nullopt;
    InputText input = read_input("-", max_bytes);
    const bool blank = input.text.find_first_not_of(" \t\r\n") == std::string_view::npos;
    if (empty) *empty = blank;
    if (blank) return std::nullopt;
    return input;
}

InputText example_input(std::string_view name) {
    if (const Example* example = find_example(name)) return {example->json, fmt::format("example:{}", name), nullptr};
    std::vector<std::string> names;
    for (const auto& example : examples()) names.emplace_back(example.name);
    const auto near = likely_typo(name, names);
    throw UsageError(fmt::format("no example named \"{}\"{} (examples: {})", printable(name),
                                 near ? fmt::format(" (did you mean {}?)", *near) : "", fmt::join(names, ", ")));
}

InputText named_piped_or_example(const std::optional<std::string>& path, const std::optional<std::string>& example,
                                 std::uint64_t max_bytes, bool* empty_pipe) {
    if (path) return read_input(*path, max_bytes);
    if (example) return example_input(*example);
    if (auto piped = piped_input(max_bytes, empty_pipe)) return std::move(*piped);
    return example_input(default_example);
}

std::string empty_pipe_note(std::string_view verb) {
    return fmt::format("standard input is empty, so this is the built-in example {} (name an INPUT, or pipe one in, "
                       "to {} your own)",
                       default_example, verb);
}

}  // namespace attntrace
