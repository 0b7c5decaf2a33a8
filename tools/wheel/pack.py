# SPDX-License-Identifier: BSD-2-Clause
"""Packs what tools/wheel/build built into the wheel or the tarball.

    pack.py wheel|dist --top TREE --out BUILD_OUT --dist DEST

The wheel installs the executable as a script (pip copies it into the
environment's bin/ as it is: `sudo venv/bin/scalene-bpf` needs no Python)
and the libraries it preloads into the environment's lib/scalene-bpf/, where
it looks for them (../lib/scalene-bpf from its own folder, as `make
install` lays them out); `python -m scalene_bpf` runs that executable.  The
tarball has the same files under bin/ and lib/scalene-bpf/.  Before it
packs anything it checks that every ELF file asks glibc for nothing newer
than 2.28 and for no other library (objdump, readelf): a wrong build fails
here, not on a user's machine.
"""
import argparse
import base64
import hashlib
import io
import os
import re
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

GLIBC_MAX = (2, 28)
# What a manylinux wheel may leave to the system (PEP 600's glibc libraries).
ALLOWED_NEEDED = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1",
                  "ld-linux-x86-64.so.2"}
PLATFORM = "manylinux_2_28_x86_64"
SAMPLER = "libscalene-bpf-sampler.so"
GPU_LIB = "libscalene-bpf-gpu.so"

INIT_PY = '''"""scalene-bpf: a Python profiler on eBPF that writes Scalene's JSON.

The profiler is the executable `scalene-bpf` this package installed into the
environment's bin/ folder; `python -m scalene_bpf ARGS` runs it with ARGS.
"""
import importlib.metadata
import os

__version__ = "{version}"


def executable():
    """The installed scalene-bpf executable's path."""
    for f in importlib.metadata.files("scalene-bpf") or ():
        if f.name == "scalene-bpf" and f.parent.name in ("bin", "scripts"):
            path = os.path.realpath(f.locate())
            if os.access(path, os.X_OK):
                return path
    raise FileNotFoundError("the scalene-bpf executable of this package is not installed: "
                            "reinstall it (pip install --force-reinstall scalene-bpf)")
'''

MAIN_PY = '''import os
import sys

from scalene_bpf import executable


def main():
    exe = executable()
    os.execv(exe, [exe] + sys.argv[1:])


if __name__ == "__main__":
    main()
'''

METADATA = """Metadata-Version: 2.1
Name: scalene-bpf
Version: {version}
Summary: A Python profiler on eBPF: Scalene's measurements and JSON, without touching the program
License: BSD-2-Clause
Requires-Python: >=3.8
Classifier: Operating System :: POSIX :: Linux
Classifier: Programming Language :: C
Classifier: Topic :: Software Development :: Debuggers
Description-Content-Type: text/markdown

{readme}"""

WHEEL = """Wheel-Version: 1.0
Generator: scalene-bpf tools/wheel/pack.py
Root-Is-Purelib: false
Tag: py3-none-{platform}
"""


def fail(msg):
    sys.exit(f"tools/wheel/pack.py: {msg}")


def check_elf(path):
    """Every glibc version asked for is at most 2.28; every library needed
    is glibc's own."""
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]",
                        subprocess.run(["readelf", "-d", str(path)], check=True,
                                       capture_output=True, text=True).stdout)
    bad = sorted(set(needed) - ALLOWED_NEEDED)
    if bad:
        fail(f"{path} needs {', '.join(bad)}, which the wheel does not carry")
    dyn = subprocess.run(["objdump", "-T", str(path)], check=True, capture_output=True,
                         text=True).stdout
    versions = {tuple(int(x) for x in v.split(".")) for v in re.findall(r"GLIBC_([0-9.]+)", dyn)}
    newer = sorted(v for v in versions if v > GLIBC_MAX)
    if newer:
        fail(f"{path} asks glibc for {', '.join('.'.join(map(str, v)) for v in newer)}: "
             f"newer than {'.'.join(map(str, GLIBC_MAX))}")
    return max(versions) if versions else None


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def files(top, out):
    """(name in the wheel's data scheme or the tarball, bytes, mode)."""
    exe = out / "scalene-bpf"
    sampler = out / "sampler" / SAMPLER
    for p in (exe, sampler):
        if not p.is_file():
            fail(f"{p} is missing: run tools/wheel/build")
        check_elf(p)
    yield "bin/scalene-bpf", exe.read_bytes(), 0o755
    yield f"lib/scalene-bpf/{SAMPLER}", sampler.read_bytes(), 0o644
    # Built where the CUDA toolkit's headers are (tools/wheel/build says).
    gpu = out / "gpu" / GPU_LIB
    if gpu.is_file():
        check_elf(gpu)
        yield f"lib/scalene-bpf/{GPU_LIB}", gpu.read_bytes(), 0o644


def licenses(top):
    lic = top / "build" / "wheel" / "deps" / "licenses"
    for d in sorted(lic.iterdir()) if lic.is_dir() else ():
        for f in sorted(d.iterdir()):
            yield f"{d.name}/{f.name}", f.read_bytes()


def zinfo(name, mode):
    zi = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
    zi.external_attr = (0o100000 | mode) << 16
    zi.compress_type = zipfile.ZIP_DEFLATED
    return zi


def wheel(top, out, dest, version):
    name = f"scalene_bpf-{version}-py3-none-{PLATFORM}.whl"
    data = f"scalene_bpf-{version}.data"
    info = f"scalene_bpf-{version}.dist-info"
    readme = (top / "README.md").read_text()
    entries = [
        ("scalene_bpf/__init__.py", INIT_PY.format(version=version).encode(), 0o644),
        ("scalene_bpf/__main__.py", MAIN_PY.encode(), 0o644),
    ]
    for rel, blob, mode in files(top, out):
        where = "scripts/" + rel.split("/", 1)[1] if rel.startswith("bin/") else "data/" + rel
        entries.append((f"{data}/{where}", blob, mode))
    for rel, blob in licenses(top):
        entries.append((f"{info}/licenses/{rel}", blob, 0o644))
    entries.append((f"{info}/METADATA",
                    METADATA.format(version=version, readme=readme).encode(), 0o644))
    entries.append((f"{info}/WHEEL", WHEEL.format(platform=PLATFORM).encode(), 0o644))
    entries.append((f"{info}/top_level.txt", b"scalene_bpf\n", 0o644))
    record = [record_line(n, b) for n, b, _ in entries] + [f"{info}/RECORD,,"]
    entries.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode(), 0o644))
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / name
    tmp = path.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w") as z:
        for n, b, mode in entries:
            z.writestr(zinfo(n, mode), b)
    os.replace(tmp, path)
    return path


def dist(top, out, dest, version):
    base = f"scalene-bpf-{version}-linux-x86_64"
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / f"{base}.tar.gz"
    tmp = path.with_suffix(".tmp")
    with tarfile.open(tmp, "w:gz") as t:
        def add(name, blob, mode):
            ti = tarfile.TarInfo(f"{base}/{name}")
            ti.size, ti.mode, ti.mtime = len(blob), mode, int(time.time())
            t.addfile(ti, io.BytesIO(blob))
        for rel, blob, mode in files(top, out):
            add(rel, blob, mode)
        for rel, blob in licenses(top):
            add(f"share/licenses/scalene-bpf/{rel}", blob, 0o644)
        add("README.md", (top / "README.md").read_bytes(), 0o644)
    os.replace(tmp, path)
    return path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=("wheel", "dist"))
    ap.add_argument("--top", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--dist", type=Path, required=True)
    a = ap.parse_args()
    version = (a.top / "VERSION").read_text().strip()
    path = (wheel if a.kind == "wheel" else dist)(a.top, a.out, a.dist, version)
    print(f"tools/wheel/pack.py: {path} ({path.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
