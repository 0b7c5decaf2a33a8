#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Print the region fields Scalene itself computes for each line of Python files.

Run it with the Python of the test venv, where Scalene 2.4.0 is installed:

    build/venv/bin/python tools/regions-oracle.py FILE...

One line per source line, in the format of tools/regions-dump.c:

    lineno start_region end_region start_outermost end_outermost start_function end_function

With more than one file, each file's lines follow a "== PATH" line.  The
source is read the way Scalene's JSON writer reads it (UTF-8, universal
newlines, readlines() joined), and the values come from Scalene's own
ScaleneAnalysis.find_regions, find_outermost_loop and find_functions.

Where Scalene has no answer, this prints what user/report/regions.c does instead:
  - when ast.parse fails (or the analysis hits Python's recursion limit),
    Scalene's exception escapes and it writes no profile; here every line
    gets the trivial values (n n n n 0 0);
  - a leading byte order mark, which ast.parse rejects, is dropped, as the
    interpreter does when it runs the file;
  - text that is not UTF-8, which Scalene fails to read, is read as Latin-1.
A note on stderr names each file where one of these applied.

tests/fixtures/regions/*.expected are this script's output; regenerate them
from the repository root with

    for f in tests/fixtures/regions/*.py; do
        build/venv/bin/python tools/regions-oracle.py "$f" > "${f%.py}.expected"
    done
"""
import sys

from scalene.scalene_analysis import ScaleneAnalysis


def read_source(path):
    """Returns (lines, note) as Scalene's JSON writer reads the file."""
    note = None
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.readlines()
    except UnicodeDecodeError:
        with open(path, encoding="latin-1") as f:
            lines = f.readlines()
        note = "not UTF-8, read as Latin-1"
    if lines and lines[0].startswith("\ufeff"):
        lines[0] = lines[0][1:]
        note = "byte order mark dropped"
    return lines, note


def regions_of(lines):
    """Returns ({lineno: (sr, er, so, eo, sf, ef)}, error or None)."""
    src = "".join(lines)
    try:
        regions = ScaleneAnalysis.find_regions(src)
        outer = ScaleneAnalysis.find_outermost_loop(src)
        funcs = ScaleneAnalysis.find_functions(src)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        return {n: (n, n, n, n, 0, 0) for n in range(1, len(lines) + 1)}, e
    return {
        n: regions[n] + outer[n] + funcs[n] for n in range(1, len(lines) + 1)
    }, None


def main(argv):
    if len(argv) < 2:
        print(f"usage: {argv[0]} FILE...", file=sys.stderr)
        return 2
    out = []
    for path in argv[1:]:
        lines, note = read_source(path)
        values, err = regions_of(lines)
        if note:
            print(f"{path}: {note}", file=sys.stderr)
        if err is not None:
            print(f"{path}: trivial values: {type(err).__name__}: {err}", file=sys.stderr)
        if len(argv) > 2:
            out.append(f"== {path}\n")
        for n in range(1, len(lines) + 1):
            out.append(" ".join(str(v) for v in (n,) + values[n]) + "\n")
    sys.stdout.write("".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
