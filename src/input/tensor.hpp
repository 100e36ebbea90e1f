// One binary array as attntrace reads it from a .npy, .npz or safetensors file: its element
// type, its shape and where its bytes are, turned into doubles when it is used. The readers of
// each format (npy.hpp, npz.hpp, safetensors.hpp) make these; tensors.hpp chooses the reader.
#pragma once

#include "core/matrix.hpp"

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

// The bytes an array of `shape` and `type` takes, or nullopt when counting them overflows
// 64 bits (a header can announce a shape such as (2**40, 2**40)).
std::optional<std::size_t> data_bytes(const std::vector<std::size_t>& shape, ElementType type);

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

// An array to write, for the writers of .npz and safetensors files.
struct NamedMatrix {
    std::string name;
    const Matrix* matrix;  // written as 2-d (rows × columns), or 1-d when `vector`
    bool vector = false;
};

// For the writers of every format: the numbers of `matrix` as little-endian float32 or
// float64, row by row. A value that is not finite, or that float32 cannot hold, is refused
// (DataError; `label` names the matrix).
std::string encoded_numbers(const Matrix& matrix, ElementType type, const std::string& label);
// The shape written for `matrix`: rows × columns, or (columns,) for a `vector` of one row.
std::vector<std::size_t> written_shape(const Matrix& matrix, bool vector);

}  // namespace attntrace
