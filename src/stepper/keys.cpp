#include "stepper/keys.hpp"

#include "core/error.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

#include <array>
#include <utility>

namespace attntrace::stepper {
namespace {

constexpr std::array<std::pair<Key::Kind, std::string_view>, 14> names{{
    {Key::up, "Up"},
    {Key::down, "Down"},
    {Key::left, "Left"},
    {Key::right, "Right"},
    {Key::tab, "Tab"},
    {Key::back_tab, "S-Tab"},
    {Key::enter, "Enter"},
    {Key::escape, "Esc"},
    {Key::backspace, "Backspace"},
    {Key::page_up, "PageUp"},
    {Key::page_down, "PageDown"},
    {Key::home, "Home"},
    {Key::end, "End"},
    {Key::interrupt, "C-c"},
}};

Key character(std::string text) { return Key{Key::character, std::move(text)}; }

// One word of a script as a key, or nothing.
std::optional<Key> key_of_word(std::string_view word) {
    for (const auto& [kind, name] : names)
        if (word == name) return Key{kind, {}};
    if (word == "Space") return character(" ");
    if (!word.empty() && utf8_sequence_length(word) == word.size()) return character(std::string(word));
    return std::nullopt;
}

}  // namespace

std::string key_name(const Key& key) {
    if (key.kind == Key::character) return key.text == " " ? "Space" : key.text;
    for (const auto& [kind, name] : names)
        if (kind == key.kind) return std::string(name);
    return "?";
}

std::vector<Key> parse_key_script(std::string_view script) {
    std::vector<Key> keys;
    std::size_t i = 0;
    while (i < script.size()) {
        const char c = script[i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            ++i;
        } else if (c == '#') {
            while (i < script.size() && script[i] != '\n') ++i;
        } else if (c == '"') {
            const std::size_t close = script.find('"', i + 1);
            if (close == std::string_view::npos) throw UsageError("--keys: a \" opens text that no \" closes");
            for (std::size_t at = i + 1; at < close;) {
                const std::size_t length = std::max<std::size_t>(1, utf8_sequence_length(script.substr(at)));
                keys.push_back(character(std::string(script.substr(at, length))));
                at += length;
            }
            i = close + 1;
        } else {
            std::size_t end = i;
            while (end < script.size() && script[end] != ' ' && script[end] != '\t' && script[end] != '\n' && script[end] != '\r')
                ++end;
            const std::string_view word = script.substr(i, end - i);
            const auto key = key_of_word(word);
            if (!key)
                throw UsageError(fmt::format("--keys: \"{}\" is not a key (a character, or one of Up Down Left Right Tab "
                                             "S-Tab Enter Esc Backspace PageUp PageDown Home End Space C-c)",
                                             printable(word)));
            keys.push_back(*key);
            i = end;
        }
    }
    return keys;
}

std::vector<Key> decode_terminal_bytes(std::string_view bytes, std::string& pending) {
    std::string data = pending + std::string(bytes);
    pending.clear();
    std::vector<Key> keys;
    std::size_t i = 0;
    const auto sequence = [&](std::string_view tail) -> std::optional<Key::Kind> {
        static constexpr std::array<std::pair<std::string_view, Key::Kind>, 12> known{{
            {"[A", Key::up}, {"[B", Key::down}, {"[C", Key::right}, {"[D", Key::left}, {"[Z", Key::back_tab},
            {"[5~", Key::page_up}, {"[6~", Key::page_down}, {"[H", Key::home}, {"[F", Key::end}, {"OA", Key::up},
            {"OB", Key::down}, {"[1~", Key::home},
        }};
        for (const auto& [text, kind] : known)
            if (tail.starts_with(text)) return kind;
        return std::nullopt;
    };
    while (i < data.size()) {
        const auto c = static_cast<unsigned char>(data[i]);
        if (c == 0x1b) {
            const std::string_view tail = std::string_view(data).substr(i + 1);
            if (tail.empty()) {  // an escape alone (a sequence cut here would be rare; Esc is a key)
                keys.push_back({Key::escape, {}}), ++i;
                continue;
            }
            if (const auto kind = sequence(tail)) {
                keys.push_back({*kind, {}});
                i += 1 + (tail[1] >= '0' && tail[1] <= '9' ? 3 : 2);
                continue;
            }
            if ((tail[0] == '[' || tail[0] == 'O') && tail.size() < 3) {  // cut between two reads
                pending = data.substr(i);
                break;
            }
            keys.push_back({Key::escape, {}}), ++i;
        } else if (c == '\t') {
            keys.push_back({Key::tab, {}}), ++i;
        } else if (c == '\r' || c == '\n') {
            keys.push_back({Key::enter, {}}), ++i;
        } else if (c == 0x7f || c == 0x08) {
            keys.push_back({Key::backspace, {}}), ++i;
        } else if (c == 0x03) {
            keys.push_back({Key::interrupt, {}}), ++i;
        } else if (c < 0x20) {
            ++i;  // another control character: no key of ours
        } else {
            const std::size_t length = utf8_sequence_length(std::string_view(data).substr(i));
            if (length == 0 || i + length > data.size()) {
                if (i + 4 > data.size() && c >= 0xc0) pending = data.substr(i);  // a character cut between two reads
                else ++i;
                if (!pending.empty()) break;
                continue;
            }
            keys.push_back(character(data.substr(i, length)));
            i += length;
        }
    }
    return keys;
}

}  // namespace attntrace::stepper
