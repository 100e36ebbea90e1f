// The whole message an input is refused with, for tests that compare messages exactly.
#pragma once

#include "core/error.hpp"

#include <string>

namespace errors {

// What `read()` throws as a DataError; "" when it throws nothing.
template <typename Read>
std::string message_of(Read&& read) {
    try {
        read();
    } catch (const attntrace::DataError& e) {
        return e.what();
    }
    return "";
}

}  // namespace errors
