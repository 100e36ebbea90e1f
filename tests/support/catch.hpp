// Catch2 for the tests, v2 (Debian 12's catch2) or v3 (Debian 13's): one include, so that the
// tests build with either. tests/CMakeLists.txt finds the version and defines
// ATTNTRACE_CATCH3 for v3, whose headers are split and whose string matchers were renamed.
#pragma once

#ifdef ATTNTRACE_CATCH3
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <string>

using Catch::Approx;
namespace Catch {
// v2's names for the string matchers the tests use. (v3's Matchers::Contains is about ranges.)
inline Matchers::StringContainsMatcher Contains(const std::string& text, CaseSensitive sensitivity = CaseSensitive::Yes) {
    return Matchers::ContainsSubstring(text, sensitivity);
}
using Matchers::EndsWith;
using Matchers::StartsWith;
}  // namespace Catch
#else
#include <catch2/catch.hpp>
#endif
