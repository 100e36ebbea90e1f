#include "input/npz.hpp"

#include "core/error.hpp"
#include "input/npy.hpp"
#include "input/tensor_bytes.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <limits>
#include <set>
#include <stdexcept>

namespace attntrace {
namespace {

constexpr std::uint32_t local_signature = 0x04034b50;
constexpr std::uint32_t central_signature = 0x02014b50;
constexpr std::uint32_t end_signature = 0x06054b50;
constexpr std::uint32_t zip64_end_signature = 0x06064b50;
constexpr std::uint32_t zip64_locator_signature = 0x07064b50;
constexpr std::size_t local_header_size = 30, central_header_size = 46, end_record_size = 22;
constexpr std::size_t zip64_end_size = 56, zip64_locator_size = 20;
constexpr std::uint32_t zip64_mark = 0xffffffff;  // "see the zip64 extra field"
constexpr std::uint16_t dos_date_1980 = 0x21;      // 1980-01-01, the date NumPy gives members too

struct Member {
    std::string name;
    std::uint16_t method = 0;
    std::uint32_t crc = 0;
    std::uint64_t compressed = 0, size = 0, local_offset = 0;
};

std::string method_name(std::uint16_t method) {
    switch (method) {
    case 1: return "shrink";
    case 2:
    case 3:
    case 4:
    case 5: return "reduce";
    case 6: return "implode";
    case 9: return "deflate64";
    case 12: return "bzip2";
    case 14: return "LZMA";
    case 93: return "zstd";
    case 95: return "xz";
    case 96: return "JPEG";
    case 97: return "WavPack";
    case 98: return "PPMd";
    case 99: return "AES encryption";
    default: return "an unknown method";
    }
}

class ZipReader {
public:
    ZipReader(std::string_view bytes, const std::string& origin) : bytes_(bytes), origin_(origin) { read_end_record(); }

    // The central directory, checked: one disk, no encryption, stored or deflated .npy
    // members of distinct names, all of them together no larger than `max_bytes`.
    std::vector<Member> members(std::uint64_t max_bytes, MemoryBudget* budget) const {
        std::vector<Member> members;
        std::set<std::string> names;
        std::uint64_t total = 0;
        std::size_t at = directory_offset_;
        const std::size_t end = directory_offset_ + directory_size_;
        for (std::uint64_t i = 0; i < entries_; ++i) {
            if (end - at < central_header_size || little<std::uint32_t>(bytes_, at) != central_signature)
                fail(fmt::format("entry {} of the central directory, at byte {}, is damaged (no entry signature)", i + 1, at));
            Member member;
            const std::uint16_t flags = little<std::uint16_t>(bytes_, at + 8);
            member.method = little<std::uint16_t>(bytes_, at + 10);
            member.crc = little<std::uint32_t>(bytes_, at + 16);
            member.compressed = little<std::uint32_t>(bytes_, at + 20);
            member.size = little<std::uint32_t>(bytes_, at + 24);
            const std::size_t name_length = little<std::uint16_t>(bytes_, at + 28);
            const std::size_t extra_length = little<std::uint16_t>(bytes_, at + 30);
            const std::size_t comment_length = little<std::uint16_t>(bytes_, at + 32);
            std::uint64_t disk = little<std::uint16_t>(bytes_, at + 34);
            member.local_offset = little<std::uint32_t>(bytes_, at + 42);
            if (end - at - central_header_size < name_length + extra_length + comment_length)
                fail(fmt::format("entry {} of the central directory runs past the directory's end", i + 1));
            member.name = std::string(bytes_.substr(at + central_header_size, name_length));
            const std::string shown = printable(member.name);
            // The zip64 extra field holds, in this order, those of the four values whose
            // usual field is all ones.
            read_zip64(bytes_.substr(at + central_header_size + name_length, extra_length), shown,
                       {{&member.size, member.size == zip64_mark, 8},
                        {&member.compressed, member.compressed == zip64_mark, 8},
                        {&member.local_offset, member.local_offset == zip64_mark, 8},
                        {&disk, disk == 0xffff, 4}});
            at += central_header_size + name_length + extra_length + comment_length;

            if (flags & 0x41) fail(fmt::format("member '{}' is encrypted: attntrace reads unencrypted archives", shown));
            if (disk != 0) multi_disk();
            if (member.method != 0 && member.method != 8)
                fail(fmt::format("member '{}' is compressed with {} (method {}): attntrace reads stored (method 0) and "
                                 "deflated (method 8) members, as np.savez and np.savez_compressed write them",
                                 shown, method_name(member.method), member.method));
            if (!member.name.ends_with(".npy"))
                fail(fmt::format("member '{}' is not a .npy file: an .npz holds only .npy members", shown));
            if (member.name.size() == 4) fail("member '.npy' has no name before its .npy");
            if (!names.insert(member.name).second) fail(fmt::format("two members are named '{}'", shown));
            // The member, its name twice (here and in the set of names) and the set's node.
            if (budget) budget->charge(sizeof(Member) + 80 + 2 * (member.name.size() > 15 ? member.name.size() + 17 : 0));
            if (__builtin_add_overflow(total, member.size, &total)) total = std::numeric_limits<std::uint64_t>::max();
            members.push_back(std::move(member));
        }
        if (at != end)
            fail(fmt::format("the central directory is {} bytes long, but its {} entries take {}", directory_size_,
                             entries_, at - directory_offset_));
        if (total > max_bytes)
            fail(fmt::format("the members inflate to {} bytes in all, more than the limit of {} set by --max-input",
                             total, max_bytes));
        return members;
    }

    // A member's bytes as they are in the archive (stored or compressed), after its local
    // header, which must agree with the central directory.
    std::string_view packed_data(const Member& member) const {
        const std::string shown = printable(member.name);
        const std::size_t limit = directory_offset_;  // members lie before the central directory
        if (member.local_offset > limit || limit - member.local_offset < local_header_size ||
            little<std::uint32_t>(bytes_, member.local_offset) != local_signature)
            fail(fmt::format("member '{}': no local header at byte {}, where the central directory places it", shown,
                             member.local_offset));
        const std::size_t at = member.local_offset;
        const std::uint16_t flags = little<std::uint16_t>(bytes_, at + 6);
        const std::uint16_t method = little<std::uint16_t>(bytes_, at + 8);
        const std::uint32_t crc = little<std::uint32_t>(bytes_, at + 14);
        std::uint64_t compressed = little<std::uint32_t>(bytes_, at + 18);
        std::uint64_t size = little<std::uint32_t>(bytes_, at + 22);
        const std::size_t name_length = little<std::uint16_t>(bytes_, at + 26);
        const std::size_t extra_length = little<std::uint16_t>(bytes_, at + 28);
        if (limit - at - local_header_size < name_length + extra_length)
            fail(fmt::format("member '{}': its local header runs into the central directory", shown));
        const std::string_view name = bytes_.substr(at + local_header_size, name_length);
        if (name != member.name)
            fail(fmt::format("member '{}': its local header names it '{}'", shown, printable(name)));
        if (flags & 0x41) fail(fmt::format("member '{}' is encrypted: attntrace reads unencrypted archives", shown));
        if (method != member.method)
            fail(fmt::format("member '{}': its local header gives compression method {}, the central directory {}", shown,
                             method, member.method));
        // Bit 3: sizes and CRC-32 come after the data (a data descriptor) and are 0 here; else
        // they are given here too, the sizes in the zip64 extra field when they are all ones
        // (NumPy asks for zip64 local headers for every member).
        if (!(flags & 0x08)) {
            read_zip64(bytes_.substr(at + local_header_size + name_length, extra_length), shown,
                       {{&size, size == zip64_mark, 8}, {&compressed, compressed == zip64_mark, 8}});
            if (crc != member.crc || size != member.size || compressed != member.compressed)
                fail(fmt::format("member '{}': its local header and the central directory disagree on its sizes or CRC-32",
                                 shown));
        }
        const std::size_t start = at + local_header_size + name_length + extra_length;
        if (member.compressed > limit - start)
            fail(fmt::format("member '{}': its {} bytes of data run past the start of the central directory", shown,
                             member.compressed));
        return bytes_.substr(start, member.compressed);
    }

private:
    struct Zip64Field {
        std::uint64_t* value;
        bool wanted;        // its usual field is all ones
        std::size_t width;  // 8 bytes, 4 for a disk number
    };

    [[noreturn]] void fail(const std::string& message) const { throw DataError(fmt::format("{}: {}", origin_, message)); }
    [[noreturn]] void multi_disk() const {
        fail("a multi-disk (split) zip archive: attntrace reads archives of one file");
    }

    // The extra fields are (id, length, data) blocks; the zip64 one has id 1.
    void read_zip64(std::string_view extra, const std::string& member, std::initializer_list<Zip64Field> fields) const {
        if (std::none_of(fields.begin(), fields.end(), [](const Zip64Field& f) { return f.wanted; })) return;
        for (std::size_t at = 0; at + 4 <= extra.size();) {
            const std::uint16_t id = little<std::uint16_t>(extra, at);
            const std::size_t length = little<std::uint16_t>(extra, at + 2);
            if (length > extra.size() - at - 4) fail(fmt::format("member '{}': an extra field runs past its end", member));
            if (id == 1) {
                std::size_t from = at + 4;
                for (const Zip64Field& field : fields) {
                    if (!field.wanted) continue;
                    if (at + 4 + length - from < field.width)
                        fail(fmt::format("member '{}': its zip64 extra field is too short for the sizes it must hold",
                                         member));
                    *field.value = field.width == 8 ? little<std::uint64_t>(extra, from) : little<std::uint32_t>(extra, from);
                    from += field.width;
                }
                return;
            }
            at += 4 + length;
        }
        // No zip64 field: the values of all ones stand as they are.
    }

    // The end record is within the last 22 + 65,535 bytes (its comment is at most 65,535):
    // the last signature whose comment reaches exactly to the end of the file.
    void read_end_record() {
        if (bytes_.size() < end_record_size)
            fail("truncated zip archive: shorter than its end-of-central-directory record (22 bytes)");
        const std::size_t lowest = bytes_.size() > end_record_size + 0xffff ? bytes_.size() - end_record_size - 0xffff : 0;
        std::size_t end = std::string_view::npos;
        for (std::size_t at = bytes_.size() - end_record_size + 1; at-- > lowest;) {
            if (little<std::uint32_t>(bytes_, at) == end_signature &&
                at + end_record_size + little<std::uint16_t>(bytes_, at + 20) == bytes_.size()) {
                end = at;
                break;
            }
        }
        if (end == std::string_view::npos)
            fail("truncated or not a zip archive: no end-of-central-directory record in its last 65,557 bytes");
        std::uint64_t disk = little<std::uint16_t>(bytes_, end + 4);
        std::uint64_t directory_disk = little<std::uint16_t>(bytes_, end + 6);
        std::uint64_t entries_here = little<std::uint16_t>(bytes_, end + 8);
        entries_ = little<std::uint16_t>(bytes_, end + 10);
        directory_size_ = little<std::uint32_t>(bytes_, end + 12);
        directory_offset_ = little<std::uint32_t>(bytes_, end + 16);
        std::size_t directory_limit = end;  // the directory ends before the end record(s)
        // A zip64 locator just before the end record points at the zip64 end record, whose
        // 64-bit counts and offsets replace the ones above.
        if (end >= zip64_locator_size && little<std::uint32_t>(bytes_, end - zip64_locator_size) == zip64_locator_signature) {
            const std::size_t locator = end - zip64_locator_size;
            if (little<std::uint32_t>(bytes_, locator + 4) != 0 || little<std::uint32_t>(bytes_, locator + 16) > 1) multi_disk();
            const std::uint64_t record = little<std::uint64_t>(bytes_, locator + 8);
            if (record > locator || locator - record < zip64_end_size ||
                little<std::uint32_t>(bytes_, record) != zip64_end_signature)
                fail(fmt::format("the zip64 end-of-central-directory record is not at byte {}, where its locator places it",
                                 record));
            disk = little<std::uint32_t>(bytes_, record + 16);
            directory_disk = little<std::uint32_t>(bytes_, record + 20);
            entries_here = little<std::uint64_t>(bytes_, record + 24);
            entries_ = little<std::uint64_t>(bytes_, record + 32);
            directory_size_ = little<std::uint64_t>(bytes_, record + 40);
            directory_offset_ = little<std::uint64_t>(bytes_, record + 48);
            directory_limit = record;
        }
        if (disk != 0 || directory_disk != 0 || entries_here != entries_) multi_disk();
        if (directory_offset_ > directory_limit || directory_size_ > directory_limit - directory_offset_)
            fail(fmt::format("the central directory ({} bytes at byte {}) runs past the end record at byte {}: the archive "
                             "is truncated or damaged",
                             directory_size_, directory_offset_, directory_limit));
    }

    std::string_view bytes_;
    const std::string& origin_;
    std::uint64_t entries_ = 0, directory_size_ = 0, directory_offset_ = 0;
};

// What a deflated member is inflated into: allocated at the size the archive gives, and not
// cleared first, so that pages the stream never reaches are never touched.
struct InflatedBytes {
    std::unique_ptr<unsigned char[]> bytes;
    std::size_t size = 0;
};

// A deflated member (raw deflate, no zlib or gzip wrapper) inflated into a buffer of its own,
// which must come out exactly `size` bytes long. The buffer is charged to `budget` before it
// is allocated: a small archive may announce a large member (a "deflate bomb", or a lie).
std::shared_ptr<InflatedBytes> inflated(std::string_view packed, std::uint64_t size, const std::string& where,
                                        MemoryBudget* budget) {
    const auto fail = [&](const std::string& message) -> DataError {
        return DataError(fmt::format("{}: {}", where, message));
    };
    if (size >= std::numeric_limits<std::size_t>::max() / 2)
        throw fail(fmt::format("the archive gives it {} bytes, more than this machine can address", size));
    if (budget) budget->charge(size + 1);
    // One byte more than announced, so that a stream that goes on beyond `size` shows.
    auto out = std::make_shared<InflatedBytes>();
    out->bytes.reset(new unsigned char[size + 1]);  // not value-initialised: untouched until inflated
    out->size = size;
    z_stream stream{};
    if (::inflateInit2(&stream, -MAX_WBITS) != Z_OK) throw fail("zlib could not start inflating");
    const std::unique_ptr<z_stream, int (*)(z_stream*)> end(&stream, &::inflateEnd);
    // zlib counts in 32 bits: the input and the output are handed over in chunks.
    constexpr std::size_t chunk = std::size_t{1} << 30;
    std::size_t in_left = packed.size(), out_left = size + 1;
    stream.next_in = const_cast<unsigned char*>(as_bytes(packed));
    stream.next_out = out->bytes.get();
    while (true) {
        if (stream.avail_in == 0) {
            stream.avail_in = static_cast<uInt>(std::min(in_left, chunk));
            in_left -= stream.avail_in;
        }
        if (stream.avail_out == 0) {
            stream.avail_out = static_cast<uInt>(std::min(out_left, chunk));
            out_left -= stream.avail_out;
        }
        const int status = ::inflate(&stream, Z_NO_FLUSH);
        if (stream.total_out > size)
            throw fail(fmt::format("it inflates to more than the {} bytes the archive gives as its size", size));
        if (status == Z_STREAM_END) break;
        if (status == Z_OK) continue;
        if (status == Z_BUF_ERROR && stream.avail_in == 0 && in_left == 0)
            throw fail("its compressed data ends before the deflate stream does: the archive is truncated or damaged");
        if (status == Z_MEM_ERROR) throw fail("out of memory while inflating it");
        throw fail(fmt::format("its deflated data is damaged ({})", stream.msg ? printable(stream.msg) : "zlib error"));
    }
    if (stream.total_out != size)
        throw fail(fmt::format("it inflates to {} bytes, not the {} the archive gives as its size", stream.total_out, size));
    if (stream.avail_in + in_left != 0)
        throw fail(fmt::format("{} bytes of compressed data follow the end of its deflate stream", stream.avail_in + in_left));
    return out;
}

std::uint32_t crc32_of(std::string_view bytes) {
    return static_cast<std::uint32_t>(::crc32_z(0, as_bytes(bytes), bytes.size()));
}

// The CRC-32 and the bytes of one member, for the writer.
void add_stored_member(std::string& out, std::string& directory, const std::string& name, const std::string& content) {
    const std::uint64_t offset = out.size();
    if (name.size() > 0xffff) throw std::invalid_argument("an .npz member name longer than 65,535 bytes");
    if (offset + local_header_size + name.size() + content.size() >= zip64_mark)
        throw DataError(fmt::format("the .npz would be larger than 4 GiB at member '{}': attntrace writes archives without "
                                    "zip64, up to 4 GiB",
                                    printable(name)));
    const std::uint32_t crc = crc32_of(content);
    const auto size = static_cast<std::uint32_t>(content.size());
    const bool utf8_name = std::any_of(name.begin(), name.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
    const std::uint16_t flags = utf8_name ? 0x0800 : 0;  // bit 11: the name is UTF-8
    // The fields both headers share, from the version needed to the lengths of name and extra.
    std::string common;
    put_little<std::uint16_t>(common, 20);  // version 2.0 needed to extract
    put_little<std::uint16_t>(common, flags);
    put_little<std::uint16_t>(common, 0);  // stored
    put_little<std::uint16_t>(common, 0);  // time 00:00
    put_little<std::uint16_t>(common, dos_date_1980);
    put_little<std::uint32_t>(common, crc);
    put_little<std::uint32_t>(common, size);  // compressed
    put_little<std::uint32_t>(common, size);  // uncompressed
    put_little<std::uint16_t>(common, static_cast<std::uint16_t>(name.size()));
    put_little<std::uint16_t>(common, 0);  // no extra field

    put_little<std::uint32_t>(out, local_signature);
    out += common;
    out += name;
    out += content;

    put_little<std::uint32_t>(directory, central_signature);
    put_little<std::uint16_t>(directory, (3 << 8) | 20);  // made by: Unix, zip 2.0
    directory += common;
    put_little<std::uint16_t>(directory, 0);                     // no comment
    put_little<std::uint16_t>(directory, 0);                     // disk 0
    put_little<std::uint16_t>(directory, 0);                     // internal attributes: binary
    put_little<std::uint32_t>(directory, std::uint32_t{0100644} << 16);  // a regular file, rw-r--r--
    put_little<std::uint32_t>(directory, static_cast<std::uint32_t>(offset));
    directory += name;
}

}  // namespace

void read_npz(std::string_view bytes, std::shared_ptr<const void> storage, std::uint64_t max_bytes, TensorFile& file,
              MemoryBudget* budget) {
    const ZipReader zip(bytes, file.origin);
    for (const Member& member : zip.members(max_bytes, budget)) {
        const std::string where = fmt::format("{}: member '{}'", file.origin, printable(member.name));
        const std::string_view packed = zip.packed_data(member);
        std::shared_ptr<InflatedBytes> buffer;  // what a deflated member was inflated into
        std::string_view content = packed;
        if (member.method == 8) {
            buffer = inflated(packed, member.size, where, budget);
            content = std::string_view(reinterpret_cast<const char*>(buffer->bytes.get()), buffer->size);
        } else if (packed.size() != member.size) {
            throw DataError(fmt::format("{}: stored uncompressed, yet its size in the archive ({} bytes) is not its size "
                                        "({} bytes)",
                                        where, packed.size(), member.size));
        }
        const std::uint32_t crc = crc32_of(content);
        if (crc != member.crc)
            throw DataError(fmt::format("{}: CRC-32 mismatch: the archive records {:08x}, the data gives {:08x}; the file is "
                                        "damaged",
                                        where, member.crc, crc));
        Tensor tensor = read_npy(content, where);
        tensor.name = member.name.substr(0, member.name.size() - 4);
        // In place (in the file's bytes, or the buffer it was inflated into) when the data is
        // aligned for its elements; else a copy that is.
        if (reinterpret_cast<std::uintptr_t>(tensor.data) % element_size(tensor.type) == 0) {
            tensor.storage = buffer ? std::shared_ptr<const void>(buffer) : storage;
        } else {
            if (budget) budget->charge(tensor.bytes);
            auto copy = std::make_shared<std::vector<unsigned char>>(tensor.data, tensor.data + tensor.bytes);
            tensor.data = copy->data();
            tensor.storage = std::move(copy);
        }
        if (budget) budget->charge(sizeof(Tensor) + tensor.name.size() + tensor.shape.size() * sizeof(std::size_t));
        file.tensors.push_back(std::move(tensor));
    }
}

std::string write_npz(const std::vector<NamedMatrix>& arrays, ElementType type) {
    std::string out, directory;
    std::set<std::string> names;
    for (const NamedMatrix& array : arrays) {
        if (array.name.empty() || !array.matrix)
            throw std::invalid_argument("write_npz: every array needs a name and a matrix");
        if (!names.insert(array.name).second)
            throw std::invalid_argument(fmt::format("write_npz: two arrays named '{}'", array.name));
        const std::string content = npy_header(type == ElementType::float32 ? "<f4" : "<f8", written_shape(*array.matrix, array.vector)) +
                                    encoded_numbers(*array.matrix, type, printable(array.name));
        add_stored_member(out, directory, array.name + ".npy", content);
    }
    if (arrays.size() > 0xfffe || out.size() + directory.size() + end_record_size >= zip64_mark)
        throw DataError("the .npz would be larger than 4 GiB, or hold more than 65,534 arrays: attntrace writes archives "
                        "without zip64");
    const auto directory_offset = static_cast<std::uint32_t>(out.size());
    const auto count = static_cast<std::uint16_t>(arrays.size());
    out += directory;
    put_little<std::uint32_t>(out, end_signature);
    put_little<std::uint16_t>(out, 0);  // this disk
    put_little<std::uint16_t>(out, 0);  // the directory's disk
    put_little<std::uint16_t>(out, count);
    put_little<std::uint16_t>(out, count);
    put_little<std::uint32_t>(out, static_cast<std::uint32_t>(directory.size()));
    put_little<std::uint32_t>(out, directory_offset);
    put_little<std::uint16_t>(out, 0);  // no comment
    return out;
}

}  // namespace attntrace
