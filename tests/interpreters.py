# SPDX-License-Identifier: BSD-2-Clause
"""The interpreters the suites run programs with, in one list: the
end-to-end tests (tests/e2e), the sampler's (tests/sampler), and
tools/run-tests' summary of what was found.  The unit tests in C name the
same ones (tests/unit/testpython.h).  An interpreter that is not installed
has its tests skipped, with how to install it."""

import os
import subprocess
from pathlib import Path

# (test id, how to find it, how to install it)
INTERPRETERS = [
    ("py3.9", "pyenv:3.9.18", "pyenv install 3.9.18"),
    ("py3.10", "pyenv:3.10.13", "pyenv install 3.10.13"),
    ("py3.11", "pyenv:3.11.7", "pyenv install 3.11.7"),
    ("py3.12", "pyenv:3.12.1", "pyenv install 3.12.1"),
    ("py3.13", "pyenv:3.13.0", "pyenv install 3.13.0"),
    ("debian3.11-static", "/usr/bin/python3.11",
     "apt-get install python3.11 (Debian's build, statically linked)"),
    ("sid3.14-static", "/opt/python3.14-sid/usr/bin/python3.14",
     "tools/python-sid 3.14 (Debian unstable's build, statically linked)"),
    ("sid3.15-static", "/opt/python3.15-sid/usr/bin/python3.15",
     "tools/python-sid 3.15 (Debian unstable's build, statically linked)"),
    ("ft3.13-static", "/opt/python3.13t/bin/python3.13t",
     "tools/python-ft 3.13 (the free-threaded build, from Debian's source)"),
]
INTERPRETER_IDS = [i[0] for i in INTERPRETERS]


def pyenv_prefix(version):
    """The folder of a pyenv version, or None."""
    try:
        p = subprocess.run(["pyenv", "prefix", version], capture_output=True,
                           text=True, timeout=30)
        if p.returncode == 0 and p.stdout.strip():
            return Path(p.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired):
        pass
    # pyenv may be missing from PATH (sudo resets it): its default place.
    root = Path(os.environ.get("PYENV_ROOT") or
                Path(os.path.expanduser("~")) / ".pyenv")
    cand = root / "versions" / version
    return cand if cand.is_dir() else None


def locate(where):
    """The interpreter's path as a string, if it is there and runs; None
    otherwise."""
    path = None
    if where.startswith("pyenv:"):
        prefix = pyenv_prefix(where[6:])
        if prefix is not None:
            path = prefix / "bin" / "python3"
    else:
        path = Path(where)
    ok = path is not None and path.is_file() and os.access(path, os.X_OK)
    if ok:
        try:
            subprocess.run([str(path), "-c", "pass"], check=True,
                           capture_output=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            ok = False
    return str(path) if ok else None
