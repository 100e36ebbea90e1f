// The keys of attntrace step: what a key press is, read from a terminal's bytes or from a
// script of key names (--keys), so that a test replays exactly what a learner types.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attntrace::stepper {

// A key the stepper knows: a named one, or a printable character (`text`, one UTF-8 character).
struct Key {
    enum Kind { character, up, down, left, right, tab, back_tab, enter, escape, backspace, page_up, page_down, home, end, interrupt };
    Kind kind = character;
    std::string text;  // the character, for Kind::character

    bool is(char c) const { return kind == character && text.size() == 1 && text[0] == c; }
};

// The name a script writes for `key`: "j", "Enter", "Tab", "S-Tab", "Up", "Space", "C-c" ….
std::string key_name(const Key& key);

// A script of keys: names separated by spaces or new lines; "…" (in double quotes) types each
// character between them; # starts a comment to the end of its line. Throws UsageError naming
// the first word that is no key.
std::vector<Key> parse_key_script(std::string_view script);

// Keys decoded from a terminal's bytes as they arrive: escape sequences of arrows, Shift-Tab,
// Page Up/Down, Home and End; Tab, Enter, Backspace, Ctrl-C; an escape alone; UTF-8 characters.
// `pending` keeps a sequence cut between two reads.
std::vector<Key> decode_terminal_bytes(std::string_view bytes, std::string& pending);

}  // namespace attntrace::stepper
