#include "input/target.hpp"

#include "core/error.hpp"
#include "input/json_text.hpp"
#include "input/source.hpp"
#include "input/tensors.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

namespace attntrace {
namespace {

Matrix from_tensors(const InputText& input, std::uint64_t max_bytes) {
    const TensorFile file = read_tensors(input.text, input.origin, input.storage, max_bytes);
    const Tensor* tensor = file.tensors.size() == 1 ? &file.tensors.front() : file.find("target");
    if (!tensor)
        throw DataError(fmt::format("{}: a target file of arrays holds one array, or one named \"target\"; this one "
                                    "holds {}",
                                    input.origin, file.tensors.empty() ? std::string("none") : fmt::format("{}", fmt::join(file.names(), ", "))));
    Matrix target = tensor->to_matrix(input.origin);
    require_intact(input.storage, input.origin);
    return target;
}

Matrix from_json(const InputText& input) {
    const Json doc = parse_json(input.text, input.origin);
    const Json* rows = &doc;
    if (doc.is_object() && doc.size() == 1 && doc.contains("target")) rows = &doc["target"];
    if (!is_packed_matrix(*rows) && !is_packed_numbers(*rows))
        throw DataError(fmt::format("{}: the target must be a matrix of numbers, an array of rows of one length (or "
                                    "{{\"target\": rows}}), found {}",
                                    input.origin, describe(*rows)));
    const bool one_row = is_packed_numbers(*rows);
    const auto count = static_cast<Eigen::Index>(rows_of(*rows));
    const auto cols = one_row ? count : static_cast<Eigen::Index>(packed_columns(*rows));
    Matrix target(one_row ? 1 : count, cols);
    copy_packed(*rows, target.data());
    require_intact(input.storage, input.origin);
    for (Eigen::Index r = 0; r < target.rows(); ++r)
        for (Eigen::Index c = 0; c < target.cols(); ++c)
            if (!std::isfinite(target(r, c)))
                throw DataError(fmt::format("{}: the target's row {}, column {} is not a finite number", input.origin,
                                            r + 1, c + 1));
    return target;
}

}  // namespace

Matrix read_target(const std::string& path, std::uint64_t max_bytes) {
    const InputText input = read_input(path, max_bytes);
    if (sniff_tensor_format(input.text)) return from_tensors(input, max_bytes);
    return from_json(input);
}

}  // namespace attntrace
