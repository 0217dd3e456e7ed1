#!/usr/bin/env python3
"""Comments that mean nothing to a reader of the repository.

Fails (exit 1), listing file:line, when a source file's comments or docstrings

- name a tracker entry ("issue 18", "issues #4 and 5"): say what the code does and why instead;
- give a path outside the repository ("../shared/..."): name the option or environment variable
  that points there (--data, $METAOPT_DATA) and link the doc that says where the data lives.

String literals are code and may hold such paths (a test's default data folder, say); only
comments and docstrings are checked.

    comments_lint.py [ROOT]       # ROOT: the repository (default: this file's ../..)
"""

from __future__ import annotations

import ast
import io
import os
import re
import sys
import tokenize
from typing import Iterator, List, Tuple

ISSUE = re.compile(r"\bissues?\s+#?\d+", re.IGNORECASE)
OUTSIDE = re.compile(r"\.\./shared\b")

# Folders that hold no source of ours: build trees, installed packages, models, fuzz inputs, VCS;
# of data/, only the preparation scripts (data/prep/) are source.
SKIP_DIRS = {".git", "node_modules", "__pycache__", "models", "corpus", "regressions"}
SLASH_LANGUAGES = (".cc", ".h", ".cpp", ".js", ".mjs", ".go", ".proto")
HASH_LANGUAGES = (".sh", ".cmake", ".yaml", ".yml", ".toml", ".R", ".r")


def source_files(root: str) -> Iterator[str]:
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs
                         if d not in SKIP_DIRS and not d.startswith("build") and d != "dist")
        if os.path.relpath(folder, root) == "data":
            dirs[:] = [d for d in dirs if d == "prep"]
        for name in sorted(files):
            if (name.endswith(SLASH_LANGUAGES + HASH_LANGUAGES + (".py",))
                    or name in ("CMakeLists.txt", "Dockerfile")):
                yield os.path.join(folder, name)


def slash_comments(text: str) -> Iterator[Tuple[int, str]]:
    """`// ...` and `/* ... */` comments of C-family text, line by line (string literals
    skipped, so "http://host" is not a comment)."""
    in_block = False
    for number, line in enumerate(text.splitlines(), 1):
        i, quote = 0, None
        while i < len(line):
            if in_block:
                end = line.find("*/", i)
                yield number, line[i:] if end < 0 else line[i:end]
                if end < 0:
                    break
                in_block, i = False, end + 2
                continue
            c = line[i]
            if quote:
                if c == "\\":
                    i += 2
                    continue
                if c == quote:
                    quote = None
            elif c in "\"'`":
                quote = c
            elif line.startswith("//", i):
                yield number, line[i:]
                break
            elif line.startswith("/*", i):
                in_block, i = True, i + 2
                continue
            i += 1


def hash_comments(text: str) -> Iterator[Tuple[int, str]]:
    """`# ...` comments of shell, CMake, YAML and R (a `#` at a line's start or after a space;
    `$#`, `${#x}` and "#" inside quotes are not comments)."""
    for number, line in enumerate(text.splitlines(), 1):
        quote = None
        for i, c in enumerate(line):
            if quote:
                if c == quote:
                    quote = None
            elif c in "\"'":
                quote = c
            elif c == "#" and (i == 0 or line[i - 1] in " \t"):
                yield number, line[i:]
                break


def python_comments(text: str) -> Iterator[Tuple[int, str]]:
    """Comments and docstrings of Python source."""
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                for offset, line in enumerate(body[0].value.value.splitlines()):
                    yield body[0].lineno + offset, line


def comments(path: str, text: str) -> Iterator[Tuple[int, str]]:
    if path.endswith(".py"):
        return python_comments(text)
    if path.endswith(SLASH_LANGUAGES):
        return slash_comments(text)
    return hash_comments(text)


def findings(root: str) -> List[str]:
    found = []
    for path in source_files(root):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        relative = os.path.relpath(path, root)
        if relative == os.path.join("tests", "lint", "comments_lint.py"):
            continue  # this file names the patterns it looks for
        for number, comment in comments(path, text):
            for pattern, rule in ((ISSUE, "names a tracker issue; say what and why instead"),
                                  (OUTSIDE, "a path outside the repository; name the option "
                                            "or variable that points there")):
                match = pattern.search(comment)
                if match:
                    found.append(f"{relative}:{number}: \"{match.group(0)}\": {rule}")
    return found


def main() -> int:
    root = (sys.argv[1] if len(sys.argv) > 1
            else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    found = findings(os.path.abspath(root))
    for line in found:
        print(line)
    if found:
        print(f"{len(found)} comment(s) that mean nothing inside the repository", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
