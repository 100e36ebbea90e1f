// Splitting a sentence into the words that become tokens.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace attntrace {

// Words as spelled in the sentence, and which of them are punctuation marks (the caller
// decides which punctuation to keep).
struct SplitWords {
    std::vector<std::string> texts;
    std::vector<bool> punctuation;

    std::size_t size() const { return texts.size(); }
    // Keeps the words for which keep(i) is true, in order.
    template <typename Keep>
    void keep_if(Keep&& keep) {
        std::size_t kept = 0;
        for (std::size_t i = 0; i < texts.size(); ++i)
            if (keep(i)) {
                if (kept != i) texts[kept] = std::move(texts[i]), punctuation[kept] = punctuation[i];
                ++kept;
            }
        texts.resize(kept);
        punctuation.resize(kept);
    }
};

// Splits at white space, then peels punctuation off the words: "step." → "step", ".".
// An apostrophe or hyphen between letters stays inside the word ("teacher's", "well-known").
// Letters outside ASCII (é, ß, 日) are word characters; common Unicode punctuation (— “ ” …)
// is punctuation. A special token in brackets ("<pad>", "</s>", "<|endoftext|>", "[CLS]": no
// white space inside, a letter or digit among what it encloses) is one word, not punctuation,
// wherever it stands ("cat<pad>." → "cat", "<pad>", "."). Stops after `max_words` words (the caller refuses a sentence that reaches
// it); the words are counted first, so their lists are allocated once, at their size.
SplitWords split_sentence(std::string_view sentence, std::size_t max_words = static_cast<std::size_t>(-1));

}  // namespace attntrace
