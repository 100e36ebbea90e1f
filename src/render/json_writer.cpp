#include "render/json_writer.hpp"

#include <nlohmann/detail/conversions/to_chars.hpp>
#include <nlohmann/detail/macro_unscope.hpp>

namespace attntrace {

JsonWriter& JsonWriter::real(double value) {
    item();
    char text[64];  // nlohmann_json's own buffer for a number
    const char* end = nlohmann::detail::to_chars(text, text + sizeof text, value);
    out_.append(static_cast<const char*>(text), end);
    return *this;
}

}  // namespace attntrace
