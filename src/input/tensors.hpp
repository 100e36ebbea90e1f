// Binary arrays in: NumPy's .npy and .npz and the safetensors format, read without parsing
// text. Documented in docs/input-format.md ("Binary arrays"). Every header is validated
// before a byte of data is touched: the shape's product cannot overflow, the data the header
// announces is exactly what the file holds, nothing is read past the end.
#pragma once

#include "core/matrix.hpp"
#include "util/memory.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attntrace {

// The element types we read: NumPy '<f2'/'>f2', '<f4', '<f8' (and big-endian), safetensors
// F16, BF16, F32, F64.
enum class ElementType { float16, bfloat16, float32, float64 };

// "float16", "bfloat16", "float32", "float64": the names messages and the trace use.
std::string_view element_type_name(ElementType type);

// Bytes per element: 2, 2, 4, 8.
std::size_t element_size(ElementType type);

// A shape as NumPy prints it: "(3, 4)", "(5,)", "()".
std::string shape_text(const std::vector<std::size_t>& shape);

// One array: its shape and where its bytes are. The bytes live as long as `storage` does (a
// mapping of the file, or a buffer an .npz member was inflated into).
struct Tensor {
    std::string name;                 // the .npz member (without ".npy") or safetensors key; "" for a .npy
    std::vector<std::size_t> shape;   // C order (the last index moves fastest) once read
    ElementType type = ElementType::float64;
    bool big_endian = false;
    bool fortran_order = false;       // the .npy header's fortran_order: shape is as stated, data column-major
    const unsigned char* data = nullptr;
    std::size_t bytes = 0;            // = product(shape) · element size, checked by the readers
    std::shared_ptr<const void> storage;

    std::size_t elements() const;     // product of shape (1 for a 0-d array)

    // The numbers as doubles, in C order (a Fortran-ordered array transposed into it).
    // A 1-d array of n becomes 1 × n; a 2-d array rows × columns; other ranks are refused
    // (DataError naming `origin` and the array). Non-finite values (inf, NaN) are refused
    // too, naming the first one's row and column.
    Matrix to_matrix(std::string_view origin) const;
    // The same numbers into `out`, which holds elements() doubles: to_matrix without the matrix.
    void to_doubles(std::string_view origin, double* out) const;

    // A float32 little-endian C-order array read in place (no copy): its first element.
    // nullptr for any other type, order or endianness, and when the data is not 4-byte
    // aligned. (A 1-d array has one order: Fortran's is C's.)
    const float* float32_view() const;

    // For the trace: what to_matrix did to the order ("… stored in Fortran order …"), or ""
    // when the data was in C order already.
    std::string order_note() const;
};

// What one file held, in file order.
struct TensorFile {
    std::string origin;           // the path, for messages
    std::string format;           // "npy", "npz" or "safetensors"
    std::vector<Tensor> tensors;
    std::map<std::string, std::string> metadata;  // safetensors "__metadata__" (strings only)

    const Tensor* find(std::string_view name) const;  // nullptr when absent
    std::vector<std::string> names() const;
};

// Which format `bytes` are, from their first bytes: .npy ("\x93NUMPY"), .npz (a zip, "PK"),
// safetensors (an 8-byte little-endian header length, then '{'); nullopt for anything else
// (JSON, most likely).
std::optional<std::string> sniff_tensor_format(std::string_view bytes);

// Reads `bytes` (which stay valid as long as `storage`) in the format sniffed. Throws
// DataError "ORIGIN: …" on any malformed header, unsupported element type, truncated data,
// or (.npz) a member compressed other than stored or deflated, or not a .npy.
// `max_bytes` bounds what an .npz may inflate to (--max-input). `budget`, when given, is
// charged for what reading holds before it is allocated: each inflated member at the size
// its archive gives, the safetensors header's document and metadata, the list of arrays.
TensorFile read_tensors(std::string_view bytes, const std::string& origin, std::shared_ptr<const void> storage,
                        std::uint64_t max_bytes, MemoryBudget* budget = nullptr);

// Writers, for `attntrace generate` and for tests of the readers: little-endian float32 or
// float64, C order. Each returns the whole file.
struct NamedMatrix {
    std::string name;
    const Matrix* matrix;  // written as 2-d (rows × columns), or 1-d when `vector`
    bool vector = false;
};
std::string write_npy(const Matrix& matrix, ElementType type, bool vector = false);
std::string write_npz(const std::vector<NamedMatrix>& arrays, ElementType type);  // stored, not deflated
std::string write_safetensors(const std::vector<NamedMatrix>& arrays, ElementType type,
                              const std::map<std::string, std::string>& metadata = {});

}  // namespace attntrace
