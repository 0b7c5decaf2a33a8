# SPDX-License-Identifier: BSD-2-Clause
"""--native: Python, native and kernel frames in one stack, in the order they
call each other, on every interpreter (programs/native_mixed.py):

- Python -> C -> Python: the samples at the comparator's line, called back
  by libc's qsort through ctypes, read: the qsort line, libc's qsort, ...,
  the comparator's line (outermost first);
- native below a line: zlib.compress's samples end in libz;
- kernel below a line: os.read of /dev/zero's samples end in the kernel's
  read path;
- BLAS below a numpy line (numpy from PyPI for each interpreter: make
  test-numpy).

A sample whose unwind stops short (a frame in code with no unwind data: the
few instructions of libffi's closure trampolines) keeps its Python frames
without the native frames between them, so each check allows that: the
share of samples in order must be what a correct profile gives when at least
FAITHFUL of them unwind whole, by the binomial range at their count.  The
profile must also say how its stacks were had (scalene_bpf.native).
"""

import subprocess

import pytest

from e2e_helpers import (BUILD, check_share, clean_env, find_interpreter, markers,
                         profile_run, program)

PROGRAM = program("native_mixed.py")
LINES = markers(PROGRAM)
# The least share of samples whose stacks come whole, taken as the truth:
# measured 96-100 % on all ten interpreters (the rest stop in libffi's
# trampolines, or in a page past the stack's copy).
FAITHFUL = 0.9
# Samples each checked line must have (0.6 s at 997 Hz gives about 550).
MIN_SAMPLES = 150


def entries(profile):
    """(frames, count) of combined_stacks written whole."""
    out = []
    for frames, count in profile["combined_stacks"]:
        if any(f["kind"] == "py" and f["display_name"].startswith("[")
               for f in frames):
            continue  # merged or cut: not judged
        out.append((frames, count))
    return out


def at(f, name):
    return (f["kind"] == "py" and f["filename_or_module"].endswith("native_mixed.py")
            and f["line"] == LINES[name])


def innermost_py(frames):
    for i in range(len(frames) - 1, -1, -1):
        if frames[i]["kind"] == "py":
            return i
    return None


def check_ordered(profile, what, ok, n):
    assert n >= MIN_SAMPLES, f"{what}: {n} samples, fewer than {MIN_SAMPLES}"
    check_share(ok / n, FAITHFUL, n, what, side="low")


def below_line(profile, name, native):
    """Samples whose innermost Python frame is at the line, and of those the
    ones with a frame `native` accepts inside it."""
    ok = n = 0
    for frames, count in entries(profile):
        i = innermost_py(frames)
        if i is None or not at(frames[i], name):
            continue
        n += count
        if any(native(f) for f in frames[i + 1:]):
            ok += count
    return ok, n


def callbacks_in_order(profile):
    """Samples at the comparator's line, and of those the ones whose stack
    reads qsort line, libc's qsort, comparator line."""
    ok = n = 0
    for frames, count in entries(profile):
        cb = next((i for i, f in enumerate(frames) if at(f, "callback")), None)
        if cb is None:
            continue
        n += count
        line = next((i for i, f in enumerate(frames) if at(f, "qsort")), None)
        qsort = next((i for i, f in enumerate(frames)
                      if f["kind"] == "native"
                      and f["display_name"].startswith("qsort")
                      and "libc" in f["filename_or_module"]), None)
        if line is not None and qsort is not None and line < qsort < cb:
            ok += count
    return ok, n


UNWIND = {"copy": "stack copy unwound by libdw",
          "bpf": "unwound in BPF with .eh_frame tables"}


def native_opts(unwind):
    return ["--native"] if unwind == "copy" else ["--native-unwind", unwind]


def check_native_facts(profile, unwind="copy", whole=True):
    n = profile["scalene_bpf"]["native"]
    assert n["method"] == UNWIND[unwind]
    bpf = n.get("bpf")
    assert (bpf is not None) == (unwind == "bpf"), n
    # A sample of a process libdw could not take (gone as it came) is
    # counted, not unwound.  With unwinding in BPF, the samples sent before
    # BPF had the process's tables are copies, unwound by libdw.
    assert n["samples"] > 0
    unwinds = n["unwinds"] + (bpf["unwinds"] if bpf else 0)
    assert unwinds + n["samples_without_unwinder"] == n["samples"], n
    # (a forked child that exec'd another program or exited before the
    # loader read its samples: ctypes.util.find_library runs ldconfig).
    assert n["samples_without_unwinder"] <= max(2, n["samples"] // 100), n
    assert sum(n["unwinds_ended"].values()) == n["unwinds"]
    if bpf:
        assert sum(bpf["unwinds_ended"].values()) == bpf["unwinds"]
        assert bpf["tables"]["files"] >= 2 and bpf["tables"]["rows"] > 0, bpf
        assert bpf["unwinds"] > 0, n
    if not whole:
        return
    if bpf:
        # Most samples are unwound in BPF: copies come from the time before
        # a process's tables are given, or from code of a library loaded
        # since (the tables then follow).  (An import of numpy, library
        # after library, is not "most samples": whole=False.)
        assert bpf["unwinds"] > n["unwinds"], n
    root = n["unwinds_ended"]["at_thread_start"] + (
        bpf["unwinds_ended"]["at_thread_start"] if bpf else 0)
    check_share(root / unwinds, FAITHFUL, unwinds,
                "unwinds that reached the thread's first frame", side="low")


@pytest.mark.parametrize("unwind", ["copy", "bpf"])
def test_mixed_order(python, unwind, tmp_path):
    profile = profile_run(python, PROGRAM, tmp=tmp_path,
                          opts=native_opts(unwind) + ["--cpu-only"]).profile
    check_native_facts(profile, unwind)
    check_ordered(profile, "comparator samples under qsort under the qsort line",
                  *callbacks_in_order(profile))
    check_ordered(profile, "zlib line samples in libz", *below_line(
        profile, "zlib", lambda f: f["kind"] == "native"
        and "libz" in f["filename_or_module"]))
    check_ordered(profile, "read line samples in the kernel's read", *below_line(
        profile, "read", lambda f: f["filename_or_module"] == "[kernel]"
        and "read" in f["display_name"]))


def numpy_env(python):
    """The environment that gives python numpy: its ABI's folder of
    `make test-numpy` on PYTHONPATH."""
    tag = subprocess.run(
        [python, "-c", "import sys, sysconfig; print('cp%d%d%s' % (*sys.version_info[:2], "
         "'t' if sysconfig.get_config_var('Py_GIL_DISABLED') else ''))"],
        capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    folder = BUILD / "numpy" / tag
    if not (folder / "numpy").is_dir():
        pytest.skip(f"no numpy for {tag} in {folder} (make test-numpy)")
    return clean_env({"PYTHONPATH": str(folder)})


@pytest.mark.parametrize("unwind", ["copy", "bpf"])
def test_blas_under_numpy_line(python, unwind, tmp_path):
    """With numpy (a wheel from PyPI for each interpreter's ABI), a matrix
    product's samples end in its BLAS (OpenBLAS, one thread)."""
    profile = profile_run(python, PROGRAM, tmp=tmp_path, env=numpy_env(python),
                          opts=native_opts(unwind) + ["--cpu-only"]).profile
    check_native_facts(profile, unwind, whole=False)
    check_ordered(profile, "numpy line samples in BLAS", *below_line(
        profile, "blas", lambda f: f["kind"] == "native"
        and "blas" in f["filename_or_module"].lower()))


def test_blas_worker_under_its_line(tmp_path):
    """A BLAS worker thread has no Python frame: its time goes to the line
    the main thread is at (as without --native), and its own native stack
    goes under that line, after a frame naming the thread."""
    python = BUILD / "venv" / "bin" / "python"
    if not python.exists():
        pytest.skip("no test venv (make test-venv)")
    prog = program("blas_threads.py")
    line = markers(prog)["blas"]
    profile = profile_run(str(python), prog, tmp=tmp_path,
                          opts=["--native", "--cpu-only"]).profile
    check_native_facts(profile, whole=False)
    ok = n = 0
    for frames, count in entries(profile):
        mark = next((i for i, f in enumerate(frames)
                     if f["kind"] == "native" and f["display_name"].startswith("[thread ")),
                    None)
        if mark is None or mark == 0:
            continue
        above = frames[mark - 1]
        if not (above["kind"] == "py" and above["filename_or_module"].endswith("blas_threads.py")
                and above["line"] == line):
            continue
        assert all(f["kind"] == "native" for f in frames[mark + 1:]), frames
        n += count
        if any("blas" in f["filename_or_module"].lower() for f in frames[mark + 1:]):
            ok += count
    check_ordered(profile, "the BLAS worker's samples under the product's line in BLAS", ok, n)


def test_without_native_no_native_frames(tmp_path):
    """Without --native, the stacks are Python frames and at most the leaf
    native symbol, as before."""
    python = find_interpreter("py3.12")
    profile = profile_run(python, PROGRAM, ["0.2"], tmp=tmp_path,
                          opts=["--cpu-only"]).profile
    assert "native" not in profile["scalene_bpf"]
    for frames, _ in profile["combined_stacks"]:
        kinds = [f["kind"] for f in frames]
        assert "native" not in kinds[:-1], kinds
        assert all(f["filename_or_module"] != "[kernel]" for f in frames)


@pytest.mark.parametrize("unwind", ["copy", "bpf"])
def test_native_at_a_low_rate(python, unwind, tmp_path):
    """The same program at 97 samples a second, for the kernel matrix
    (tools/vmtest), whose emulated guests run the loader too slowly for
    --native at the default rate: the BPF side's copies and kernel frames
    on each kernel's build, judged as above at their counts."""
    profile = profile_run(python, PROGRAM, ["1.5"], tmp=tmp_path,
                          opts=native_opts(unwind) + ["--cpu-only", "--rate", "97"]).profile
    check_native_facts(profile, unwind)
    for what, (ok, n) in (
            ("comparator samples under qsort under the qsort line",
             callbacks_in_order(profile)),
            ("read line samples in the kernel's read", below_line(
                profile, "read", lambda f: f["filename_or_module"] == "[kernel]"
                and "read" in f["display_name"]))):
        assert n >= 20, f"{what}: {n} samples"
        check_share(ok / n, FAITHFUL, n, what, side="low")


MEM_PROGRAM = program("native_mem_wait.py")
MEM_LINES = markers(MEM_PROGRAM)


def at_mem(f, name):
    return (f["kind"] == "py" and f["filename_or_module"].endswith("native_mem_wait.py")
            and f["line"] == MEM_LINES[name])


def weighed_below(stacks, name, native):
    """Of the memory stacks through the line (numpy's arrays are made in
    numpy's own Python code below it): their megabytes, and those of the
    ones with a frame `native` accepts inside their innermost Python frame;
    and how many stacks there were."""
    ok = total = 0.0
    n = 0
    for frames, mb in stacks:
        i = innermost_py(frames)
        if i is None or not any(at_mem(f, name) for f in frames[:i + 1]):
            continue
        n += 1
        total += mb
        if any(native(f) for f in frames[i + 1:]):
            ok += mb
    return ok, total, n


@pytest.mark.parametrize("unwind", ["copy", "bpf"])
def test_allocations_from_c(unwind, tmp_path):
    """Memory stacks carry the C frames that allocated: zlib.compressobj's
    state comes from libz's deflateInit2_, numpy's arrays from numpy's C
    code; none of the allocation sampler's own frames are left in them."""
    python = BUILD / "venv" / "bin" / "python"
    if not python.exists():
        pytest.skip("no test venv (make test-venv)")
    profile = profile_run(str(python), MEM_PROGRAM, tmp=tmp_path,
                          opts=native_opts(unwind)).profile
    # (Allocations while numpy is imported come from stacks deeper than
    # the copy: those end there, with their Python frames all the same.)
    check_native_facts(profile, unwind, whole=False)
    stacks = profile["memory_stacks"]
    for frames, _ in stacks:
        assert not any("scalene-bpf-sampler" in f["filename_or_module"] for f in frames), frames
    rows = profile["files"][str(MEM_PROGRAM)]["lines"]
    for name, lib in (("zlib", "libz"), ("numpy", "numpy")):
        ok, total, n = weighed_below(stacks, name, lambda f: f["kind"] == "native"
                                     and lib in f["filename_or_module"])
        samples = rows[MEM_LINES[name] - 1]["n_mallocs"]
        assert samples >= 20 and total > 0, (name, samples, total, n)
        # Each sample's stack is one of the line's: the share of megabytes
        # in stacks with the C frame, judged as a share of the samples.
        check_share(ok / total, FAITHFUL, samples, f"{name} line's memory in {lib}", side="low")


@pytest.mark.parametrize("unwind", ["copy", "bpf"])
def test_waits_in_libc(python, unwind, tmp_path):
    """Off-CPU stacks carry the native frames the thread blocked in: the
    sleep line's blocked samples end in libc (clock_nanosleep, or select
    up to 3.10), and below it in the kernel's frames of that system call,
    read where the thread slept."""
    profile = profile_run(python, MEM_PROGRAM, ["0.8"], tmp=tmp_path,
                          opts=native_opts(unwind) + ["--cpu-only"]).profile
    ok = kern = n = 0
    for frames, count in entries(profile):
        i = innermost_py(frames)
        if i is None or not at_mem(frames[i], "sleep"):
            continue
        n += count
        if any(f["kind"] == "native" and "libc" in f["filename_or_module"]
               for f in frames[i + 1:]):
            ok += count
        if any(f["filename_or_module"] == "[kernel]" and
               ("nanosleep" in f["display_name"] or "select" in f["display_name"])
               for f in frames[i + 1:]):
            kern += count
    check_ordered(profile, "sleep line samples in libc", ok, n)
    check_ordered(profile, "sleep line samples in the kernel's sleep", kern, n)
