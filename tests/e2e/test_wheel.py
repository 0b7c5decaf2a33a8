# SPDX-License-Identifier: BSD-2-Clause
"""The wheel (make wheel, tools/wheel/build) where nothing else is: a fresh
Debian 12 root (debootstrap minbase with python3 and python3-venv only: no
compiler, no -dev package, none of the libraries the build uses), a
virtualenv in it, `pip install` of the wheel file with no index, and
scalene-bpf run from that virtualenv as root inside the root (the host's
/proc, /sys and /dev mounted there: the BPF and tracing file systems come
with /sys) on known-truth programs: the CPU split and the memory per line,
by the same checks as the host suite.  Also auditwheel's verdict on the
wheel, `python -m scalene_bpf`, and the message an unprivileged user gets.

The root is made once in /srv/scalene-bpf-wheel-root (about a minute) and
kept, outside the tree: under sudo the suite hands the tree back to the
user, and a root file system with the host's /dev mounted in it must never
be among what is handed over.  The virtualenv in it is made anew for each
run of this file.
"""

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from e2e_helpers import BUILD, REPO, clean_env, check_compat, markers, program
from test_accuracy import check_split
from test_memory import line_churn, line_row

WHEEL_DIR = BUILD / "wheel"
ROOT = Path(os.environ.get("SCALENE_BPF_WHEEL_ROOT", "/srv/scalene-bpf-wheel-root"))
VENV = "/opt/sbpf"  # inside the root
MIRROR = os.environ.get("DEBIAN_MIRROR", "http://deb.debian.org/debian")
VERSION = (REPO / "VERSION").read_text().strip()
WHEEL = WHEEL_DIR / "dist" / f"scalene_bpf-{VERSION}-py3-none-manylinux_2_28_x86_64.whl"


def run(argv, timeout, **kw):
    p = subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                       timeout=timeout, env=clean_env(), stdin=subprocess.DEVNULL, **kw)
    assert p.returncode == 0, (f"$ {' '.join(map(str, argv))}: exit {p.returncode}\n"
                               f"{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


def make_root():
    """Debian 12, minbase, python3 and python3-venv: made once."""
    done = ROOT / ".made"
    if done.exists():
        return
    if shutil.which("debootstrap") is None:
        pytest.fail("debootstrap not found (apt-get install debootstrap; tools/ci-deps has it)")
    shutil.rmtree(ROOT, ignore_errors=True)
    run(["debootstrap", "--variant=minbase", "--include=python3,python3-venv", "bookworm",
         ROOT, MIRROR], timeout=900)
    done.write_text(time.strftime("%Y-%m-%d %H:%M:%S\n"))


def mounted():
    with open("/proc/self/mounts") as f:
        return [line.split()[1] for line in f if line.split()[1].startswith(str(ROOT) + "/")]


def unmount_all():
    for m in sorted(mounted(), key=len, reverse=True):
        subprocess.run(["umount", "-l", m], capture_output=True)


@pytest.fixture(scope="module")
def wheel_root():
    """(root, seconds the wheel took to build, the wheel's size)."""
    t0 = time.monotonic()
    run([REPO / "tools" / "wheel" / "build", "wheel"], timeout=1800, cwd=REPO)
    built_s = time.monotonic() - t0
    assert WHEEL.is_file(), f"no {WHEEL}"
    make_root()
    unmount_all()
    try:
        for what, args in (("proc", ["-t", "proc", "proc"]), ("sys", ["--rbind", "/sys"]),
                           ("dev", ["--rbind", "/dev"])):
            run(["mount", *args, ROOT / what], timeout=30)
            if what != "proc":
                run(["mount", "--make-rslave", ROOT / what], timeout=30)
        shutil.rmtree(ROOT / VENV.lstrip("/"), ignore_errors=True)
        shutil.copy(WHEEL, ROOT / "tmp" / WHEEL.name)
        run(["chroot", ROOT, "python3", "-m", "venv", VENV], timeout=300)
        run(["chroot", ROOT, f"{VENV}/bin/pip", "install", "-q", "--no-index",
             f"/tmp/{WHEEL.name}"], timeout=300)
        yield ROOT, built_s, WHEEL.stat().st_size
    finally:
        unmount_all()


def in_root(root, tmp_path, names):
    """Copies the programs `names` to tmp_path both here and at the same
    path inside the root, so that the profile's file names (the root's)
    are this machine's too; returns the paths."""
    inside = root / str(tmp_path).lstrip("/")
    inside.mkdir(parents=True, exist_ok=True)
    os.chmod(inside, 0o777)
    for n in names:
        shutil.copy(program(n), tmp_path / n)
        shutil.copy(program(n), inside / n)
    return inside


def profile_in_root(root, tmp_path, inside, opts, command):
    out = tmp_path / "profile.json"
    run(["chroot", root, f"{VENV}/bin/scalene-bpf", "run", "-o", out, *opts, "--", *command],
        timeout=300)
    shutil.copy(inside / "profile.json", out)
    return check_compat(out)


def test_wheel_is_manylinux_2_28(wheel_root):
    """auditwheel (PyPI's) finds the wheel consistent with manylinux_2_28
    for x86_64: glibc's own libraries and no symbol newer than 2.28."""
    _, built_s, size = wheel_root
    p = run([WHEEL_DIR / "venv" / "bin" / "auditwheel", "show", WHEEL], timeout=120)
    text = " ".join(p.stdout.split())
    assert 'consistent with the following platform tag: "manylinux_2_28_x86_64"' in text, text
    print(f"wheel {WHEEL.name}: {size / 1e6:.1f} MB, built in {built_s:.0f} s")


def test_wheel_split_in_fresh_root(wheel_root, tmp_path, accuracy):
    """The CPU split 20/30/50 of the host suite, by the installed wheel, on
    the root's own python3 (Debian 12's 3.11, a static build)."""
    root = wheel_root[0]
    inside = in_root(root, tmp_path, ["split.py", "spin_helper.py"])
    prof = profile_in_root(root, tmp_path, inside,
                           ["--profile-exclude", "spin_helper"],
                           ["python3", tmp_path / "split.py", "1.0", tmp_path / "spent.json"])
    spent = json.loads((inside / "spent.json").read_text())
    check_split(prof, str(tmp_path / "split.py"), spent, accuracy, label="wheel: ")
    assert prof["scalene_bpf"]["profiler_version"] == VERSION


def test_wheel_memory_in_fresh_root(wheel_root, tmp_path, accuracy):
    """Memory per line through the wheel's sampler (found in the
    virtualenv's lib/scalene-bpf/): 150 blocks of 4 MiB per line through
    Python's allocator and through C malloc, within the host suite's 5 %,
    and Python's share of each."""
    root = wheel_root[0]
    inside = in_root(root, tmp_path, ["mem_lines.py"])
    n = 150
    prof = profile_in_root(root, tmp_path, inside, ["--allocation-sampling-window", "512k"],
                           ["python3", tmp_path / "mem_lines.py", str(n)])
    prog = str(tmp_path / "mem_lines.py")
    assert prof["memory"] is True and prof["alloc_samples"] > 0
    for name in ("py_big", "c_big"):
        got = line_churn(prof, prog, name)
        accuracy(f"wheel {name} churn MB", n * 4, round(got, 1), "5%")
        assert abs(got - n * 4) <= 0.05 * n * 4, f"{name}: {got:.1f} MB, expected {n * 4}"
    assert line_row(prof, prog, "py_big")["n_python_fraction"] >= 0.95
    assert line_row(prof, prog, "c_big")["n_python_fraction"] <= 0.05


def test_wheel_entry_points(wheel_root):
    """`python -m scalene_bpf` runs the executable; the executable in the
    virtualenv's bin/ is the program itself (no Python in between), and
    without root it says how to run it with sudo, by its full path."""
    root = wheel_root[0]
    p = run(["chroot", root, f"{VENV}/bin/python", "-m", "scalene_bpf", "--version"], timeout=60)
    assert p.stdout.strip() == f"scalene-bpf {VERSION}", p.stdout
    with open(root / VENV.lstrip("/") / "bin" / "scalene-bpf", "rb") as f:
        assert f.read(4) == b"\x7fELF"
    p = subprocess.run(["chroot", "--userspec=65534:65534", root, f"{VENV}/bin/scalene-bpf",
                        "run", "--", "python3", "-c", "pass"], capture_output=True, text=True,
                       timeout=60, env=clean_env(), stdin=subprocess.DEVNULL)
    assert p.returncode == 1, p.stderr
    assert f"sudo {VENV}/bin/scalene-bpf run -- python3 -c pass" in p.stderr, p.stderr


def test_wheel_without_libcurl(wheel_root, tmp_path):
    """The root has no libcurl (the program links none): --otlp-endpoint
    says what to install and exits 1 before it starts; everything else runs
    without it (the other tests)."""
    root = wheel_root[0]
    assert not list((root / "usr" / "lib" / "x86_64-linux-gnu").glob("libcurl.so*"))
    p = subprocess.run(["chroot", root, f"{VENV}/bin/scalene-bpf", "--all", "--continuous",
                        "--otlp-endpoint", "http://127.0.0.1:9", "--duration", "1",
                        "-o", tmp_path / "out"],
                       capture_output=True, text=True, timeout=60, env=clean_env(),
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 1, p.stderr
    assert "needs libcurl" in p.stderr and "apt-get install libcurl4" in p.stderr, p.stderr


def test_wheel_gpu_library_in_fresh_root(wheel_root, tmp_path):
    """The wheel's GPU library, on the fake CUDA program of the host suite
    (tests/e2e/programs/gpu_fake_cuda.py, which plays the driver and loads
    the fake CUPTI first): `run` finds the library in the virtualenv's
    lib/scalene-bpf/, the library finds the program's CUPTI by itself (it
    links none), and every call and record reaches its line."""
    root = wheel_root[0]
    lib = root / VENV.lstrip("/") / "lib" / "scalene-bpf" / "libscalene-bpf-gpu.so"
    fake = BUILD / "tests" / "fakecupti" / "libcupti.so.13"
    if not fake.is_file():
        pytest.skip("no CUDA toolkit with CUPTI at build time: no fake CUPTI to test with")
    assert lib.is_file(), "the CUDA toolkit is here, but the wheel has no GPU library"
    inside = in_root(root, tmp_path, ["gpu_fake_cuda.py"])
    shutil.copy(fake, inside / "libcupti.so.13")
    shutil.copy(fake, tmp_path / "libcupti.so.13")
    prof = profile_in_root(root, tmp_path, inside, [],
                           ["python3", tmp_path / "gpu_fake_cuda.py", tmp_path / "libcupti.so.13",
                            tmp_path / "truth.json"])
    truth = json.loads((inside / "truth.json").read_text())
    gpu = prof["scalene_bpf"]["gpu"]
    assert gpu["library"] == f"{VENV}/lib/scalene-bpf/libscalene-bpf-gpu.so", gpu
    (proc,) = gpu["processes"]
    assert proc["status"] == "exited" and proc["cupti_found"] == "loaded by the program", gpu
    assert gpu["calls"] == truth["calls"] and gpu["records"] == 7, gpu
    assert gpu["records_unmatched"] == 0 and gpu["calls_outside_profiled_files"] == 0, gpu


def test_dist_tarball_in_fresh_root(wheel_root, tmp_path):
    """`make dist`'s tarball, unpacked anywhere in the same root: its
    bin/scalene-bpf finds its sampler in ../lib/scalene-bpf and profiles the
    memory of mem_lines.py's Python line within the same 5 %."""
    root = wheel_root[0]
    run([REPO / "tools" / "wheel" / "build", "dist"], timeout=1800, cwd=REPO)
    tarball = WHEEL_DIR / "dist" / f"scalene-bpf-{VERSION}-linux-x86_64.tar.gz"
    where = root / "opt" / "sbpf-dist"
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    run(["tar", "-xzf", tarball, "-C", where, "--strip-components=1"], timeout=60)
    exe = "/opt/sbpf-dist/bin/scalene-bpf"
    p = run(["chroot", root, exe, "--version"], timeout=60)
    assert p.stdout.strip() == f"scalene-bpf {VERSION}", p.stdout
    inside = in_root(root, tmp_path, ["mem_lines.py"])
    out = tmp_path / "profile.json"
    n = 150
    run(["chroot", root, exe, "run", "-o", out, "--allocation-sampling-window", "512k", "--",
         "python3", tmp_path / "mem_lines.py", str(n)], timeout=300)
    shutil.copy(inside / "profile.json", out)
    prof = check_compat(out)
    got = line_churn(prof, str(tmp_path / "mem_lines.py"), "py_big")
    assert abs(got - n * 4) <= 0.05 * n * 4, f"py_big: {got:.1f} MB, expected {n * 4}"
