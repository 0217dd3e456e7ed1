#!/usr/bin/env python3
"""docs/architecture.md against the tree.

Fails, saying what to add or fix, when

- a folder of core/ or server/ that holds C++ sources has no row in the concept table (a row
  names the folder as `core/x/`), or the table names a folder that does not exist;
- a folder of core/ or server/ is missing from the floors block, or a production file (not a
  test) includes a header of a folder on the same or a higher floor: each floor includes only
  the floors below it. server/ and its folders are one floor, the transport, and may include
  each other.

The floors block is the fenced block after the "## Floors" heading, one floor a line, highest
first: `N  folder/ folder/ ...`.

    architecture_test.py [ROOT]      # ROOT: the repository (default: this file's ../..)
"""

from __future__ import annotations

import os
import re
import sys
from typing import Dict, List, Set

LAYERED = ("core", "server")
INCLUDE = re.compile(r'^\s*#\s*include\s+"((?:core|server)/[^"]+)"', re.MULTILINE)


def source_folders(root: str) -> Set[str]:
    """Folders of core/ and server/ (as "core/x/") that hold .cc or .h files."""
    found = set()
    for top in LAYERED:
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            if any(f.endswith((".cc", ".h")) for f in files):
                found.add(os.path.relpath(folder, root).replace(os.sep, "/") + "/")
    return found


def is_test(name: str) -> bool:
    return name.endswith("_test.cc") or name.endswith("_benchmark.cc")


def includes_by_folder(root: str, folders: Set[str]) -> Dict[str, Dict[str, List[str]]]:
    """folder -> {included folder -> [including file]} over production files."""
    result: Dict[str, Dict[str, List[str]]] = {}
    for folder in folders:
        path = os.path.join(root, folder)
        for name in sorted(os.listdir(path)):
            if not name.endswith((".cc", ".h")) or is_test(name):
                continue
            with open(os.path.join(path, name), encoding="utf-8", errors="replace") as f:
                text = f.read()
            for header in INCLUDE.findall(text):
                target = header.rsplit("/", 1)[0] + "/"
                if target != folder:
                    result.setdefault(folder, {}).setdefault(target, []).append(folder + name)
    return result


def table_folders(doc: str) -> Set[str]:
    """Folders named in the concept table's rows (`core/x/`, `server/x/`, `server/`)."""
    named = set()
    for line in doc.splitlines():
        if line.startswith("|"):
            named.update(re.findall(r"`((?:core|server)(?:/[a-z0-9_]+)*/)`", line))
    return named


def floors(doc: str) -> Dict[str, int]:
    match = re.search(r"^## Floors\n.*?^```\n(.*?)^```", doc, re.MULTILINE | re.DOTALL)
    if not match:
        return {}
    floor_of = {}
    for line in match.group(1).splitlines():
        parts = line.split()
        if parts and parts[0].isdigit():
            for folder in parts[1:]:
                floor_of[folder] = int(parts[0])
    return floor_of


def check(root: str) -> List[str]:
    with open(os.path.join(root, "docs", "architecture.md"), encoding="utf-8") as f:
        doc = f.read()
    folders = source_folders(root)
    problems = []
    named = table_folders(doc)
    for folder in sorted(folders - named):
        problems.append(f"{folder} holds sources but has no row in the concept table")
    for folder in sorted(named):
        if not os.path.isdir(os.path.join(root, folder)):
            problems.append(f"the concept table names {folder}, which does not exist")
    floor_of = floors(doc)
    if not floor_of:
        return problems + ["no floors block (a fenced block after \"## Floors\")"]
    for folder in sorted(folders - set(floor_of)):
        problems.append(f"{folder} is on no floor of the floors block")
    for folder in sorted(set(floor_of) - folders):
        problems.append(f"the floors block names {folder}, which holds no sources")
    for folder, targets in sorted(includes_by_folder(root, folders).items()):
        for target, files in sorted(targets.items()):
            if folder.startswith("server/") and target.startswith("server/"):
                continue  # the transport's folders form one floor
            if folder in floor_of and target in floor_of and floor_of[target] >= floor_of[folder]:
                problems.append(
                    f"{files[0]} (floor {floor_of[folder]}) includes {target} (floor "
                    f"{floor_of[target]}): a floor includes only the floors below it")
    return problems


def main() -> int:
    root = (sys.argv[1] if len(sys.argv) > 1
            else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    problems = check(os.path.abspath(root))
    for problem in problems:
        print(problem)
    if problems:
        print(f"docs/architecture.md does not match the tree ({len(problems)} problem(s))",
              file=sys.stderr)
        return 1
    print("docs/architecture.md matches the tree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
