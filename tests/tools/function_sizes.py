#!/usr/bin/python3
"""Counts the lines of every function and of every file in C++ sources.

    tests/tools/function_sizes.py [--max-function N] [--max-file N] PATH...

PATH is a file or a folder (its *.cpp and *.hpp, recursively). A function is a body in braces
opened at namespace or class scope after a parenthesised parameter list (lambdas and blocks
inside a function count as part of it); its length runs from the first line of its
declaration (a `template <...>` line included) to the line of its closing brace. Comments,
string and character literals are skipped when braces are matched. Prints each function
longer than --max-function (default 70) and each file longer than --max-file (default 700)
lines, then the counts; exits 1 when there is any.
"""
import argparse
import pathlib
import re
import sys

CONTROL = re.compile(r"\b(if|for|while|switch|catch|do|else|return)\b")
TYPE = re.compile(r"\b(class|struct|union|enum)\b")


def strip(text):
    """The text with comments and literals blanked (newlines kept), so braces can be matched."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = ")" + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(" ")  # a digit separator: 1'000'000
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(text):
    """(name, first line, last line) of every function in `text` (1-based lines)."""
    code = strip(text)
    # Preprocessor lines are not code either.
    code = re.sub(r"(?m)^[ \t]*#.*$", lambda m: " " * len(m.group(0)), code)
    found = []
    stack = []  # "scope" (namespace, class, extern block), "function" or "other"
    header_start = 0  # where the text since the last boundary starts
    for i, c in enumerate(code):
        if c == "{":
            header = code[header_start:i]
            kinds = [s[0] for s in stack]
            if "function" in kinds or "other" in kinds:
                kind = "other"
            elif re.search(r"\bnamespace\b", header) or re.fullmatch(r"extern\s*", header.strip()):
                kind = "scope"
            elif ")" in header and not CONTROL.match(header.strip()) and not re.search(r"=\s*$", header):
                kind = "function"
            elif TYPE.search(header) and "=" not in header:
                kind = "scope"
            else:
                kind = "other"
            if kind == "function":
                lead = len(header) - len(header.lstrip())
                start = header_start + lead
                name = re.findall(r"([~\w:]+|operator\s*\S+)\s*\(", header)
                found_start = code.count("\n", 0, start) + 1
                stack.append(("function", found_start, name[0] if name else "?"))
            else:
                stack.append((kind, 0, ""))
            header_start = i + 1
        elif c == "}":
            if stack:
                kind, first, name = stack.pop()
                if kind == "function":
                    found.append((name, first, code.count("\n", 0, i) + 1))
            header_start = i + 1
        elif c == ";":
            header_start = i + 1
        elif c == ":" and not any(s[0] != "scope" for s in stack):
            # access specifiers ("public:") end a header; "::" does not
            if (i + 1 < len(code) and code[i + 1] == ":") or (i > 0 and code[i - 1] == ":"):
                continue
            if re.search(r"\b(public|private|protected)\s*$", code[header_start:i]):
                header_start = i + 1
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-function", type=int, default=70)
    parser.add_argument("--max-file", type=int, default=700)
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args()
    files = []
    for p in map(pathlib.Path, args.paths):
        files += sorted(q for q in p.rglob("*") if q.suffix in (".cpp", ".hpp")) if p.is_dir() else [p]
    long_functions = long_files = count = 0
    for f in files:
        text = f.read_text(encoding="utf-8")
        lines = text.count("\n")
        if lines > args.max_file:
            long_files += 1
            print(f"{f}: file of {lines} lines")
        for name, first, last in functions(text):
            count += 1
            length = last - first + 1
            if length > args.max_function:
                long_functions += 1
                print(f"{f}:{first}: {name} {length} lines")
    print(f"{len(files)} files, {count} functions: {long_functions} over {args.max_function} lines, "
          f"{long_files} files over {args.max_file} lines")
    return 1 if long_functions or long_files else 0


if __name__ == "__main__":
    sys.exit(main())
