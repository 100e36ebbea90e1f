// simdjson_read: one timed read of an attntrace JSON input with simdjson's On-Demand API
// (Debian 12's libsimdjson-dev 3.0.1), walked into the shapes attntrace's Problem holds:
// the description and mode as strings, the tokens as std::string, the embeddings and the
// three weights as row-major Eigen matrices of doubles (core/matrix.hpp's Matrix), each
// allocated once at its final size. A measurement for docs/performance.md ("Reading JSON: our
// parser and simdjson On-Demand"), compared with read_time.cpp; not part of the CMake build
// or of ctest. It needs only the headers, not attntrace's library:
//
//   F="-O3 -DNDEBUG -std=c++20 -DEIGEN_DONT_PARALLELIZE"
//   nice -n 19 g++ $F -isystem /usr/include/eigen3 tests/perf/simdjson_read.cpp -lsimdjson -o /tmp/simdjson_read
//
// Add -march=haswell for the AVX2 walk (x86-64-v3 lacks the PCLMUL simdjson asks for): the
// On-Demand walk is compiled into this program for the ISA its flags name, "fallback" without
// any; only the structural index (stage 1) is chosen by the library at run time. The line
// it prints names both.
//
//   /tmp/simdjson_read INPUT.json          one run: one line of key=value
//   /tmp/simdjson_read INPUT.json --mmap   the file mapped, as attntrace's read_input maps it,
//                                          used in place when its last page leaves simdjson's
//                                          64 bytes of padding (else copied, as without it)
//   /tmp/simdjson_read INPUT.json --grow   each matrix's rows gathered in a growing vector and
//                                          copied once, instead of counted first (either flag order)
//   /tmp/simdjson_read INPUT.json --nlohmann   nlohmann::json::parse of the same text instead
//
// It reads the fields of `attntrace generate`'s output (description, mode, tokens,
// embeddings as an array of rows, weights with query, key and value) and refuses any other
// key, a repeated key, a ragged row, a token that is empty or holds a control character, and
// shapes that do not fit (tokens against rows, weights' rows against the embeddings' width):
// the checks attntrace's read_document makes on such a document, not all it knows how to read.
// Times: wall (steady_clock) and CPU (getrusage RUSAGE_SELF, user + system), per phase.
#include <Eigen/Core>
#include <nlohmann/json.hpp>
#include <simdjson.h>

#include "read_timing.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
namespace od = simdjson::ondemand;
#define SIMDJSON_READ_NAME(x) #x
#define SIMDJSON_READ_NAME_OF(x) SIMDJSON_READ_NAME(x)
// The ISA On-Demand's walk was compiled for here (simdjson.h: "ondemand is only compiled as
// part of the builtin implementation"); builtin_implementation() would name the library's.
constexpr const char* walk_isa = SIMDJSON_READ_NAME_OF(SIMDJSON_BUILTIN_IMPLEMENTATION);

using perf::Clock;
using perf::print;
using perf::hash_bits;

struct Input {
    std::string description, mode;
    std::vector<std::string> tokens;
    Matrix embeddings, query, key, value;
};

[[noreturn]] void refuse(const std::string& what) { throw std::runtime_error(what); }

bool count_first = true;  // false with --grow

// An array of rows of numbers, all of one length, into one matrix allocated at its size: the
// rows counted first (count_elements, a pass over the array's structural index), or with
// --grow gathered in a vector that grows and copied into the matrix at the end.
Matrix read_matrix(od::value v, const char* name) {
    od::array rows = v.get_array();
    const std::size_t count = count_first ? std::size_t{rows.count_elements()} : 0;  // rewinds the array (simdjson.h)
    Matrix m;
    std::vector<double> grown;
    std::size_t r = 0, width = 0;
    for (auto row_result : rows) {
        od::array row = row_result.get_array();
        if (r == 0) {
            width = row.count_elements();
            if (width == 0) refuse(std::string(name) + ": an empty row");
            if (count_first) m.resize(static_cast<Eigen::Index>(count), static_cast<Eigen::Index>(width));
        }
        if (!count_first) grown.resize((r + 1) * width);
        double* out = (count_first ? m.data() : grown.data()) + r * width;
        std::size_t c = 0;
        for (auto x : row) {
            if (c == width) refuse(std::string(name) + ": a row longer than the first");
            out[c++] = x.get_double();
        }
        if (c != width) refuse(std::string(name) + ": a row shorter than the first");
        ++r;
    }
    if (!count_first) m = Eigen::Map<const Matrix>(grown.data(), static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(width));
    return m;
}

std::vector<std::string> read_tokens(od::value v) {
    std::vector<std::string> tokens;
    for (auto item : v.get_array()) {
        const std::string_view t = item.get_string();
        if (t.find_first_not_of(" \t\r\n") == std::string_view::npos) refuse("/tokens: an empty token");
        for (const char ch : t)
            if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7F) refuse("/tokens: a control character");
        tokens.emplace_back(t);
    }
    return tokens;
}

Input walk(od::document& doc) {
    Input in;
    unsigned seen = 0;
    const auto once = [&seen](unsigned bit, std::string_view key) {
        if (seen & bit) refuse("duplicate key " + std::string(key));
        seen |= bit;
    };
    for (auto field : doc.get_object()) {
        const std::string_view key = field.unescaped_key();
        if (key == "description") once(1, key), in.description = std::string(std::string_view(field.value().get_string()));
        else if (key == "mode") once(2, key), in.mode = std::string(std::string_view(field.value().get_string()));
        else if (key == "tokens") once(4, key), in.tokens = read_tokens(field.value());
        else if (key == "embeddings") once(8, key), in.embeddings = read_matrix(field.value(), "/embeddings");
        else if (key == "weights") {
            once(16, key);
            unsigned inner = 0;
            for (auto w : field.value().get_object()) {
                const std::string_view name = w.unescaped_key();
                const unsigned bit = name == "query" ? 1 : name == "key" ? 2 : name == "value" ? 4 : 0;
                if (bit == 0) refuse("/weights: unknown key " + std::string(name));
                if (inner & bit) refuse("/weights: duplicate key " + std::string(name));
                inner |= bit;
                (bit == 1 ? in.query : bit == 2 ? in.key : in.value) = read_matrix(w.value(), "/weights");
            }
            if (inner != 7) refuse("/weights: needs query, key and value");
        } else {
            refuse("unknown key " + std::string(key));
        }
    }
    // 3.0.1's document has no at_end(): past the last token, current_location() is out of bounds.
    if (doc.current_location().error() != simdjson::OUT_OF_BOUNDS) refuse("text after the end of the JSON document");
    if ((seen & 12) != 12) refuse("needs tokens and embeddings");
    if (static_cast<Eigen::Index>(in.tokens.size()) != in.embeddings.rows()) refuse("tokens and rows differ");
    for (const Matrix* w : {&in.query, &in.key, &in.value})
        if (w->rows() != in.embeddings.cols()) refuse("a weight's rows differ from the embeddings' width");
    return in;
}


void summary(const Input& in) {
    const std::uint64_t h =
        hash_bits(in.value, hash_bits(in.key, hash_bits(in.query, hash_bits(in.embeddings, 0xCBF29CE484222325ULL))));
    std::size_t chars = 0;
    for (const auto& t : in.tokens) chars += t.size();
    const double sum = in.embeddings.sum() + in.query.sum() + in.key.sum() + in.value.sum();
    std::printf(" hash=%016llx tokens=%zu token_chars=%zu rows=%ld cols=%ld sum=%.9g desc=%zu mode=%s",
                static_cast<unsigned long long>(h), in.tokens.size(), chars, static_cast<long>(in.embeddings.rows()),
                static_cast<long>(in.embeddings.cols()), sum, in.description.size(), in.mode.c_str());
}

// The input with simdjson's padding after it: read into a padded copy, or mapped and used in
// place when the mapping's last page has the padding to spare (else copied from the mapping).
struct Text {
    simdjson::padded_string copy;
    simdjson::padded_string_view view;
    bool in_place = false;
};

void open_text(const char* path, bool mapped, Text& out) {
    if (!mapped) {
        out.copy = simdjson::padded_string::load(path);  // read(2) into a padded copy
        out.view = out.copy;
        return;
    }
    const int fd = open(path, O_RDONLY);
    struct stat st {};
    if (fd < 0 || fstat(fd, &st) != 0) refuse("cannot open the input");
    const auto size = static_cast<std::size_t>(st.st_size);
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t mapped_size = (size + page - 1) / page * page;  // the last page's tail reads as zeros
    void* at = mmap(nullptr, mapped_size, PROT_READ, MAP_PRIVATE, fd, 0);  // never unmapped: the process ends
    close(fd);
    if (at == MAP_FAILED) refuse("cannot map the input");
    if (mapped_size - size >= simdjson::SIMDJSON_PADDING) {
        out.view = simdjson::padded_string_view(static_cast<const char*>(at), size, mapped_size);
        out.in_place = true;
    } else {
        out.copy = simdjson::padded_string(static_cast<const char*>(at), size);
        out.view = out.copy;
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: simdjson_read INPUT.json [--mmap] [--grow] [--nlohmann]\n");
        return 2;
    }
    bool mapped = false, nlohmann = false;
    for (int i = 2; i < argc; ++i) {
        mapped |= std::strcmp(argv[i], "--mmap") == 0;
        nlohmann |= std::strcmp(argv[i], "--nlohmann") == 0;
        if (std::strcmp(argv[i], "--grow") == 0) count_first = false;
    }
    try {
        const Clock t0 = Clock::now();
        Text source;
        open_text(argv[1], mapped, source);
        const simdjson::padded_string_view text = source.view;
        const bool in_place = source.in_place;
        const Clock t1 = Clock::now();
        if (nlohmann) {
            std::printf("reader=nlohmann bytes=%zu", text.size());
            Clock t2;
            {
                const nlohmann::json doc = nlohmann::json::parse(std::string_view(text));
                t2 = Clock::now();
                std::printf(" members=%zu", doc.size());
            }
            const Clock t3 = Clock::now();
            print("open", t0, t1);
            print("parse", t1, t2);
            print("free", t2, t3);
            print("total", t0, t3);
        } else {
            std::printf("reader=simdjson%s%s index=%s walk=%s bytes=%zu", mapped ? (in_place ? "-mmap" : "-mmap-copied") : "",
                        count_first ? "" : "-grow", simdjson::get_active_implementation()->name().c_str(),
                        walk_isa, text.size());
            Input in;
            Clock t2;
            {
                od::parser parser;
                od::document doc = parser.iterate(text);  // stage 1 (the structural index) runs here
                t2 = Clock::now();
                in = walk(doc);
            }
            const Clock t3 = Clock::now();
            print("open", t0, t1);
            print("index", t1, t2);
            print("walk", t2, t3);
            print("total", t0, t3);
            summary(in);
        }
        rusage u{};
        getrusage(RUSAGE_SELF, &u);
        std::printf(" maxrss_mib=%.1f\n", static_cast<double>(u.ru_maxrss) / 1024.0);
    } catch (const simdjson::simdjson_error& e) {
        std::fprintf(stderr, "simdjson_read: simdjson error %d: %s\n", static_cast<int>(e.error()), e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "simdjson_read: %s\n", e.what());
        return 1;
    }
}
