// Binary arrays: .npy, .npz and safetensors (input/tensors.hpp). The fixtures in
// tests/fixtures/tensors were written by NumPy (make_fixtures.py, beside them), not by
// attntrace; the numbers they hold are written out again below as this file's own literals.
// Malformed inputs are good fixtures with bytes edited here, and the zip archives the tests
// build are laid out by this file's own small writer (with its own CRC-32).
#include "core/error.hpp"
#include "input/tensors.hpp"
#include "util/memory.hpp"

#include "support/cli.hpp"
#include "support/error_line.hpp"
#include "support/limited.hpp"
#include "support/refusal.hpp"

#include "support/catch.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <zlib.h>

using namespace attntrace;
using Catch::Contains;

namespace {

const std::string fixture_dir = std::string(ATTNTRACE_SOURCE_DIR) + "/tests/fixtures/tensors";

std::string fixture(const std::string& name) { return cli::slurp(fixture_dir + "/" + name); }

// The numbers make_fixtures.py writes: multiples of 1/8 within ±4, exact in float16 and bfloat16.
Matrix literal_matrix() {
    Matrix m(3, 4);
    m << 1.5, -0.25, 3.875, 0.0,  //
        -4.0, 0.125, 2.75, -1.625,  //
        0.5, -3.5, 1.0, 2.375;
    return m;
}
Matrix literal_vector() {
    Matrix v(1, 5);
    v << 0.375, -2.125, 4.0, -0.875, 1.25;
    return v;
}

bool same(const Matrix& a, const Matrix& b) { return a.rows() == b.rows() && a.cols() == b.cols() && a == b; }

// The tensors point into the bytes they were read from: a copy held by the TensorFile's
// storage, so that a file read from a temporary string stays valid (found by ASan).
TensorFile read(const std::string& bytes, std::uint64_t max_bytes = std::uint64_t{1} << 30) {
    auto owned = std::make_shared<const std::string>(bytes);
    return read_tensors(*owned, "t", owned, max_bytes);
}

// The message reading `bytes` (and every array's to_matrix) is refused with; "" when none is.
std::string refusal(const std::string& bytes, std::uint64_t max_bytes = std::uint64_t{1} << 30) {
    return errors::message_of([&] {
        const TensorFile file = read(bytes, max_bytes);
        for (const Tensor& tensor : file.tensors) (void)tensor.to_matrix("t");
    });
}

// --- bytes, as the tests lay them out --------------------------------------------------

std::uint64_t get(std::string_view bytes, std::size_t at, int size) {
    std::uint64_t value = 0;
    for (int i = 0; i < size; ++i) value |= std::uint64_t{static_cast<unsigned char>(bytes[at + i])} << (8 * i);
    return value;
}
void put(std::string& out, std::uint64_t value, int size) {
    for (int i = 0; i < size; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}
void set(std::string& bytes, std::size_t at, std::uint64_t value, int size) {
    for (int i = 0; i < size; ++i) bytes[at + i] = static_cast<char>((value >> (8 * i)) & 0xff);
}
std::string replaced(std::string bytes, const std::string& from, const std::string& to) {
    const std::size_t at = bytes.find(from);
    REQUIRE(at != std::string::npos);
    return bytes.replace(at, from.size(), to);
}

// CRC-32 as zip computes it (reflected polynomial 0xEDB88320), one bit at a time.
std::uint32_t crc32(std::string_view bytes) {
    std::uint32_t crc = 0xffffffff;
    for (const unsigned char byte : bytes) {
        crc ^= byte;
        for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

// A .npy of format 1.0 with `dict` as its header text, padded with spaces so that the data
// starts at a multiple of 64, as the format's description asks.
std::string npy_file(const std::string& dict, const std::string& data) {
    std::string header = dict;
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string out("\x93NUMPY\x01\x00", 8);
    put(out, header.size(), 2);
    return out + header + data;
}

// A zip archive, laid out from the specification (APPNOTE.TXT): a local header and the data
// for each member, the central directory, the end record. `zip64`: the sizes and offsets in
// zip64 extra fields (all ones in their usual places) and a zip64 end record, as a writer of
// archives beyond 4 GiB must.
struct ZipMember {
    std::string name;
    std::string packed;  // the bytes stored (compressed, for method 8)
    std::uint16_t method = 0;
    std::uint64_t size = 0;  // uncompressed
    std::uint32_t crc = 0;
};
ZipMember stored(const std::string& name, const std::string& content) {
    return {name, content, 0, content.size(), crc32(content)};
}
std::string zip(const std::vector<ZipMember>& members, bool zip64 = false) {
    std::string out, directory;
    const std::uint32_t ones = 0xffffffff;
    for (const ZipMember& m : members) {
        const std::uint64_t offset = out.size();
        std::string local_extra, central_extra;
        if (zip64) {
            put(local_extra, 1, 2), put(local_extra, 16, 2), put(local_extra, m.size, 8), put(local_extra, m.packed.size(), 8);
            put(central_extra, 1, 2), put(central_extra, 24, 2), put(central_extra, m.size, 8);
            put(central_extra, m.packed.size(), 8), put(central_extra, offset, 8);
        }
        put(out, 0x04034b50, 4), put(out, zip64 ? 45 : 20, 2), put(out, 0, 2), put(out, m.method, 2);
        put(out, 0, 2), put(out, 0x21, 2), put(out, m.crc, 4);
        put(out, zip64 ? ones : m.packed.size(), 4), put(out, zip64 ? ones : m.size, 4);
        put(out, m.name.size(), 2), put(out, local_extra.size(), 2);
        out += m.name + local_extra + m.packed;

        put(directory, 0x02014b50, 4), put(directory, 45, 2), put(directory, zip64 ? 45 : 20, 2), put(directory, 0, 2);
        put(directory, m.method, 2), put(directory, 0, 2), put(directory, 0x21, 2), put(directory, m.crc, 4);
        put(directory, zip64 ? ones : m.packed.size(), 4), put(directory, zip64 ? ones : m.size, 4);
        put(directory, m.name.size(), 2), put(directory, central_extra.size(), 2), put(directory, 0, 2);
        put(directory, 0, 2), put(directory, 0, 2), put(directory, 0, 4), put(directory, zip64 ? ones : offset, 4);
        directory += m.name + central_extra;
    }
    const std::uint64_t directory_offset = out.size();
    out += directory;
    if (zip64) {
        const std::uint64_t record = out.size();
        put(out, 0x06064b50, 4), put(out, 44, 8), put(out, 45, 2), put(out, 45, 2), put(out, 0, 4), put(out, 0, 4);
        put(out, members.size(), 8), put(out, members.size(), 8), put(out, directory.size(), 8), put(out, directory_offset, 8);
        put(out, 0x07064b50, 4), put(out, 0, 4), put(out, record, 8), put(out, 1, 4);
    }
    put(out, 0x06054b50, 4), put(out, 0, 2), put(out, 0, 2);
    put(out, zip64 ? 0xffff : members.size(), 2), put(out, zip64 ? 0xffff : members.size(), 2);
    put(out, zip64 ? ones : directory.size(), 4), put(out, zip64 ? ones : directory_offset, 4), put(out, 0, 2);
    return out;
}

// Where the pieces of a zip are, read from its end record and central directory.
struct ZipLayout {
    std::size_t end;                      // the end record
    std::size_t directory;                // the central directory
    std::vector<std::size_t> entries;     // each member's central directory entry
    std::vector<std::size_t> locals;      // each member's local header
    std::vector<std::size_t> data;        // each member's first byte of data
};
ZipLayout layout(std::string_view bytes) {
    ZipLayout z;
    z.end = bytes.rfind(std::string_view("PK\x05\x06", 4));
    z.directory = get(bytes, z.end + 16, 4);
    std::size_t at = z.directory;
    for (std::uint64_t i = 0; i < get(bytes, z.end + 10, 2); ++i) {
        z.entries.push_back(at);
        const std::size_t local = get(bytes, at + 42, 4);
        z.locals.push_back(local);
        z.data.push_back(local + 30 + get(bytes, local + 26, 2) + get(bytes, local + 28, 2));
        at += 46 + get(bytes, at + 28, 2) + get(bytes, at + 30, 2) + get(bytes, at + 32, 2);
    }
    return z;
}

// A safetensors file with `header` (JSON text) and `data`; the header padded to a multiple of 8.
std::string safetensors_file(std::string header, const std::string& data) {
    while (header.size() % 8) header += ' ';
    std::string out;
    put(out, header.size(), 8);
    return out + header + data;
}

// The fixture's header (its keys in the file's order) and its data, to be edited.
struct SafetensorsParts {
    nlohmann::ordered_json header;
    std::string data;
    std::string file() const { return safetensors_file(header.dump(), data); }
};
SafetensorsParts safetensors_parts() {
    const std::string bytes = fixture("tensors.safetensors");
    const std::uint64_t size = get(bytes, 0, 8);
    return {nlohmann::ordered_json::parse(bytes.substr(8, size)), bytes.substr(8 + size)};
}

// --- what every fixture holds ---------------------------------------------------------------

struct Expected {
    std::string file, name;
    ElementType type;
    bool big_endian, fortran_order, vector;
};
const std::vector<Expected>& every_array() {
    using E = ElementType;
    static const std::vector<Expected> arrays = {
        {"matrix_f2.npy", "", E::float16, false, false, false},
        {"matrix_f2_be.npy", "", E::float16, true, false, false},
        {"matrix_f4.npy", "", E::float32, false, false, false},
        {"matrix_f4_be.npy", "", E::float32, true, false, false},
        {"matrix_f8.npy", "", E::float64, false, false, false},
        {"matrix_f8_be.npy", "", E::float64, true, false, false},
        {"matrix_f4_fortran.npy", "", E::float32, false, true, false},
        {"matrix_f8_be_fortran.npy", "", E::float64, true, true, false},
        {"matrix_f4_v2.npy", "", E::float32, false, false, false},
        {"matrix_f4_v3.npy", "", E::float32, false, false, false},
        {"vector_f8.npy", "", E::float64, false, false, true},
        {"vector_f2_be.npy", "", E::float16, true, false, true},
        {"arrays.npz", "matrix", E::float32, false, false, false},
        {"arrays.npz", "vector", E::float64, false, false, true},
        {"arrays_compressed.npz", "matrix", E::float16, false, true, false},
        {"arrays_compressed.npz", "vector", E::float32, true, false, true},
        // In the order of their data, not of their names.
        {"tensors.safetensors", "matrix", E::float32, false, false, false},
        {"tensors.safetensors", "vector", E::float64, false, false, true},
        {"tensors.safetensors", "matrix_f16", E::float16, false, false, false},
        {"tensors.safetensors", "matrix_bf16", E::bfloat16, false, false, false},
    };
    return arrays;
}

std::vector<std::string> fixture_files() {
    std::vector<std::string> files;
    for (const auto& e : every_array())
        if (std::find(files.begin(), files.end(), e.file) == files.end()) files.push_back(e.file);
    std::sort(files.begin(), files.end());
    return files;
}

// Reads every fixture in `folder` and checks each array against the literals.
void check_fixtures(const std::string& folder) {
    for (const std::string& file : fixture_files()) {
        INFO(folder << "/" << file);
        const std::string bytes = cli::slurp(folder + "/" + file);
        const TensorFile read_file = read(bytes);
        const std::string extension = file.substr(file.rfind('.') + 1);
        CHECK(read_file.format == extension);
        CHECK(read_file.origin == "t");
        std::vector<std::string> names;
        for (const auto& e : every_array())
            if (e.file == file) names.push_back(e.name);
        REQUIRE(read_file.names() == names);
        for (const auto& e : every_array()) {
            if (e.file != file) continue;
            INFO("array '" << e.name << "'");
            const Tensor& tensor = *read_file.find(e.name);
            CHECK(tensor.type == e.type);
            CHECK(tensor.big_endian == e.big_endian);
            CHECK(tensor.fortran_order == e.fortran_order);
            CHECK(tensor.shape == (e.vector ? std::vector<std::size_t>{5} : std::vector<std::size_t>{3, 4}));
            CHECK(tensor.elements() == (e.vector ? 5u : 12u));
            CHECK(tensor.bytes == tensor.elements() * element_size(e.type));
            CHECK(same(tensor.to_matrix("t"), e.vector ? literal_vector() : literal_matrix()));
        }
    }
}

bool numpy_available() {
    return cli::run_program({"/usr/bin/python3", "-c", "import numpy"}).exit_code == 0;
}

}  // namespace

TEST_CASE("element types have names and sizes", "[tensors]") {
    CHECK(element_type_name(ElementType::float16) == "float16");
    CHECK(element_type_name(ElementType::bfloat16) == "bfloat16");
    CHECK(element_type_name(ElementType::float32) == "float32");
    CHECK(element_type_name(ElementType::float64) == "float64");
    CHECK(element_size(ElementType::float16) == 2);
    CHECK(element_size(ElementType::bfloat16) == 2);
    CHECK(element_size(ElementType::float32) == 4);
    CHECK(element_size(ElementType::float64) == 8);
    CHECK(shape_text({}) == "()");
    CHECK(shape_text({5}) == "(5,)");
    CHECK(shape_text({2, 3, 4}) == "(2, 3, 4)");
}

TEST_CASE("the format is sniffed from the first bytes", "[tensors]") {
    CHECK(sniff_tensor_format(fixture("matrix_f4.npy")) == "npy");
    CHECK(sniff_tensor_format(fixture("arrays.npz")) == "npz");
    CHECK(sniff_tensor_format(std::string("PK\x05\x06", 4) + std::string(18, '\0')) == "npz");  // an empty archive
    CHECK(sniff_tensor_format(fixture("tensors.safetensors")) == "safetensors");
    CHECK_FALSE(sniff_tensor_format(R"({"tokens": ["a"], "embeddings": [[1]]})"));
    CHECK_FALSE(sniff_tensor_format("        {\"tokens\": []}"));  // '{' at byte 8, after text
    CHECK_FALSE(sniff_tensor_format(""));
    CHECK_FALSE(sniff_tensor_format("\x93NUMP"));
    CHECK(refusal("[1, 2]") == "t: not a .npy, .npz or safetensors file");
}

TEST_CASE("the checked-in fixtures read as the numbers NumPy was given", "[tensors]") {
    check_fixtures(fixture_dir);
    // Nothing in the folder that the table above does not know.
    std::vector<std::string> present;
    for (const auto& entry : std::filesystem::directory_iterator(fixture_dir)) present.push_back(entry.path().filename());
    std::sort(present.begin(), present.end());
    std::vector<std::string> expected = fixture_files();
    expected.push_back("make_fixtures.py");
    expected.push_back("read_with_numpy.py");
    std::sort(expected.begin(), expected.end());
    CHECK(present == expected);
}

TEST_CASE("the fixture script run now with NumPy writes files that read the same", "[tensors][numpy]") {
    if (!numpy_available()) {
        WARN("/usr/bin/python3 with numpy is not installed (python3-numpy): the fixtures are not written again");
        return;
    }
    const cli::TempDir folder;
    const auto r = cli::run_program({"/usr/bin/python3", fixture_dir + "/make_fixtures.py", folder.path()});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(folder.names() == fixture_files());
    check_fixtures(folder.path());
}

TEST_CASE("safetensors keeps the order of the data and the metadata", "[tensors][safetensors]") {
    const TensorFile file = read(fixture("tensors.safetensors"));
    // The header's JSON lists them in this order too; nlohmann::json would sort them.
    CHECK(file.names() == std::vector<std::string>{"matrix", "vector", "matrix_f16", "matrix_bf16"});
    CHECK(file.metadata == std::map<std::string, std::string>{{"format", "pt"}, {"note", "fixtures of tests/test_tensors.cpp"}});
    CHECK(file.find("nothing") == nullptr);
    CHECK(file.find("vector")->shape == std::vector<std::size_t>{5});
}

TEST_CASE("float32 little-endian C-order data is read in place", "[tensors]") {
    const std::string bytes = fixture("matrix_f4.npy");  // lives as long as the file read from it
    const TensorFile file = read_tensors(bytes, "t", nullptr, std::uint64_t{1} << 30);
    const Tensor& tensor = file.tensors[0];
    CHECK(tensor.data == reinterpret_cast<const unsigned char*>(bytes.data()) + 128);  // after NumPy's 128-byte header
    const float* view = tensor.float32_view();
    REQUIRE(view != nullptr);
    const Matrix expected = literal_matrix();
    for (int i = 0; i < 12; ++i) CHECK(view[i] == expected(i / 4, i % 4));
    // Other types, byte orders and orders: no view.
    for (const char* other : {"matrix_f4_be.npy", "matrix_f8.npy", "matrix_f2.npy", "matrix_f4_fortran.npy"}) {
        INFO(other);
        const std::string other_bytes = fixture(other);
        CHECK(read(other_bytes).tensors[0].float32_view() == nullptr);
    }
    CHECK(read(fixture("tensors.safetensors")).find("matrix_bf16")->float32_view() == nullptr);
    // Data that is not 4-byte aligned: no view, and the numbers all the same.
    std::string shifted = " " + bytes;
    const std::string_view misaligned = std::string_view(shifted).substr(1);
    const TensorFile moved = read_tensors(misaligned, "t", nullptr, 1 << 20);
    REQUIRE(reinterpret_cast<std::uintptr_t>(moved.tensors[0].data) % 4 != 0);
    CHECK(moved.tensors[0].float32_view() == nullptr);
    CHECK(same(moved.tensors[0].to_matrix("t"), expected));
}

TEST_CASE("npz members are read in place when aligned and copied when not", "[tensors][npz]") {
    // NumPy's stored members: 30 + 10 + 20 bytes of local header, then the .npy's 128-byte
    // header: the data is at a multiple of 4 within the file.
    const std::string bytes = fixture("arrays.npz");
    const auto storage = std::make_shared<int>(7);
    const TensorFile file = read_tensors(bytes, "t", storage, 1 << 20);
    const auto* begin = reinterpret_cast<const unsigned char*>(bytes.data());
    const Tensor& matrix = *file.find("matrix");
    CHECK(matrix.data == begin + 60 + 128);
    CHECK(matrix.float32_view() != nullptr);
    CHECK(matrix.storage.get() == storage.get());  // the file's storage is kept
    // "m.npy": 30 + 5 + 128 bytes before the data, which is then at an odd offset: copied.
    const std::string odd = zip({stored("m.npy", fixture("matrix_f4.npy"))});
    const TensorFile copied = read(odd);
    const Tensor& m = copied.tensors[0];
    CHECK(m.name == "m");
    const auto* odd_begin = reinterpret_cast<const unsigned char*>(odd.data());
    CHECK((m.data < odd_begin || m.data >= odd_begin + odd.size()));
    CHECK(m.storage != nullptr);
    CHECK(m.float32_view() != nullptr);
    CHECK(same(m.to_matrix("t"), literal_matrix()));
    // Deflated members live in a buffer of their own.
    const std::string compressed = fixture("arrays_compressed.npz");
    const TensorFile inflated = read(compressed);
    for (const Tensor& tensor : inflated.tensors) {
        const auto* c = reinterpret_cast<const unsigned char*>(compressed.data());
        CHECK((tensor.data < c || tensor.data >= c + compressed.size()));
        CHECK(tensor.storage != nullptr);
    }
}

TEST_CASE("zip64 sizes and offsets are read from the extra fields and the zip64 end record", "[tensors][npz]") {
    const std::string archive = zip({stored("query.npy", fixture("matrix_f8_be.npy")), stored("bias.npy", fixture("vector_f8.npy"))},
                                    true);
    const TensorFile file = read(archive);
    CHECK(file.names() == std::vector<std::string>{"query", "bias"});
    CHECK(same(file.find("query")->to_matrix("t"), literal_matrix()));
    CHECK(same(file.find("bias")->to_matrix("t"), literal_vector()));
    // The same members without zip64 read the same.
    const std::string plain = zip({stored("query.npy", fixture("matrix_f8_be.npy")), stored("bias.npy", fixture("vector_f8.npy"))});
    CHECK(read(plain).names() == file.names());
    // An empty archive holds no arrays.
    CHECK(read(zip({})).tensors.empty());
}

TEST_CASE("a Fortran-order array is transposed into C order and says so", "[tensors]") {
    const TensorFile file = read(fixture("matrix_f4_fortran.npy"));
    const Tensor& tensor = file.tensors[0];
    CHECK(tensor.fortran_order);
    CHECK(tensor.shape == std::vector<std::size_t>{3, 4});
    // The data goes down the columns: 1.5, -4, 0.5 (column 1), then -0.25, …
    float first[3];
    std::memcpy(first, tensor.data, sizeof first);
    CHECK(first[0] == 1.5f);
    CHECK(first[1] == -4.0f);
    CHECK(first[2] == 0.5f);
    CHECK(same(tensor.to_matrix("t"), literal_matrix()));
    CHECK(tensor.order_note() ==
          "the array was stored in Fortran order (column by column); it is read in C order (row by row), the shape (3, 4) "
          "as the file gives it");
    CHECK(read(fixture("matrix_f4.npy")).tensors[0].order_note().empty());
    CHECK(read(fixture("arrays_compressed.npz")).find("matrix")->order_note().starts_with("matrix was stored in Fortran"));
}

TEST_CASE("float16 subnormals and extremes and bfloat16 are decoded exactly", "[tensors]") {
    // Half precision bit patterns and their values, worked out from the format: a subnormal is
    // fraction · 2^-24, a normal number (1024 + fraction) · 2^(exponent − 25).
    std::string data;
    for (const std::uint16_t bits : {0x0001, 0x03ff, 0x0400, 0x7bff, 0x8001, 0x3555, 0x8000})
        put(data, bits, 2);
    const TensorFile file = read(npy_file("{'descr': '<f2', 'fortran_order': False, 'shape': (7,), }", data));
    const Matrix m = file.tensors[0].to_matrix("t");
    REQUIRE(m.cols() == 7);
    CHECK(m(0, 0) == 5.9604644775390625e-08);      // 2^-24, the smallest subnormal
    CHECK(m(0, 1) == 6.0975551605224609375e-05);   // 1023 · 2^-24, the largest subnormal
    CHECK(m(0, 2) == 6.103515625e-05);             // 2^-14, the smallest normal number
    CHECK(m(0, 3) == 65504.0);                     // the largest
    CHECK(m(0, 4) == -5.9604644775390625e-08);
    CHECK(m(0, 5) == 0.333251953125);              // 0x3555: 1365 · 2^-12
    CHECK(m(0, 6) == 0.0);
    CHECK(std::signbit(m(0, 6)));                  // -0
    // bfloat16: the upper half of a float32 — 0x3f80 is 1, 0xc0a0 is -5, 0x0001 is 2^-133
    // (a float32 subnormal), 0x7f7f is (2 − 2^-7) · 2^127.
    std::string bf16;
    for (const std::uint16_t bits : {0x3f80, 0xc0a0, 0x0001, 0x7f7f}) put(bf16, bits, 2);
    const std::string header = R"({"x":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]}})";
    const Matrix b = read(safetensors_file(header, bf16)).tensors[0].to_matrix("t");
    CHECK(b(0, 0) == 1.0);
    CHECK(b(0, 1) == -5.0);
    CHECK(b(1, 0) == std::ldexp(1.0, -133));
    CHECK(b(1, 1) == std::ldexp(255.0, 120));  // 255 · 2^120 = (2 − 2^-7) · 2^127
}

TEST_CASE("numbers that are not finite are refused naming their row and column", "[tensors]") {
    // float32 +inf (0x7f800000, little-endian) at row 2, column 3 of the fixture: byte 128 + 4·(4 + 2).
    std::string bytes = fixture("matrix_f4.npy");
    set(bytes, 128 + 4 * 6, 0x7f800000, 4);
    CHECK(refusal(bytes) == "t: the array holds inf at row 2, column 3 (index [1, 2]): attntrace reads finite numbers only");
    // float16 NaN (0x7e00) and -inf (0xfc00); the first in C order is named.
    std::string data;
    for (const std::uint16_t bits : {0x3c00, 0x3c00, 0xfc00, 0x7e00}) put(data, bits, 2);
    CHECK(refusal(npy_file("{'descr': '<f2', 'fortran_order': False, 'shape': (2, 2), }", data)) ==
          "t: the array holds -inf at row 2, column 1 (index [1, 0]): attntrace reads finite numbers only");
    CHECK(refusal(npy_file("{'descr': '<f2', 'fortran_order': False, 'shape': (4,), }", data)) ==
          "t: the array holds -inf at number 3 (index [2]): attntrace reads finite numbers only");
    // In Fortran order the same bytes are the transpose: -inf is at row 1, column 2.
    CHECK(refusal(npy_file("{'descr': '<f2', 'fortran_order': True, 'shape': (2, 2), }", data)) ==
          "t: the array holds -inf at row 1, column 2 (index [0, 1]): attntrace reads finite numbers only");
    // A named array: the safetensors fixture with a NaN in "vector" (float64, data bytes 48 to 88).
    SafetensorsParts parts = safetensors_parts();
    set(parts.data, 48 + 8, 0x7ff8000000000000, 8);
    CHECK(refusal(parts.file()) == "t: vector holds nan at number 2 (index [1]): attntrace reads finite numbers only");
}

TEST_CASE("only vectors and matrices become matrices", "[tensors]") {
    const std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': %s, }";
    const auto with_shape = [&](const std::string& shape, std::size_t count) {
        std::string data;
        for (std::size_t i = 0; i < count; ++i) put(data, 0x3ff0000000000000, 8);  // 1.0
        return npy_file(replaced(dict, "%s", shape), data);
    };
    CHECK(refusal(with_shape("()", 1)) == "t: the array has shape (): expected a matrix (2 dimensions) or a vector (1)");
    CHECK(read(with_shape("()", 1)).tensors[0].elements() == 1);
    CHECK(refusal(with_shape("(2, 3, 4)", 24)) == "t: the array has shape (2, 3, 4): expected a matrix (2 dimensions) or a vector (1)");
    CHECK(refusal(with_shape("(0, 4)", 0)) == "t: the array has shape (0, 4): it holds no numbers");
    CHECK(refusal(with_shape("(0,)", 0)) == "t: the array has shape (0,): it holds no numbers");
    const Matrix row = read(with_shape("(1, 3)", 3)).tensors[0].to_matrix("t");
    CHECK((row.rows() == 1 && row.cols() == 3));
    const Matrix column = read(with_shape("(3, 1)", 3)).tensors[0].to_matrix("t");
    CHECK((column.rows() == 3 && column.cols() == 1));
    // Named arrays are named.
    SafetensorsParts parts = safetensors_parts();
    parts.header["matrix"]["shape"] = {3, 2, 2};
    CHECK(refusal(parts.file()) == "t: matrix has shape (3, 2, 2): expected a matrix (2 dimensions) or a vector (1)");
}

TEST_CASE("npy element types other than float16 float32 and float64 are refused by name", "[tensors][npy]") {
    const std::string data = fixture("matrix_f4.npy").substr(128);
    const auto with_descr = [&](const std::string& descr) {
        return npy_file("{'descr': " + descr + ", 'fortran_order': False, 'shape': (3, 4), }", data);
    };
    const std::string supported = "attntrace reads float16, float32 and float64 ('<f2', '<f4', '<f8', or '>' for "
                                  "big-endian); convert with array.astype(np.float32)";
    CHECK(refusal(with_descr("'<i4'")) == "t: unsupported dtype '<i4' (32-bit signed integers): " + supported);
    CHECK(refusal(with_descr("'<u8'")) == "t: unsupported dtype '<u8' (64-bit unsigned integers): " + supported);
    CHECK(refusal(with_descr("'<c8'")) == "t: unsupported dtype '<c8' (64-bit complex numbers): " + supported);
    CHECK(refusal(with_descr("'|O'")) == "t: unsupported dtype '|O' (Python objects): " + supported);
    CHECK(refusal(with_descr("'|b1'")) == "t: unsupported dtype '|b1' (booleans): " + supported);
    CHECK(refusal(with_descr("'<U1'")) == "t: unsupported dtype '<U1' (Unicode strings): " + supported);
    CHECK(refusal(with_descr("'|S4'")) == "t: unsupported dtype '|S4' (byte strings): " + supported);
    CHECK(refusal(with_descr("'<M8[ns]'")) == "t: unsupported dtype '<M8[ns]' (dates and times): " + supported);
    CHECK(refusal(with_descr("'<f16'")) == "t: unsupported dtype '<f16' (128-bit floats): " + supported);
    CHECK(refusal(with_descr("'|f4'")) ==
          "t: unsupported dtype '|f4' ('|' says byte order does not matter, but a float of several bytes needs '<' or "
          "'>'): " + supported);
    CHECK(refusal(with_descr("'float32'")) == "t: unsupported dtype 'float32': " + supported);
    CHECK(refusal(with_descr("[('x', '<f4'), ('y', '<f4')]")) ==
          "t: unsupported dtype: a structured array (a list of named fields); attntrace reads plain arrays of float16, "
          "float32 or float64");
    // The same bytes as a 4-byte integer type: refused before the data is read.
    CHECK_THAT(refusal(replaced(fixture("matrix_f4.npy"), "'<f4'", "'<i4'")), Contains("unsupported dtype '<i4'"));
    // '=' is the writer's own byte order, taken as this machine's (little-endian here).
    const TensorFile native = read(with_descr("'=f4'"));
    CHECK(native.tensors[0].type == ElementType::float32);
    CHECK(same(native.tensors[0].to_matrix("t"), literal_matrix()));
}

TEST_CASE("malformed npy headers are refused each with its own message", "[tensors][npy]") {
    const std::string good = fixture("matrix_f4.npy");  // 10 + 118 bytes of header, 48 of data
    const std::string data = good.substr(128);
    std::string bytes = good;

    SECTION("bad magic") {
        bytes[1] = 'X';
        CHECK(refusal(bytes) == "t: not a .npy, .npz or safetensors file");
        // In an archive, the member is known to be meant as a .npy.
        CHECK(refusal(zip({stored("a.npy", bytes)})) ==
              "t: member 'a.npy': not a .npy file: it does not start with NumPy's magic string \\x93NUMPY");
    }
    SECTION("unknown version") {
        bytes[6] = 4;
        CHECK(refusal(bytes) == "t: unknown .npy format version 4.0: attntrace reads versions 1.0, 2.0 and 3.0");
        bytes[6] = 1, bytes[7] = 1;
        CHECK(refusal(bytes) == "t: unknown .npy format version 1.1: attntrace reads versions 1.0, 2.0 and 3.0");
    }
    SECTION("header length past the end") {
        set(bytes, 8, 0xffff, 2);
        CHECK(refusal(bytes) == "t: truncated: the .npy header is 65535 bytes long, but only 166 bytes follow its length");
        CHECK(refusal(good.substr(0, 9)) == "t: truncated: the file ends inside the .npy header");
    }
    SECTION("header not ending in a newline") {
        bytes[127] = ' ';
        CHECK(refusal(bytes) == "t: malformed .npy header: it does not end in a newline (\\n)");
    }
    SECTION("version 3.0 header not UTF-8") {
        std::string v3 = fixture("matrix_f4_v3.npy");
        v3[12 + 60] = '\xff';  // in the padding
        CHECK(refusal(v3) == "t: malformed .npy header: a version 3.0 header is UTF-8, and this one is not");
    }
    SECTION("header not a dictionary") {
        CHECK(refusal(npy_file("['<f4', False, (3, 4)]", data)) ==
              "t: malformed .npy header: expected '{': the header is a Python dictionary (character 1): ['<f4', False, (3, 4)]");
    }
    SECTION("missing key") {
        CHECK(refusal(npy_file("{'descr': '<f4', 'shape': (3, 4), }", data)) ==
              "t: the .npy header has no 'fortran_order' (it needs 'descr', 'fortran_order' and 'shape'): "
              "{'descr': '<f4', 'shape': (3, 4), }");
    }
    SECTION("unknown and repeated keys") {
        // Characters counted by hand: "{'descr': '<f4', 'fortran_order': False, 'shape': " is 50.
        CHECK(refusal(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), 'extra': 1}", data)) ==
              "t: malformed .npy header: unexpected key 'extra' (the header holds 'descr', 'fortran_order' and 'shape') "
              "(character 59): {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), 'extra': 1}");
        CHECK(refusal(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), 'descr': '<f4'}", data)) ==
              "t: malformed .npy header: 'descr' appears twice (character 59): "
              "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), 'descr': '<f4'}");
    }
    SECTION("bad shape tuples") {
        CHECK(refusal(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (12), }", data)) ==
              "t: malformed .npy header: (12) is not a tuple: a shape of one dimension is written (12,) (character 51): "
              "{'descr': '<f4', 'fortran_order': False, 'shape': (12), }");
        CHECK(refusal(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': [3, 4], }", data)) ==
              "t: malformed .npy header: expected the shape as a tuple, such as (3, 4) (character 51): "
              "{'descr': '<f4', 'fortran_order': False, 'shape': [3, 4], }");
        CHECK(refusal(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (-3, 4), }", data)) ==
              "t: malformed .npy header: expected a non-negative integer in the shape (character 52): "
              "{'descr': '<f4', 'fortran_order': False, 'shape': (-3, 4), }");
        CHECK(refusal(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (3 4), }", data)) ==
              "t: malformed .npy header: expected ',' or ')' in the shape (character 54): "
              "{'descr': '<f4', 'fortran_order': False, 'shape': (3 4), }");
        CHECK(refusal(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999, 1), }", data)) ==
              "t: malformed .npy header: a dimension too large for 64 bits (character 52): "
              "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999, 1), }");
        // Keys in another order, spaces and a trailing comma in a tuple are all Python.
        const TensorFile other_order =
            read(npy_file("{ 'shape' : ( 3 , 4 , ) , \"fortran_order\": False, 'descr': '<f4'}", data));
        CHECK(same(other_order.tensors[0].to_matrix("t"), literal_matrix()));
    }
    SECTION("bad values") {
        CHECK(refusal(npy_file("{'descr': '<f4', 'fortran_order': 0, 'shape': (3, 4), }", data)) ==
              "t: malformed .npy header: expected True or False for 'fortran_order' (character 35): "
              "{'descr': '<f4', 'fortran_order': 0, 'shape': (3, 4), }");
        // The string runs on to the next quote: '<f4, ', and then a word stands where ',' should.
        CHECK(refusal(npy_file("{'descr': '<f4, 'fortran_order': False, 'shape': (3, 4), }", data)) ==
              "t: malformed .npy header: expected ',' or '}' after the value (character 18): "
              "{'descr': '<f4, 'fortran_order': False, 'shape': (3, 4), }");
        // At the quote of '<f4', the 10th character (spaces are skipped first).
        CHECK(refusal(npy_file("{'descr' '<f4', 'fortran_order': False, 'shape': (3, 4), }", data)) ==
              "t: malformed .npy header: expected ':' after the key (character 10): "
              "{'descr' '<f4', 'fortran_order': False, 'shape': (3, 4), }");
        CHECK(refusal(npy_file("{'descr': '<f4' 'fortran_order': False, 'shape': (3, 4), }", data)) ==
              "t: malformed .npy header: expected ',' or '}' after the value (character 17): "
              "{'descr': '<f4' 'fortran_order': False, 'shape': (3, 4), }");
        CHECK(refusal(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), } x", data)) ==
              "t: malformed .npy header: text after the dictionary's closing '}' (character 61): "
              "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), } x");
    }
    SECTION("shape overflow") {
        // 2^40 · 2^40 elements of 4 bytes: 2^82 bytes.
        CHECK(refusal(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }", "")) ==
              "t: shape (1099511627776, 1099511627776) is too large: its size in bytes does not fit 64 bits");
        // 2^62 elements fit 64 bits, their 2^64 bytes do not.
        CHECK(refusal(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,), }", "")) ==
              "t: shape (4611686018427387904,) is too large: its size in bytes does not fit 64 bits");
    }
    SECTION("truncated data") {
        CHECK(refusal(good.substr(0, good.size() - 1)) == "t: truncated: the header announces 48 bytes of data, the file holds 47");
        CHECK(refusal(good.substr(0, 128)) == "t: truncated: the header announces 48 bytes of data, the file holds 0");
    }
    SECTION("trailing bytes") {
        CHECK(refusal(good + '\0') == "t: trailing bytes: the header announces 48 bytes of data, the file holds 49");
    }
}

TEST_CASE("malformed npz archives are refused each with its own message", "[tensors][npz]") {
    // arrays.npz as NumPy wrote it: "matrix.npy" (176 bytes) and "vector.npy" (168), stored;
    // 598 bytes, its end record the last 22 and its central directory the 2 · (46 + 10) before.
    const std::string good = fixture("arrays.npz");
    REQUIRE(good.size() == 598);
    const ZipLayout z = layout(good);
    REQUIRE(z.end == 576);
    REQUIRE(z.directory == 576 - 112);
    std::string bytes = good;

    SECTION("truncated end record") {
        CHECK(refusal(good.substr(0, good.size() - 10)) ==
              "t: truncated or not a zip archive: no end-of-central-directory record in its last 65,557 bytes");
        CHECK(refusal(good.substr(0, 20)) == "t: truncated zip archive: shorter than its end-of-central-directory record (22 bytes)");
    }
    SECTION("central directory past the end") {
        set(bytes, z.end + 16, 1000, 4);
        CHECK(refusal(bytes) ==
              "t: the central directory (112 bytes at byte 1000) runs past the end record at byte 576: the archive is "
              "truncated or damaged");
        bytes = good;
        set(bytes, z.end + 12, 113, 4);
        CHECK(refusal(bytes) ==
              "t: the central directory (113 bytes at byte 464) runs past the end record at byte 576: the archive is "
              "truncated or damaged");
    }
    SECTION("CRC mismatch") {
        // The last byte of the matrix (the high byte of 2.375f, 0x40) changed.
        const std::size_t last = z.data[0] + 176 - 1;
        bytes[last] = '\x41';
        const std::uint32_t recorded = crc32(good.substr(z.data[0], 176));
        CHECK(get(good, z.entries[0] + 16, 4) == recorded);  // NumPy's CRC is the test's
        CHECK(refusal(bytes) == fmt::format("t: member 'matrix.npy': CRC-32 mismatch: the archive records {:08x}, the data "
                                            "gives {:08x}; the file is damaged",
                                            recorded, crc32(bytes.substr(z.data[0], 176))));
    }
    SECTION("unsupported method") {
        set(bytes, z.entries[0] + 10, 12, 2);
        set(bytes, z.locals[0] + 8, 12, 2);
        CHECK(refusal(bytes) ==
              "t: member 'matrix.npy' is compressed with bzip2 (method 12): attntrace reads stored (method 0) and deflated "
              "(method 8) members, as np.savez and np.savez_compressed write them");
        set(bytes, z.entries[0] + 10, 14, 2);
        CHECK_THAT(refusal(bytes), Contains("is compressed with LZMA (method 14)"));
    }
    SECTION("member that is not a .npy") {
        bytes = replaced(replaced(bytes, "matrix.npy", "matrix.txt"), "matrix.npy", "matrix.txt");
        CHECK(refusal(bytes) == "t: member 'matrix.txt' is not a .npy file: an .npz holds only .npy members");
    }
    SECTION("duplicate member") {
        bytes = replaced(replaced(bytes, "vector.npy", "matrix.npy"), "vector.npy", "matrix.npy");
        CHECK(refusal(bytes) == "t: two members are named 'matrix.npy'");
    }
    SECTION("encrypted member") {
        set(bytes, z.entries[1] + 8, 1, 2);
        CHECK(refusal(bytes) == "t: member 'vector.npy' is encrypted: attntrace reads unencrypted archives");
    }
    SECTION("multi-disk archive") {
        set(bytes, z.end + 4, 1, 2);
        CHECK(refusal(bytes) == "t: a multi-disk (split) zip archive: attntrace reads archives of one file");
    }
    SECTION("local header elsewhere or disagreeing") {
        set(bytes, z.entries[1] + 42, 10, 4);
        CHECK(refusal(bytes) == "t: member 'vector.npy': no local header at byte 10, where the central directory places it");
        bytes = good;
        set(bytes, z.locals[1] + 14, 0, 4);  // the CRC-32 in the local header
        CHECK(refusal(bytes) ==
              "t: member 'vector.npy': its local header and the central directory disagree on its sizes or CRC-32");
    }
    SECTION("uncompressed total beyond the limit") {
        // 176 + 168 = 344 bytes once read.
        CHECK(refusal(good, 343) == "t: the members inflate to 344 bytes in all, more than the limit of 343 set by --max-input");
        CHECK(refusal(good, 344).empty());
    }
}

TEST_CASE("damaged deflate streams are refused", "[tensors][npz]") {
    // The deflated "matrix.npy" of arrays_compressed.npz, repacked by the test's zip writer.
    const std::string compressed = fixture("arrays_compressed.npz");
    const ZipLayout z = layout(compressed);
    const std::size_t packed_size = get(compressed, z.entries[0] + 20, 4);
    const std::uint64_t size = get(compressed, z.entries[0] + 24, 4);
    REQUIRE(size == 128 + 24);  // a .npy of twelve float16
    const std::uint32_t crc = static_cast<std::uint32_t>(get(compressed, z.entries[0] + 16, 4));
    const std::string packed = compressed.substr(z.data[0], packed_size);
    const auto member = [&](const std::string& bytes, std::uint64_t announced) {
        return zip({ZipMember{"m.npy", bytes, 8, announced, crc}});
    };
    REQUIRE(refusal(member(packed, size)).empty());
    CHECK(refusal(member(packed.substr(0, packed.size() - 3), size)) ==
          "t: member 'm.npy': its compressed data ends before the deflate stream does: the archive is truncated or damaged");
    CHECK(refusal(member(packed, size - 1)) == "t: member 'm.npy': it inflates to more than the 151 bytes the archive gives as its size");
    CHECK(refusal(member(packed, size + 1)) == "t: member 'm.npy': it inflates to 152 bytes, not the 153 the archive gives as its size");
    CHECK(refusal(member(packed + "xyz", size)) == "t: member 'm.npy': 3 bytes of compressed data follow the end of its deflate stream");
    // Block type 3 does not exist.
    CHECK_THAT(refusal(member("\x07", size)), Contains("t: member 'm.npy': its deflated data is damaged (invalid block type)"));
}

TEST_CASE("malformed safetensors files are refused each with its own message", "[tensors][safetensors]") {
    // The fixture's data: 48 (matrix, F32) + 40 (vector, F64) + 24 + 24 (F16, BF16) = 136 bytes.
    SafetensorsParts parts = safetensors_parts();
    REQUIRE(parts.data.size() == 136);
    const std::string good = fixture("tensors.safetensors");

    SECTION("header size past the end") {
        std::string bytes = good;
        set(bytes, 0, good.size(), 8);
        CHECK(refusal(bytes) ==
              fmt::format("t: the safetensors header is {} bytes long, past the end of the file ({} bytes follow its size)",
                          good.size(), good.size() - 8));
    }
    SECTION("header beyond the format's limit") {
        std::string bytes = safetensors_file("{}", "");
        set(bytes, 0, 100'000'001, 8);
        bytes.resize(8 + 100'000'001, ' ');
        CHECK(refusal(bytes) == "t: a safetensors header of 100000001 bytes, more than the format's limit of 100,000,000");
    }
    SECTION("header not JSON") {
        CHECK_THAT(refusal(safetensors_file("{!}", "")),
                   Contains("t: the safetensors header is not valid JSON: parse error at line 1, column 2"));
        CHECK_THAT(refusal(safetensors_file("{\"a\": 1} x", "")),
                   Contains("t: the safetensors header is not valid JSON: parse error at line 1, column 10"));
    }
    SECTION("a key twice") {
        std::string bytes = good;
        bytes = replaced(bytes, "\"vector\":", "\"matrix\":");
        CHECK(refusal(bytes) == "t: the safetensors header has the key \"matrix\" twice in one object");
    }
    SECTION("missing dtype") {
        parts.header["matrix"].erase("dtype");
        CHECK(refusal(parts.file()) == "t: tensor 'matrix': no \"dtype\": each tensor has \"dtype\", \"shape\" and \"data_offsets\"");
    }
    SECTION("tensor not an object") {
        parts.header["matrix"] = 3;
        CHECK(refusal(parts.file()) ==
              "t: tensor 'matrix': expected an object with \"dtype\", \"shape\" and \"data_offsets\", found a number");
    }
    SECTION("offsets out of range") {
        parts.header["vector"]["data_offsets"] = {48, 200};
        CHECK(refusal(parts.file()) == "t: tensor 'vector': data_offsets [48, 200] lie outside the 136 bytes of data after the header");
        parts.header["vector"]["data_offsets"] = {88, 48};
        CHECK(refusal(parts.file()) == "t: tensor 'vector': data_offsets [88, 48] lie outside the 136 bytes of data after the header");
        parts.header["vector"]["data_offsets"] = {48};
        CHECK(refusal(parts.file()) ==
              "t: tensor 'vector': \"data_offsets\" is [48], not [begin, end] (two non-negative integers)");
    }
    SECTION("offsets and shape disagree") {
        parts.header["matrix"]["shape"] = {3, 3};
        CHECK(refusal(parts.file()) == "t: tensor 'matrix': data_offsets [0, 48] hold 48 bytes, but shape (3, 3) of F32 takes 36");
        parts.header["matrix"]["shape"] = {3, -4};
        CHECK(refusal(parts.file()) == "t: tensor 'matrix': \"shape\" is [3,-4], not an array of non-negative integers");
        parts.header["matrix"]["shape"] = {1099511627776, 1099511627776};
        CHECK(refusal(parts.file()) ==
              "t: tensor 'matrix': shape (1099511627776, 1099511627776) is too large: its size in bytes does not fit 64 bits");
    }
    SECTION("unsupported dtype") {
        parts.header["matrix"]["dtype"] = "I32";
        CHECK(refusal(parts.file()) ==
              "t: tensor 'matrix': unsupported dtype I32 (32-bit signed integers): attntrace reads F16, BF16, F32 and F64");
        parts.header["matrix"]["dtype"] = "F8_E4M3";
        CHECK(refusal(parts.file()) ==
              "t: tensor 'matrix': unsupported dtype F8_E4M3 (8-bit floats): attntrace reads F16, BF16, F32 and F64");
        parts.header["matrix"]["dtype"] = "BOOL";
        CHECK(refusal(parts.file()) ==
              "t: tensor 'matrix': unsupported dtype BOOL (booleans): attntrace reads F16, BF16, F32 and F64");
        parts.header["matrix"]["dtype"] = 32;
        CHECK(refusal(parts.file()) == "t: tensor 'matrix': \"dtype\" is a number, not a string such as \"F32\"");
    }
    SECTION("gaps overlaps and trailing bytes") {
        parts.header.erase("vector");
        CHECK(refusal(parts.file()) ==
              "t: tensor 'matrix_f16' starts at byte 88 of the data, but the bytes before it end at 48: safetensors data has "
              "no gaps");
        parts = safetensors_parts();
        parts.header["vector"]["data_offsets"] = {40, 80};
        CHECK(refusal(parts.file()) == "t: tensors 'matrix' and 'vector' overlap in the data (bytes 40 to 48)");
        parts = safetensors_parts();
        parts.data += std::string(8, '\0');
        CHECK(refusal(parts.file()) ==
              "t: the tensors' data ends at byte 136, but 144 bytes follow the header: safetensors files have no trailing "
              "bytes");
    }
    SECTION("metadata of strings only") {
        parts.header["__metadata__"]["count"] = 1;
        CHECK(refusal(parts.file()) == "t: \"__metadata__\" gives \"count\" a number: its values are strings");
        parts.header["__metadata__"] = {1, 2};
        CHECK(refusal(parts.file()) == "t: \"__metadata__\" is an array, not an object of strings");
    }
    SECTION("an empty header holds no tensors") {
        CHECK(read(safetensors_file("{}", "")).tensors.empty());
    }
}

TEST_CASE("write_npy writes what NumPy writes", "[tensors][writers]") {
    // The fixtures came from np.save: the same header, padding and data, byte for byte.
    CHECK(write_npy(literal_matrix(), ElementType::float32) == fixture("matrix_f4.npy"));
    CHECK(write_npy(literal_matrix(), ElementType::float64) == fixture("matrix_f8.npy"));
    CHECK(write_npy(literal_vector(), ElementType::float64, true) == fixture("vector_f8.npy"));
}

TEST_CASE("the writers round-trip through the readers", "[tensors][writers]") {
    Matrix values(2, 3);
    values << 0.1, -1e-300, 7.25, 1.0 / 3.0, 6.02e23, -0.0;
    const Matrix vector = literal_vector();
    // float64 keeps every double; float32 keeps each number rounded to a float.
    const Matrix as_float32 = values.unaryExpr([](double x) { return double(static_cast<float>(x)); });
    CHECK(same(read(write_npy(values, ElementType::float64)).tensors[0].to_matrix("t"), values));
    CHECK(same(read(write_npy(values, ElementType::float32)).tensors[0].to_matrix("t"), as_float32));
    const TensorFile npy_vector = read(write_npy(vector, ElementType::float32, true));
    CHECK(npy_vector.tensors[0].shape == std::vector<std::size_t>{5});

    const std::string npz = write_npz({{"query", &values}, {"bias", &vector, true}}, ElementType::float64);
    const TensorFile archive = read(npz);
    CHECK(archive.format == "npz");
    CHECK(archive.names() == std::vector<std::string>{"query", "bias"});
    CHECK(archive.find("bias")->shape == std::vector<std::size_t>{5});
    CHECK(same(archive.find("query")->to_matrix("t"), values));
    CHECK(same(archive.find("bias")->to_matrix("t"), vector));
    // Stored members whose CRC-32 is the one this test computes.
    const ZipLayout z = layout(npz);
    REQUIRE(z.entries.size() == 2);
    for (std::size_t i = 0; i < 2; ++i) {
        CHECK(get(npz, z.entries[i] + 10, 2) == 0);
        const std::size_t size = get(npz, z.entries[i] + 24, 4);
        CHECK(get(npz, z.entries[i] + 16, 4) == crc32(npz.substr(z.data[i], size)));
    }

    const std::string safetensors =
        write_safetensors({{"query", &values}, {"bias", &vector, true}}, ElementType::float32, {{"source", "test"}});
    // The header as nlohmann::json writes it (keys sorted), padded with spaces to 8 bytes.
    const std::string header = R"({"__metadata__":{"source":"test"},)"
                               R"("bias":{"data_offsets":[24,44],"dtype":"F32","shape":[5]},)"
                               R"("query":{"data_offsets":[0,24],"dtype":"F32","shape":[2,3]}})";
    const std::string padded = header + std::string((8 - header.size() % 8) % 8, ' ');
    CHECK(get(safetensors, 0, 8) == padded.size());
    CHECK(safetensors.substr(8, padded.size()) == padded);
    CHECK(safetensors.size() == 8 + padded.size() + 44);
    const TensorFile tensors = read(safetensors);
    CHECK(tensors.names() == std::vector<std::string>{"query", "bias"});
    CHECK(tensors.metadata == std::map<std::string, std::string>{{"source", "test"}});
    CHECK(same(tensors.find("query")->to_matrix("t"), as_float32));
    CHECK(same(tensors.find("bias")->to_matrix("t"), vector));
}

TEST_CASE("the writers refuse numbers their type cannot hold", "[tensors][writers]") {
    Matrix big(1, 2);
    big << 1.0, 1e39;
    CHECK(errors::message_of([&] { (void)write_npy(big, ElementType::float32); }) ==
          "the matrix: row 1, column 2: 1e+39 is beyond the range of float32 (about ±3.4e38)");
    CHECK(errors::message_of([&] { (void)write_npy(big, ElementType::float64); }).empty());
    big(0, 0) = std::numeric_limits<double>::quiet_NaN();
    CHECK(errors::message_of([&] { (void)write_npz({{"w", &big}}, ElementType::float64); }) ==
          "w: row 1, column 1: nan is not a finite number");
    // Misuse of the interface is a programming error, not a data error.
    CHECK_THROWS_AS(write_npy(literal_matrix(), ElementType::float16), std::invalid_argument);
    CHECK_THROWS_AS(write_npy(literal_matrix(), ElementType::float32, true), std::invalid_argument);  // 3 rows
    const Matrix m = literal_matrix();
    CHECK_THROWS_AS(write_npz({{"a", &m}, {"a", &m}}, ElementType::float32), std::invalid_argument);
    CHECK_THROWS_AS(write_safetensors({{"__metadata__", &m}}, ElementType::float32), std::invalid_argument);
}

TEST_CASE("NumPy reads what the writers wrote", "[tensors][writers][numpy]") {
    if (!numpy_available()) {
        WARN("/usr/bin/python3 with numpy is not installed (python3-numpy): NumPy does not read the written files");
        return;
    }
    const cli::TempDir folder;
    const Matrix matrix = literal_matrix(), vector = literal_vector();
    Matrix values(2, 2);
    values << 0.1, -1e-300, 1.0 / 3.0, 6.02e23;
    const std::map<std::string, std::string> files = {
        {folder / "matrix.npy", write_npy(matrix, ElementType::float32)},
        {folder / "values.npy", write_npy(values, ElementType::float64)},
        {folder / "vector.npy", write_npy(vector, ElementType::float32, true)},
        {folder / "arrays.npz", write_npz({{"matrix", &matrix}, {"vector", &vector, true}, {"values", &values}}, ElementType::float64)},
        {folder / "arrays.safetensors", write_safetensors({{"values", &values}, {"vector", &vector, true}}, ElementType::float64, {{"k", "v"}})},
    };
    std::vector<std::string> words{"/usr/bin/python3", fixture_dir + "/read_with_numpy.py"};
    for (const auto& [path, bytes] : files) {
        std::ofstream(path, std::ios::binary) << bytes;
        words.push_back(path);
    }
    const auto r = cli::run_program(words);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const nlohmann::json found = nlohmann::json::parse(r.out);
    // What NumPy found: the dtype, the shape and the numbers (in C order).
    const auto check = [&](const std::string& file, const std::string& name, const std::string& dtype, const Matrix& m,
                           bool is_vector) {
        INFO(file << " " << name);
        const nlohmann::json& array = found.at(folder / file).at(name);
        CHECK(array["dtype"] == dtype);
        CHECK(array["shape"] == (is_vector ? nlohmann::json{m.cols()} : nlohmann::json{m.rows(), m.cols()}));
        std::vector<double> numbers(m.data(), m.data() + m.size());
        if (dtype == "<f4")
            for (double& x : numbers) x = static_cast<float>(x);
        CHECK(array["values"].get<std::vector<double>>() == numbers);
    };
    check("matrix.npy", "", "<f4", matrix, false);
    check("values.npy", "", "<f8", values, false);
    check("vector.npy", "", "<f4", vector, true);
    check("arrays.npz", "matrix", "<f8", matrix, false);
    check("arrays.npz", "vector", "<f8", vector, true);
    check("arrays.npz", "values", "<f8", values, false);
    check("arrays.safetensors", "values", "<f8", values, false);
    check("arrays.safetensors", "vector", "<f8", vector, true);
    CHECK(found.at(folder / "arrays.safetensors").at("__metadata__") == nlohmann::json{{"k", "v"}});
}

// --- the third round (issue 29): sizes checked before anything is sized, limits that limit ---

namespace {

// `content` deflated raw (no zlib or gzip wrapper), as zip's method 8 holds it, by zlib.
std::string deflated(const std::string& content) {
    z_stream stream{};
    REQUIRE(deflateInit2(&stream, 9, Z_DEFLATED, -MAX_WBITS, 9, Z_DEFAULT_STRATEGY) == Z_OK);
    std::string out(deflateBound(&stream, content.size()), '\0');
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(content.data()));
    stream.avail_in = static_cast<uInt>(content.size());
    stream.next_out = reinterpret_cast<Bytef*>(out.data());
    stream.avail_out = static_cast<uInt>(out.size());
    REQUIRE(deflate(&stream, Z_FINISH) == Z_STREAM_END);
    out.resize(stream.total_out);
    deflateEnd(&stream);
    return out;
}

// What reading `bytes` within a budget of `limit` bytes is refused with ("" when it is not).
std::string refusal_within(const std::string& bytes, std::uint64_t limit) {
    return errors::message_of([&] {
        MemoryBudget budget(MemoryLimit{limit, ""}, "t");
        auto owned = std::make_shared<const std::string>(bytes);
        (void)read_tensors(*owned, "t", owned, std::uint64_t{1} << 40, &budget);
    });
}

}  // namespace

TEST_CASE("an array of no numbers is refused before a matrix is sized for it", "[tensors]") {
    // shape (0, 2**63): no bytes of data, and a column count that no Eigen::Index holds. The
    // fuzzer's finding: to_matrix sized the matrix (a negative column count, an assertion in
    // the sanitizer build) before refusing the array.
    const std::string bytes = npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 9223372036854775808), }", "");
    CHECK(bytes.size() == 128);
    const TensorFile file = read(bytes);
    REQUIRE(file.tensors.size() == 1);
    CHECK(file.tensors[0].elements() == 0);
    CHECK(errors::message_of([&] { (void)file.tensors[0].to_matrix("t"); }) ==
          "t: the array has shape (0, 9223372036854775808): it holds no numbers");
    std::vector<double> none;
    CHECK(errors::message_of([&] { file.tensors[0].to_doubles("t", none.data()); }) ==
          "t: the array has shape (0, 9223372036854775808): it holds no numbers");
}

TEST_CASE("a number in a safetensors header beyond double is a located error", "[tensors][safetensors]") {
    // nlohmann refuses it with out_of_range (not a parse_error), without a place: it ended the
    // fuzzer in std::terminate and reached the command line as an internal error.
    const std::string data(4, '\0');
    CHECK(refusal(safetensors_file(R"({"a": {"dtype": "F32", "shape": [1e400], "data_offsets": [0, 4]}})", data)) ==
          "t: the safetensors header, at line 1, column 34: the number 1e400 does not fit a double");
    CHECK(refusal(safetensors_file(R"({"__metadata__": {"n": "1"}, "a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 1e999]}})",
                                   data)) == "t: the safetensors header, at line 1, column 86: the number 1e999 does not fit a double");
    // Ill-formed UTF-8 in a name is refused by nlohmann's lexer with its place.
    CHECK_THAT(refusal(safetensors_file("{\"a\xff\": {}}", "")),
               Contains("t: the safetensors header is not valid JSON: parse error at line 1, column 4"));
    // Nesting is limited where it goes too deep, not by the stack.
    CHECK(refusal(safetensors_file("{\"a\": " + std::string(100000, '[') + std::string(100000, ']') + "}", "")) ==
          "t: the safetensors header nests deeper than 64 levels");
}

TEST_CASE("reading binary arrays charges what it holds before it allocates", "[tensors][memory]") {
    SECTION("an npz member that claims more than it holds") {
        // 230 bytes or so that announce a member of 300 MiB: charged (and refused) before the
        // buffer is made, not allocated and cleared first.
        const std::string small = npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", std::string(8, '\0'));
        ZipMember member{"embeddings.npy", deflated(small), 8, std::uint64_t{300} << 20, crc32(small)};
        const std::string archive = zip({member});
        CHECK(archive.size() < 300);
        CHECK(refusal_within(archive, std::uint64_t{64} << 20) ==
              "t: reading it needs more than --max-memory 64.0 MiB; the input is too large for this limit");
        // Within a budget that allows it, the stream is found to end early.
        CHECK_THAT(refusal_within(archive, std::uint64_t{400} << 20), Contains("it inflates to 136 bytes, not the 314572800"));
    }
    SECTION("a deflate bomb") {
        // 64 MiB of zeros as a float32 vector deflate to about 64 KiB.
        const std::string big = npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (16777216,), }",
                                         std::string(std::size_t{64} << 20, '\0'));
        const std::string packed = deflated(big);
        CHECK(packed.size() < (std::size_t{128} << 10));
        const std::string archive = zip({ZipMember{"embeddings.npy", packed, 8, big.size(), crc32(big)}});
        CHECK(refusal_within(archive, std::uint64_t{32} << 20) ==
              "t: reading it needs more than --max-memory 32.0 MiB; the input is too large for this limit");
        CHECK(refusal_within(archive, std::uint64_t{80} << 20).empty());
    }
    SECTION("a safetensors header of many metadata keys") {
        // 300,000 keys in about 4 MiB: nlohmann's document, the check's set of keys and the
        // metadata's copy hold a few hundred bytes a key.
        std::string header = "{\"__metadata__\": {";
        for (int i = 0; i < 300000; ++i) header += fmt::format("{}\"k{}\": \"v\"", i ? ", " : "", i);
        header += "}}";
        const std::string file = safetensors_file(header, "");
        CHECK(refusal_within(file, std::uint64_t{20} << 20) ==
              "t: reading it needs more than --max-memory 20.0 MiB; the input is too large for this limit");
        CHECK(refusal_within(file, std::uint64_t{1} << 30).empty());
    }
}

TEST_CASE("archives and headers that claim more than they hold are refused within --max-memory", "[tensors][memory][resources]") {
    // Measured as the issue measured them: the peak resident memory of the run (getrusage of
    // the child) above the built-in example's, under the limit given.
    const long baseline = limited::run({"-s", "inputs"}).peak_kib;
    const cli::TempDir dir;
    // The input file is mapped, and its pages count in the resident set too.
    const auto refused_within = [&](const std::string& file, const char* limit, long limit_kib) {
        const auto r = limited::run({file, "--max-memory", limit});
        const long mapped_kib = static_cast<long>(std::filesystem::file_size(file) / 1024) + 1;
        INFO(file << " under --max-memory " << limit << ": peak " << r.peak_kib << " KiB, baseline " << baseline
                  << " KiB, the file " << mapped_kib << " KiB");
        cli::require_error_line(r, 1, "reading it needs more than --max-memory");
        CHECK(r.peak_kib - baseline < limit_kib + mapped_kib);
    };
    {   // about 230 bytes announcing a member of 300 MiB: it allocated and cleared them (305 MiB).
        const std::string small = npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", std::string(8, '\0'));
        std::ofstream(dir / "claims.npz", std::ios::binary)
            << zip({ZipMember{"embeddings.npy", deflated(small), 8, std::uint64_t{300} << 20, crc32(small)}});
        refused_within(dir / "claims.npz", "64M", 64 << 10);
    }
    {   // 64 KiB inflating to 64 MiB: inflated before anything was charged (69 MiB under 32M).
        const std::string big = npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (16777216,), }",
                                         std::string(std::size_t{64} << 20, '\0'));
        std::ofstream(dir / "bomb.npz", std::ios::binary) << zip({ZipMember{"embeddings.npy", deflated(big), 8, big.size(), crc32(big)}});
        refused_within(dir / "bomb.npz", "32M", 32 << 10);
    }
    {   // 300,000 metadata keys in about 4 MiB of header: 113 MiB under 20M.
        std::string header = "{\"__metadata__\": {";
        for (int i = 0; i < 300000; ++i) header += fmt::format("{}\"k{}\": \"v\"", i ? ", " : "", i);
        header += "}}";
        std::ofstream(dir / "keys.safetensors", std::ios::binary) << safetensors_file(header, "");
        refused_within(dir / "keys.safetensors", "20M", 20 << 10);
    }
}
