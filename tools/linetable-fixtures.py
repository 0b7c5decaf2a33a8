#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Write the line-table oracle fixture for the running interpreter.

Compiles a fixed list of stdlib modules plus the synthetic edge cases below,
and for every code object (recursively) records its first line, its raw line
table (co_lnotab on 3.9, co_linetable on 3.10+) and the line CPython's own
PyCode_Addr2Line() gives for byte offset -1 and every even byte offset in
[0, len(co_code)).  tests/unit/test_linetable.c checks user/symbolize/linetable.c
against these files.

The fixtures are committed; regenerate them all from the repository root with

    for v in 3.9.18 3.10.13 3.11.7 3.12.1 3.13.0; do
        "$(pyenv prefix $v)/bin/python3" tools/linetable-fixtures.py
    done
    /usr/bin/python3.11 tools/linetable-fixtures.py --name cpython-3.11-debian

The output is deterministic (gzip with mtime 0), so regenerating with the same
interpreters changes nothing.

File format, all integers little-endian, the whole file gzip-compressed:
    "SBLT"                              magic
    u8 file version (1), u8 major, u8 minor, u8 table format
                                        (1 lnotab, 2 3.10, 3 locations:
                                        enum linetable_format)
    u8 n, n bytes                       sys.version's first word, for humans
    u32 code object count
    per code object:
        i32 co_firstlineno
        u32 table length, the table bytes
        u32 number of even offsets k = ceil(len(co_code) / 2)
        i32 line for offset -1
        k x i32 line for offsets 0, 2, 4, ...
"""

import argparse
import ctypes
import gzip
import os
import struct
import sys
import sysconfig
import types

FILE_VERSION = 1

# Present as Python source in every CPython from 3.9 to 3.13 (some became
# packages: then their __init__.py).
MODULES = [
    "_pydecimal", "argparse", "ast", "asyncio.base_events", "asyncio.tasks", "base64",
    "calendar", "collections", "configparser", "contextlib", "csv", "dataclasses",
    "datetime", "difflib", "dis", "email._header_value_parser", "enum", "fractions",
    "functools", "gettext", "gzip", "http.client", "inspect", "ipaddress",
    "json.decoder", "logging", "optparse", "os", "pathlib", "pickle", "pprint",
    "random", "shutil", "statistics", "string", "subprocess", "tarfile", "textwrap",
    "threading", "tokenize", "traceback", "typing", "unittest.case", "urllib.parse",
    "zipfile",
]


def synthetic_sources(minor):
    """Edge cases the stdlib may not reach, as (name, source) pairs."""
    gap = "\n" * 300
    comments = "".join("    # filler %d\n" % i for i in range(300))
    srcs = []

    srcs.append(("<multiline>", """\
def call(f, *a, **k):
    return f(
        a,
        k,
        [x
         for x in a
         if x],
    )

total = (1 +
         2 +
         3)
square = lambda v: (
    v
    *
    v)
pairs = {k: v for k, v in
         zip("abc",
             range(3))}
gen = (i * j for i in range(3)
       for j in range(4) if i != j)
text = f'''{total}
{square(2)!r:>{10}}'''
"""))

    srcs.append(("<control>", """\
import contextlib

def flow(items):
    out = []
    for i, item in enumerate(items):
        try:
            if i % 3 == 0:
                continue
            elif i % 5 == 0:
                break
            value = 1 / item
        except ZeroDivisionError as exc:
            out.append(exc)
        except (TypeError, ValueError):
            raise
        else:
            out.append(value)
        finally:
            out.append(None)
    while out and out[-1] is None:
        out.pop()
    else:
        pass
    with contextlib.suppress(KeyError), open(__file__) as fh:
        del fh
    assert out is not None, (
        "never")
    return out

async def agen(n):
    async with n as m:
        async for x in m:
            yield x
    await n

class Outer:
    attr = [i for i in range(3)]

    @staticmethod
    def method(self, *, key=lambda y: y + 1):
        nonlocal_target = 0

        def inner():
            nonlocal nonlocal_target
            nonlocal_target += 1
            return nonlocal_target
        return inner
"""))

    # Forward jumps over blank lines and comments, well past 127 and 255.
    srcs.append(("<gaps>",
                 "def forward():\n    a = 1\n" + gap + "    b = 2\n" + comments +
                 "    return a + b\n\n"
                 # Backward jumps below -128: the callee and the call are on
                 # the first line, the argument 300 lines later.
                 "def backward(f, x):\n    return f(\n" + gap + "        x)\n\n"
                 # A loop whose condition is re-tested after a long body.
                 "def loop(n):\n    while n > 0:\n        n -= 1\n" + comments +
                 "        n -= 0\n    return n\n\n"
                 # A try whose handlers sit far from the body.
                 "def handlers():\n    try:\n        x = 1\n" + comments +
                 "    except Exception:\n" + comments + "        x = 2\n" +
                 "    finally:\n        x = 3\n    return x\n"))

    # One line with far more than 255 bytes of bytecode, and a column past
    # 127 (3.11+ needs the long form and multi-byte varints).
    srcs.append(("<longline>",
                 "def wide(a):\n    return " + " + ".join(["a"] * 200) + "\n\n" +
                 "def cols(a):\n    x = 1;" + " " * 300 + "y = a + x\n    return y\n" +
                 "def many(a):\n" + "".join("    a = a + %d\n" % i for i in range(400)) +
                 "    return a\n"))

    # Deep nesting of functions, classes and comprehensions.
    depth = 20
    nested = []
    for d in range(depth):
        ind = "    " * d
        kind = "class C%d:\n" % d if d % 3 == 2 else "def f%d():\n" % d
        nested.append(ind + kind)
        nested.append(ind + "    v%d = [[y for y in range(x)] for x in range(%d)]\n" % (d, d))
    nested.append("    " * depth + "pass\n")
    srcs.append(("<nested>", "".join(nested)))

    # Code tens of thousands of lines down (large firstlineno and deltas).
    srcs.append(("<farlines>", "x = 0\n" + "\n" * 70000 +
                 "def far():\n    y = 1\n" + "\n" * 40000 + "    return y\n"))

    if minor >= 10:
        srcs.append(("<match>", """\
def m(cmd):
    match cmd:
        case [x, y, *rest] if x > y:
            return rest
        case {"k": v, **kw}:
            return v
        case Point(x=0) | None:
            return 0
        case _:
            return (
                cmd)
"""))
    return srcs


def module_sources():
    # Looked up in the stdlib directory rather than with find_spec(), which
    # names no file for the modules 3.11+ freezes (os, abc, ...).
    stdlib = sysconfig.get_path("stdlib")
    for name in MODULES:
        base = os.path.join(stdlib, *name.split("."))
        for path in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(path):
                break
        else:
            sys.exit("no source for stdlib module %s under %s" % (name, stdlib))
        with open(path, "rb") as fh:
            yield name, fh.read()


def walk(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from walk(const)


def table_format(minor):
    if minor == 9:
        return 1
    if minor == 10:
        return 2
    return 3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--name", help="fixture name (default cpython-X.Y.Z)")
    ap.add_argument("--outdir", default="tests/fixtures/linetable")
    args = ap.parse_args()

    major, minor = sys.version_info[:2]
    if (major, minor) < (3, 9):
        sys.exit("CPython 3.9 or later is needed")
    addr2line = ctypes.pythonapi.PyCode_Addr2Line
    addr2line.argtypes = [ctypes.py_object, ctypes.c_int]
    addr2line.restype = ctypes.c_int

    version = sys.version.split()[0]
    name = args.name or "cpython-%s" % version
    out = bytearray(b"SBLT")
    out += struct.pack("<BBBB", FILE_VERSION, major, minor, table_format(minor))
    label = version.encode()
    out += struct.pack("<B", len(label)) + label

    body = bytearray()
    ncode = noffsets = 0
    sources = list(module_sources()) + [(n, s.encode()) for n, s in synthetic_sources(minor)]
    for fname, src in sources:
        top = compile(src, fname, "exec", dont_inherit=True)
        for co in walk(top):
            table = co.co_lnotab if minor == 9 else co.co_linetable
            k = (len(co.co_code) + 1) // 2
            body += struct.pack("<iI", co.co_firstlineno, len(table)) + table
            body += struct.pack("<Ii", k, addr2line(co, -1))
            body += struct.pack("<%di" % k, *(addr2line(co, 2 * i) for i in range(k)))
            ncode += 1
            noffsets += k + 1
    out += struct.pack("<I", ncode) + body

    os.makedirs(args.outdir, exist_ok=True)
    path = os.path.join(args.outdir, name + ".bin.gz")
    with open(path, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz:
            gz.write(out)
    print("%s: %d code objects, %d offsets, %d bytes" % (path, ncode, noffsets,
                                                         os.path.getsize(path)))


if __name__ == "__main__":
    main()
