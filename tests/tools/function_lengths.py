#!/usr/bin/python3
"""Lengths of the functions and files of C++ sources, to hold the size rules of
docs/architecture.md ("no function over 70 lines, no source file over 700").

    tests/tools/function_lengths.py [--max-function N] [--max-file N] [--all] PATH...

PATH is a file or a folder (its .cpp and .hpp files, recursively). Prints every function
longer than --max-function lines (default 70) and every file longer than --max-file lines
(default 700), longest first, then the counts; with --all, every function. Exits 1 when
something is over a limit, so it can be a check.

A function's length is counted from the first line of its declarator (after any
`template <...>` line) to its closing brace, both included; lambdas and local classes count
as part of the function they are written in. The reading is lexical, not a compiler's:
comments, string and character literals and preprocessor lines are blanked first, then the
braces at namespace and class level are classified by what comes before them (a parameter
list closing before the brace: a function body). Good enough for this project's code, which
has no macros that open functions.
"""

import argparse
import os
import re
import sys


def blank(text):
    """The text with comments, literals and preprocessor lines replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":  # a preprocessor line, with its continuations
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        line_start = False
        if c == "\n":
            out.append(c)
            line_start = True
            i += 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                out.append(" ")
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif c == "R" and i + 1 < n and text[i + 1] == '"' and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            open_paren = text.find("(", i + 2)
            delimiter = text[i + 2:open_paren]
            end = text.find(")" + delimiter + '"', open_paren)
            end = n if end < 0 else end + len(delimiter) + 2
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2:end]))
            i = end
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):  # not a digit separator (1'000)
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j]) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


TEMPLATE = re.compile(r"^\s*template\s*<")
LABEL = re.compile(r"^\s*(public|private|protected)\s*:(?!:)")
TAIL_OK = re.compile(r"^(\s*(const|noexcept|override|final|mutable|volatile|&&|&|->[^{;]*|noexcept\s*\([^)]*\)))*\s*$")


def strip_prefix(head):
    """The head without leading access labels and `template <...>` parts; returns (text, offset)."""
    offset = 0
    while True:
        m = LABEL.match(head, offset)
        if m:
            offset = m.end()
            continue
        m = TEMPLATE.match(head, offset)
        if not m:
            break
        depth, j = 1, m.end()
        while j < len(head) and depth:
            if head[j] == "<":
                depth += 1
            elif head[j] == ">":
                depth -= 1
            j += 1
        offset = j
    return offset


def top_paren(text):
    """Where the first '(' outside template brackets is (-1 when none)."""
    angle = 0
    for k, c in enumerate(text):
        if c == "<" and not text[max(0, k - 8):k].endswith("operator"):
            angle += 1
        elif c == ">" and angle and text[k - 1] != "-":
            angle -= 1
        elif c == "(" and angle == 0:
            return k
    return -1


def classify(head):
    """What a '{' at namespace or class level opens, from the text before it: 'scope', 'function', or 'other'."""
    words = head.split()
    if not words:
        return "other"
    first = words[0]
    if first in ("namespace", "extern") or (first == "inline" and len(words) > 1 and words[1] == "namespace"):
        return "scope"
    if first in ("class", "struct", "union") and "(" not in head and "=" not in head:
        return "scope"
    if first == "enum" or "(" not in head:
        return "other"
    plain = re.sub(r"operator\s*(\(\)|[^\s(]+)", "operator", head)
    eq = plain.find("=")
    if 0 <= eq and (eq < top_paren(plain) or top_paren(plain) < 0):
        return "other"  # a variable's initializer, a lambda among them
    close = head.rfind(")")
    return "function" if close >= 0 else "other"


def name_of(head):
    """The function's name: the (qualified) word before its parameter list."""
    plain = re.sub(r"\s+", " ", head)
    k = top_paren(plain)
    k = len(plain) if k < 0 else k
    m = re.search(r"([~\w:]*operator\s*\S*?|[~\w:]+)\s*$", plain[:k])
    return m.group(1).strip() if m else plain[:k].strip()


def functions(path):
    """(name, first line, last line) of every function in the file."""
    with open(path, encoding="utf-8") as f:
        text = blank(f.read())
    found = []
    stack = []  # 'scope', 'function', 'other', 'init' per open brace
    head_start = 0
    i = 0
    line_of = [0] * (len(text) + 1)
    line = 1
    for k, c in enumerate(text):
        line_of[k] = line
        if c == "\n":
            line += 1
    line_of[len(text)] = line
    function_start = None
    while i < len(text):
        c = text[i]
        at_level = all(kind == "scope" for kind in stack)
        if c == "{":
            if at_level:
                head = text[head_start:i]
                offset = strip_prefix(head)
                body = head[offset:]
                kind = classify(body)
                if kind == "function":
                    # A constructor's member initialised with braces (": x_{a}") is no body.
                    close = body.rfind(")")
                    tail = body[close + 1:]
                    if not TAIL_OK.match(tail):
                        params_end = body.find(")")
                        after = body[params_end + 1:]
                        if re.search(r"(?<!:):(?!:)", after) and re.search(r"[\w>]\s*$", body):
                            stack.append("init")
                            i += 1
                            continue
                if kind == "function":
                    lead = len(body) - len(body.lstrip())
                    function_start = (name_of(body), line_of[head_start + offset + lead])
                stack.append(kind)
                if kind == "scope":
                    head_start = i + 1
            else:
                stack.append("other")
        elif c == "}":
            kind = stack.pop() if stack else "scope"
            if kind == "init":
                i += 1
                continue
            if kind == "function" and all(k == "scope" for k in stack):
                found.append((function_start[0], function_start[1], line_of[i]))
            if all(k == "scope" for k in stack):
                head_start = i + 1
        elif c == ";" and at_level:
            head_start = i + 1
        i += 1
    return found


def sources(paths):
    for p in paths:
        if os.path.isdir(p):
            for root, _, files in os.walk(p):
                for name in sorted(files):
                    if name.endswith((".cpp", ".hpp", ".h", ".cc")):
                        yield os.path.join(root, name)
        else:
            yield p


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-function", type=int, default=70)
    parser.add_argument("--max-file", type=int, default=700)
    parser.add_argument("--all", action="store_true", help="list every function, not only the long ones")
    parser.add_argument("--exclude", action="append", default=[], help="a file or folder to leave out (repeatable)")
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args()
    excluded = [os.path.normpath(e) for e in args.exclude]

    def kept(path):
        p = os.path.normpath(path)
        return not any(p == e or p.startswith(e + os.sep) for e in excluded)

    long_functions, long_files, count = [], [], 0
    for path in sorted(set(sources(args.paths))):
        if not kept(path):
            continue
        with open(path, encoding="utf-8") as f:
            lines = f.read().count("\n")
        if lines > args.max_file:
            long_files.append((lines, path))
        for name, first, last in functions(path):
            count += 1
            length = last - first + 1
            if args.all or length > args.max_function:
                long_functions.append((length, f"{path}:{first}", name))
    for length, where, name in sorted(long_functions, key=lambda t: (-t[0], t[1])):
        print(f"function {length:5d}  {where}  {name}")
    for lines, path in sorted(long_files, reverse=True):
        print(f"file     {lines:5d}  {path}")
    over_functions = sum(1 for t in long_functions if t[0] > args.max_function)
    print(f"{count} functions; {over_functions} over {args.max_function} lines; "
          f"{len(long_files)} files over {args.max_file} lines")
    return 1 if over_functions or long_files else 0


if __name__ == "__main__":
    sys.exit(main())
