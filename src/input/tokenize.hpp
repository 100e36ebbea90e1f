// Splitting a sentence into the words that become tokens.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace attntrace {

struct Word {
    std::string text;       // as spelled in the sentence
    bool punctuation = false;
};

// Splits at white space, then peels punctuation off the words: "step." → "step", ".".
// An apostrophe or hyphen between letters stays inside the word ("teacher's", "well-known").
// Letters outside ASCII (é, ß, 日) are word characters; common Unicode punctuation (— “ ” …)
// is punctuation. The caller decides which punctuation to keep.
// Stops after `max_words` words (the caller refuses a sentence that reaches it).
std::vector<Word> split_sentence(std::string_view sentence, std::size_t max_words = static_cast<std::size_t>(-1));

}  // namespace attntrace
