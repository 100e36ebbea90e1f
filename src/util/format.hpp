// <fmt/format.h>, with fmt 9's formatting engine compiled once. In fmt 9 (Debian 12) the
// engine behind fmt::format_to, detail::vformat_to<char>, is a template defined in the
// header, so every file that writes into a buffer with format_to compiled and optimised the
// whole of it (float and integer writers included): about 2.5 CPU-seconds a file, eight files
// of the core (docs/performance.md, "Build time: history and method"). libfmt.so already holds that instance (its
// format.cc instantiates it); declaring it extern makes the files call the library's copy, the
// same code. Only for fmt 9 linked as a library: the signature is fmt 9's, and a header-only
// fmt has no library to call. GCC only:
// clang mangles the instance's name otherwise than the GCC that built libfmt.so.9 (the
// dependent std::conditional in its signature), so a clang build would not find it (found by
// make sanitize, whose builds are clang's); clang builds compile the engine themselves.
#pragma once

#include <fmt/format.h>

#if FMT_VERSION >= 90000 && FMT_VERSION < 100000 && !defined(FMT_HEADER_ONLY) && !defined(__clang__)
FMT_BEGIN_NAMESPACE
namespace detail {
extern template FMT_API void vformat_to<char>(buffer<char>&, basic_string_view<char>,
                                             basic_format_args<FMT_BUFFER_CONTEXT(char)>, locale_ref);
}  // namespace detail
FMT_END_NAMESPACE
#endif
