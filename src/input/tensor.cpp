#include "input/tensor.hpp"

#include "core/error.hpp"
#include "input/source.hpp"
#include "input/tensor_bytes.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace attntrace {
namespace {

std::uint16_t byte_swapped(std::uint16_t x) { return __builtin_bswap16(x); }
std::uint32_t byte_swapped(std::uint32_t x) { return __builtin_bswap32(x); }
std::uint64_t byte_swapped(std::uint64_t x) { return __builtin_bswap64(x); }

// The element at `p` as its bit pattern, in this machine's byte order. `swap`: the file's
// order is the other one.
template <typename Bits>
Bits load_bits(const unsigned char* p, bool swap) {
    Bits bits;
    std::memcpy(&bits, p, sizeof bits);
    return swap ? byte_swapped(bits) : bits;
}

// IEEE 754 half precision: 1 sign bit, 5 exponent bits (bias 15), 10 fraction bits.
double half_to_double(std::uint16_t bits) {
    const int exponent = (bits >> 10) & 0x1f;
    const int fraction = bits & 0x3ff;
    double magnitude;
    if (exponent == 0)
        magnitude = std::ldexp(fraction, -24);  // zero and the subnormals: fraction · 2^-24
    else if (exponent == 31)
        magnitude = fraction ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
    else
        magnitude = std::ldexp(fraction + 1024, exponent - 25);  // (1 + fraction/1024) · 2^(exponent − 15)
    return (bits & 0x8000) ? -magnitude : magnitude;
}

// Fills `out` (rows × cols, row by row) from `data` in C order, or down the columns first
// when `column_major`; `decode` reads one element. C order is one pass over both.
template <typename Decode>
void fill(double* out, Eigen::Index rows, Eigen::Index cols, const unsigned char* data, std::size_t element,
          bool column_major, Decode decode) {
    const auto count = static_cast<std::size_t>(rows * cols);
    if (!column_major) {
        // Large arrays on every thread: the output's pages are first touched (and faulted in)
        // where they are written. Nothing here throws or allocates.
        const auto n = static_cast<std::int64_t>(count);
#pragma omp parallel for schedule(static) if (n >= (std::int64_t{1} << 20))
        for (std::int64_t i = 0; i < n; ++i) out[i] = decode(data + static_cast<std::size_t>(i) * element);
        return;
    }
    for (Eigen::Index r = 0; r < rows; ++r)
        for (Eigen::Index c = 0; c < cols; ++c)
            out[r * cols + c] = decode(data + static_cast<std::size_t>(c * rows + r) * element);
}

}  // namespace

std::string_view element_type_name(ElementType type) {
    switch (type) {
    case ElementType::float16: return "float16";
    case ElementType::bfloat16: return "bfloat16";
    case ElementType::float32: return "float32";
    case ElementType::float64: return "float64";
    }
    return "";
}

std::size_t element_size(ElementType type) {
    switch (type) {
    case ElementType::float16:
    case ElementType::bfloat16: return 2;
    case ElementType::float32: return 4;
    case ElementType::float64: return 8;
    }
    return 0;
}

std::string shape_text(const std::vector<std::size_t>& shape) {
    if (shape.size() == 1) return fmt::format("({},)", shape[0]);
    return fmt::format("({})", fmt::join(shape, ", "));
}

std::optional<std::size_t> data_bytes(const std::vector<std::size_t>& shape, ElementType type) {
    std::size_t total = element_size(type);
    for (const std::size_t dimension : shape)
        if (__builtin_mul_overflow(total, dimension, &total)) return std::nullopt;
    return total;
}

std::size_t Tensor::elements() const {
    std::size_t count = 1;
    for (const std::size_t dimension : shape) count *= dimension;
    return count;
}

namespace {

// What to_doubles and to_matrix refuse before they touch a byte or size anything: ranks
// other than 1 and 2, and arrays of no numbers (whose other dimension may be anything, even
// 2⁶³, since the bytes they take are 0).
void require_matrix_shape(const Tensor& t, std::string_view origin) {
    if (t.shape.empty() || t.shape.size() > 2)
        throw DataError(fmt::format("{}: {} has shape {}: expected a matrix (2 dimensions) or a vector (1)", origin,
                                    array_label(t.name), shape_text(t.shape)));
    if (t.elements() == 0)
        throw DataError(fmt::format("{}: {} has shape {}: it holds no numbers", origin, array_label(t.name),
                                    shape_text(t.shape)));
}

}  // namespace

void Tensor::to_doubles(std::string_view origin, double* out) const {
    const std::string label = array_label(name);
    require_matrix_shape(*this, origin);
    const bool vector = shape.size() == 1;
    const auto rows = static_cast<Eigen::Index>(vector ? 1 : shape[0]);
    const auto cols = static_cast<Eigen::Index>(vector ? shape[0] : shape[1]);
    const bool swap = big_endian != host_is_big_endian;
    const bool column_major = fortran_order && !vector;
    switch (type) {
    case ElementType::float16:
        fill(out, rows, cols, data, 2, column_major, [&](const unsigned char* p) { return half_to_double(load_bits<std::uint16_t>(p, swap)); });
        break;
    case ElementType::bfloat16:  // the upper half of a float32
        fill(out, rows, cols, data, 2, column_major, [&](const unsigned char* p) {
            return double(std::bit_cast<float>(std::uint32_t{load_bits<std::uint16_t>(p, swap)} << 16));
        });
        break;
    case ElementType::float32:
        fill(out, rows, cols, data, 4, column_major,
             [&](const unsigned char* p) { return double(std::bit_cast<float>(load_bits<std::uint32_t>(p, swap))); });
        break;
    case ElementType::float64:
        fill(out, rows, cols, data, 8, column_major,
             [&](const unsigned char* p) { return std::bit_cast<double>(load_bits<std::uint64_t>(p, swap)); });
        break;
    }
    // Zeros read in place of the pages of a file shortened meanwhile are no numbers of its own.
    require_intact(storage, origin);
    // The first value that is not finite, in C order (one pass; the message only when found).
    const auto count = static_cast<std::size_t>(rows * cols);
    bool finite = true;
    for (std::size_t i = 0; i < count; ++i) finite &= std::isfinite(out[i]);
    if (finite) return;
    for (Eigen::Index r = 0; r < rows; ++r)
        for (Eigen::Index c = 0; c < cols; ++c) {
            const double x = out[r * cols + c];
            if (std::isfinite(x)) continue;
            const std::string place = vector ? fmt::format("number {} (index [{}])", c + 1, c)
                                             : fmt::format("row {}, column {} (index [{}, {}])", r + 1, c + 1, r, c);
            throw DataError(fmt::format("{}: {} holds {} at {}: attntrace reads finite numbers only", origin, label, x,
                                        place));
        }
}

Matrix Tensor::to_matrix(std::string_view origin) const {
    require_matrix_shape(*this, origin);  // before sizing: (0, 2⁶³) holds no numbers, and no Index holds 2⁶³
    const bool vector = shape.size() == 1;
    Matrix m(static_cast<Eigen::Index>(vector ? 1 : shape[0]), static_cast<Eigen::Index>(vector ? shape[0] : shape[1]));
    to_doubles(origin, m.data());
    return m;
}

const float* Tensor::float32_view() const {
    if (type != ElementType::float32 || big_endian || host_is_big_endian || (fortran_order && shape.size() > 1)) return nullptr;
    if (reinterpret_cast<std::uintptr_t>(data) % alignof(float) != 0) return nullptr;
    return reinterpret_cast<const float*>(data);
}

std::string Tensor::order_note() const {
    if (!fortran_order || shape.size() < 2) return "";
    return fmt::format("{} was stored in Fortran order (column by column); it is read in C order (row by row), the "
                       "shape {} as the file gives it",
                       array_label(name), shape_text(shape));
}

const Tensor* TensorFile::find(std::string_view name) const {
    for (const Tensor& tensor : tensors)
        if (tensor.name == name) return &tensor;
    return nullptr;
}

std::vector<std::string> TensorFile::names() const {
    std::vector<std::string> names;
    for (const Tensor& tensor : tensors) names.push_back(tensor.name);
    return names;
}


std::string encoded_numbers(const Matrix& matrix, ElementType type, const std::string& label) {
    if (type != ElementType::float32 && type != ElementType::float64)
        throw std::invalid_argument(fmt::format("the writers write float32 or float64, not {}", element_type_name(type)));
    std::string out;
    out.reserve(static_cast<std::size_t>(matrix.size()) * element_size(type));
    for (Eigen::Index r = 0; r < matrix.rows(); ++r)
        for (Eigen::Index c = 0; c < matrix.cols(); ++c) {
            const double x = matrix(r, c);
            const auto refuse = [&](std::string_view why) {
                return DataError(fmt::format("{}: row {}, column {}: {} {}", label, r + 1, c + 1, x, why));
            };
            if (!std::isfinite(x)) throw refuse("is not a finite number");
            if (type == ElementType::float32) {
                const float f = static_cast<float>(x);
                if (!std::isfinite(f)) throw refuse("is beyond the range of float32 (about ±3.4e38)");
                put_little(out, std::bit_cast<std::uint32_t>(f));
            } else {
                put_little(out, std::bit_cast<std::uint64_t>(x));
            }
        }
    return out;
}

std::vector<std::size_t> written_shape(const Matrix& matrix, bool vector) {
    if (vector && matrix.rows() != 1)
        throw std::invalid_argument(fmt::format("a vector is written from a matrix of one row, not {}", matrix.rows()));
    if (vector) return {static_cast<std::size_t>(matrix.cols())};
    return {static_cast<std::size_t>(matrix.rows()), static_cast<std::size_t>(matrix.cols())};
}

}  // namespace attntrace
