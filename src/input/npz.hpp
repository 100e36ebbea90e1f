// NumPy's .npz: a zip archive of .npy files, stored (np.savez) or deflated
// (np.savez_compressed), zip64 or not. Read from its end: the end-of-central-directory record
// gives the central directory, which lists each member with its sizes, CRC-32 and where its
// local header is; the data follows the local header.
#pragma once

#include "input/tensor.hpp"
#include "util/memory.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace attntrace {

// The members of the archive in `bytes` into `file` (whose origin names it), each a Tensor
// kept in `storage` (the file's bytes) or in the buffer it was inflated into. Throws DataError
// for a damaged or truncated archive, a member compressed other than stored or deflated, one
// that is not a .npy, or members inflating to more than `max_bytes` (--max-input). `budget`,
// when given, is charged for each inflated member at the size its archive gives, before it is
// allocated, and for the list of arrays.
void read_npz(std::string_view bytes, std::shared_ptr<const void> storage, std::uint64_t max_bytes, TensorFile& file,
              MemoryBudget* budget);

// A whole .npz of `arrays` (each a stored .npy member, not deflated), for `attntrace generate`
// and for tests of the readers.
std::string write_npz(const std::vector<NamedMatrix>& arrays, ElementType type);

}  // namespace attntrace
