# SPDX-License-Identifier: BSD-2-Clause
"""Profiles written by real Scalene, for the tests that check that our views
read Scalene's format and that our format checker accepts what Scalene
writes.

The Scalene of the test venv (tests/requirements.txt pins it) profiles the
small programs of this folder:

    scalene_ref_cpu.json    scalene run --cpu-only  cpu_bound.py
    scalene_ref_mem.json    scalene run --memory    mem_bound.py
    scalene_ref_async.json  scalene run --cpu-only  async_bound.py
                            (async/await profiling is on by default)

and minimal_valid.json (written by hand: the fewest fields a profile may
have) is copied beside them.  They are made once into BUILD/scalene-refs
(BUILD: the folder that holds the venv), again when Scalene, the Python or a
program changes; $SCALENE_REFERENCE_DIR, where set, names a folder that
holds them instead.

    python tests/refprofiles/scalene_refs.py [DIR]   # makes them, prints DIR
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROFILES = {
    "scalene_ref_cpu.json": ("cpu_bound.py", ["--cpu-only"]),
    "scalene_ref_mem.json": ("mem_bound.py", ["--memory"]),
    "scalene_ref_async.json": ("async_bound.py", ["--cpu-only"]),
}
HANDWRITTEN = ("minimal_valid.json",)
NAMES = (*PROFILES, *HANDWRITTEN)
STAMP = ".made-by"


class ReferenceError(Exception):
    pass


def _scalene():
    exe = Path(sys.prefix) / "bin" / "scalene"
    if not exe.is_file():
        raise ReferenceError(f"Scalene is not installed in {sys.prefix}: run the tests "
                             "with the test venv's Python (make test-venv; "
                             "build/venv/bin/python -m pytest ...)")
    return exe


def _stamp(exe):
    h = hashlib.sha256()
    for name in sorted({p for p, _ in PROFILES.values()} | set(HANDWRITTEN)):
        h.update(name.encode() + b"\0" + (HERE / name).read_bytes())
    h.update(Path(__file__).read_bytes())
    ver = subprocess.run([str(exe), "--version"], capture_output=True, text=True,
                         timeout=60).stdout.strip()
    return f"{ver}; python {sys.version.split()[0]}; inputs {h.hexdigest()[:16]}\n"


def make(dest):
    """Makes the profiles in dest unless they are there from the same
    Scalene, Python and programs; returns dest."""
    dest = Path(dest)
    exe = _scalene()
    stamp = _stamp(exe)
    if (dest / STAMP).is_file() and (dest / STAMP).read_text() == stamp and \
            all((dest / n).is_file() for n in NAMES):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".scalene-refs-", dir=dest.parent))
    # Scalene leaves out of its memory profile the files whose path holds
    # "scalene" (its own): the programs run from a folder of the system's
    # temporary directory, not from the repository (scalene-bpf/...).
    # A short folder name: the narrowest views still show the file's name.
    src = Path(tempfile.mkdtemp(prefix="sr"))
    try:
        for out, (prog, opts) in PROFILES.items():
            shutil.copy(HERE / prog, src / prog)
            # Scalene's own output goes to the message on failure only.
            p = subprocess.run([str(exe), "run", *opts, "-o", str(work / out), prog], cwd=src,
                               capture_output=True, text=True, timeout=300,
                               env={**os.environ, "PYTHONHASHSEED": "0"})
            doc = None
            if p.returncode == 0 and (work / out).is_file():
                try:
                    doc = json.loads((work / out).read_text())
                except ValueError:
                    pass
            if not doc or not doc.get("files"):
                raise ReferenceError(f"scalene run {' '.join(opts)} {prog} made no profile "
                                     f"(exit {p.returncode}):\n{p.stdout[-2000:]}"
                                     f"{p.stderr[-2000:]}")
        for name in HANDWRITTEN:
            shutil.copy(HERE / name, work / name)
        (work / STAMP).write_text(stamp)
        os.chmod(work, 0o755)
        if dest.exists():
            shutil.rmtree(dest)
        work.rename(dest)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(src, ignore_errors=True)
    return dest


_made = {}


def reference_dir():
    """The folder of the reference profiles, made when needed."""
    env = os.environ.get("SCALENE_REFERENCE_DIR")
    if env:
        return Path(env)
    dest = Path(sys.prefix).parent / "scalene-refs"
    if dest not in _made:
        _made[dest] = make(dest)
    return _made[dest]


if __name__ == "__main__":
    try:
        print(make(sys.argv[1]) if len(sys.argv) > 1 else reference_dir())
    except ReferenceError as e:
        sys.exit(f"scalene_refs: {e}")
