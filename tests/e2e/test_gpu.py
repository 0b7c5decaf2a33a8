# SPDX-License-Identifier: BSD-2-Clause
"""GPU: `run` gives the program the GPU library (CUDA_INJECTION64_PATH);
each CUDA call's device work goes to the Python line that made it
(scalene_bpf.gpu.lines), and each line gets Scalene's GPU fields: the GPU's
use while it ran (n_gpu_percent) and the device memory then
(n_gpu_avg_memory_mb, n_gpu_peak_memory_mb).

No GPU is involved: the program (programs/gpu_fake_cuda.py) loads the
library itself over a fake libcupti.so.13 and plays CUDA's part, so what
is tested is the path from the library's probes through BPF and the loader
to the profile, not CUPTI or a driver.

`--pid` cannot inject anything into a running process: there NVML is
sampled from outside.  A fake libnvidia-ml.so.1 (tests/gpu/fake_nvml.c)
answers from a state file that the attached program (programs/nvml_target.py)
rewrites as it moves between its lines.
"""

import json
import subprocess
from pathlib import Path

import pytest

from e2e_helpers import (BUILD, check_share, clean_env, default_interpreter,
                         file_entry, finish, invoke, markers, profile_run,
                         program)

FAKE_CUPTI = BUILD / "tests" / "fakecupti" / "libcupti.so.13"
GPU_LIB = BUILD / "gpu" / "libscalene-bpf-gpu.so"

FAKE_NVML = BUILD / "tests" / "fakenvml" / "libnvidia-ml.so.1"

needs_gpu_lib = pytest.mark.skipif(
    not (FAKE_CUPTI.is_file() and GPU_LIB.is_file()),
    reason="no CUDA toolkit with CUPTI at build time: libscalene-bpf-gpu.so "
           "and the fake libcupti.so.13 were not built")


def lines_by_marker(profile, prog):
    rows = file_entry(profile, prog)["lines"]
    return {m: rows[n - 1] for m, n in markers(prog).items()}


@needs_gpu_lib
def test_gpu_work_per_line(tmp_path):
    prog = program("gpu_fake_cuda.py")
    side = tmp_path / "truth.json"
    res = profile_run(default_interpreter(), prog, [FAKE_CUPTI, side],
                      tmp=tmp_path, gui=True)
    prof = res.profile
    truth = json.loads(side.read_text())
    gpu = prof["scalene_bpf"]["gpu"]
    ctx = f"scalene_bpf.gpu: {gpu}"
    assert prof["gpu"] is True and prof["gpu_device"] == "GPU", ctx
    assert gpu["library"] == str(GPU_LIB.resolve()), ctx
    assert gpu["processes_collecting"] == 1, ctx
    (proc,) = gpu["processes"]
    assert proc["status"] == "exited" and proc["final"], ctx
    # The program loaded the (fake) CUPTI before CUDA started: that one.
    assert proc["cupti_found"] == "loaded by the program", ctx
    assert proc["calls"] == truth["calls"] and proc["records"] == 7, ctx
    # Every call seen with its line, every record joined to its call.
    assert gpu["calls"] == truth["calls"], ctx
    assert gpu["calls_outside_profiled_files"] == 0, ctx
    assert gpu["records"] == 7 and gpu["records_unmatched"] == 0, ctx
    assert gpu["lost_ringbuf_full"] == 0, ctx
    # The union of the kernels: the 0.6 s one and the graph's 3 x 1 ms.
    assert abs(gpu["busy_s"] - (truth["kernel_s"] + 0.003)) < 1e-6, ctx
    at = markers(prog)
    by_line = {r["line"]: r for r in gpu["lines"] if r["file"] == prog}
    launch = by_line[at["launch"]]
    assert launch["calls"] == 1 and launch["kernels"] == 1, ctx
    assert abs(launch["kernel_s"] - truth["kernel_s"]) < 1e-6, ctx
    # Kernel names, demangled; a graph's kernels all go to its launch line.
    assert [(k["name"], k["kernels"]) for k in launch["kernels_by_name"]] == \
        [("busy_spin(float*, int)", 1)], ctx
    graph = by_line[at["graph"]]
    assert graph["kernels"] == 3, ctx
    assert {k["name"]: k["kernels"] for k in graph["kernels_by_name"]} == \
        truth["graph"], ctx
    assert graph["kernels_by_name"][0]["name"] == "scale(float*, float)", ctx
    assert abs(graph["kernels_by_name"][0]["kernel_s"] - 0.002) < 1e-9, ctx
    assert by_line[at["copy"]]["copy_mb"]["htod"] == truth["copy_mb"], ctx
    assert by_line[at["alloc"]]["alloc_mb"] == truth["alloc_mb"], ctx
    assert by_line[at["free"]]["free_mb"] == truth["alloc_mb"], ctx
    # Scalene's meaning: the GPU busy while the line ran.
    rows = lines_by_marker(prof, prog)
    sync, idle = rows["sync"], rows["idle"]
    assert sync["n_gpu_percent"] >= 90, (sync, ctx)
    assert idle["n_gpu_percent"] <= 5, (idle, ctx)
    # The 256 MiB were allocated while both ran (freed after).
    for row in (sync, idle):
        assert abs(row["n_gpu_peak_memory_mb"] - truth["alloc_mb"]) < 0.01, row
        assert abs(row["n_gpu_avg_memory_mb"] - truth["alloc_mb"]) < 0.01, row
    # The GPU flame graph's stacks: the device time of the kernels and
    # copies by the stack that launched them, adding up to the lines'.
    stacks = prof["scalene_bpf"]["gpu_stacks"]
    device_s = sum(r["kernel_s"] + r.get("copy_s", 0) for r in gpu["lines"])
    assert abs(sum(s for _, s in stacks) - device_s) < 1e-6, (stacks, ctx)
    heaviest, seconds = stacks[0]
    assert heaviest[-1]["filename_or_module"] == prog, heaviest
    assert heaviest[-1]["line"] == at["launch"], heaviest
    assert abs(seconds - truth["kernel_s"]) < 1e-6, stacks
    assert prof["scalene_bpf"]["stack_bounds"]["gpu"]["distinct"] == len(stacks), prof[
        "scalene_bpf"]["stack_bounds"]


@needs_gpu_lib
def test_kernels_of_threads_without_python(tmp_path):
    """A kernel launched by a thread with no Python frame (PyTorch's
    autograd threads launch every backward kernel) goes to the line the main
    thread waits in (loss.backward()), as those threads' CPU time does; the
    profile counts such calls.  The forward kernel stays on its own line."""
    prog = program("gpu_native_launch.py")
    side = tmp_path / "truth.json"
    res = profile_run(default_interpreter(), prog, [FAKE_CUPTI, side],
                      tmp=tmp_path)
    truth = json.loads(side.read_text())
    assert truth["thread_rc"] == 0, truth
    gpu = res.profile["scalene_bpf"]["gpu"]
    ctx = f"scalene_bpf.gpu: {gpu}"
    assert gpu["calls"] == truth["calls"], ctx
    assert gpu["calls_on_main_thread_line"] == 1, ctx
    assert gpu["calls_on_no_line"] == 0, ctx
    assert gpu["calls_outside_profiled_files"] == 0, ctx
    assert gpu["records"] == 2 and gpu["records_unmatched"] == 0, ctx
    at = markers(prog)
    by_line = {r["line"]: r for r in gpu["lines"] if r["file"] == prog}
    assert set(by_line) == {at["forward"], at["backward"]}, ctx
    fwd, bwd = by_line[at["forward"]], by_line[at["backward"]]
    assert fwd["calls"] == 1 and fwd["kernels"] == 1, ctx
    assert abs(fwd["kernel_s"] - truth["forward_s"]) < 1e-6, ctx
    assert bwd["calls"] == 1 and bwd["kernels"] == 1, ctx
    assert abs(bwd["kernel_s"] - truth["backward_s"]) < 1e-6, ctx
    assert [k["name"] for k in bwd["kernels_by_name"]] == ["backward(float*)"], ctx
    # The native thread's CPU time is on the same line.
    rows = file_entry(res.profile, prog)["lines"]
    assert rows[at["backward"] - 1]["n_cpu_percent_c"] > 0, rows[at["backward"] - 1]


@needs_gpu_lib
def test_cupti_lost_mid_run(tmp_path):
    """Another CUPTI client finalizes CUPTI mid-run (torch.profiler's
    teardown): the library's next flush fails, and from then on it asks
    nothing of CUPTI.  The program runs to its end, the work delivered
    before stays on its line, the launch after is not followed, and the
    profile says the GPU profile stopped, why, and when."""
    prog = program("gpu_cupti_lost.py")
    side = tmp_path / "truth.json"
    res = profile_run(default_interpreter(), prog, [FAKE_CUPTI, side],
                      tmp=tmp_path)
    truth = json.loads(side.read_text())
    gpu = res.profile["scalene_bpf"]["gpu"]
    ctx = f"scalene_bpf.gpu: {gpu}"
    (proc,) = gpu["processes"]
    assert proc["status"].startswith("stopped mid-run"), ctx
    assert proc["final"], ctx
    assert proc["failed_call"] == 6 and proc["cupti_error"] == 7, ctx
    assert truth["lost_after_s_at_least"] - 0.3 <= proc["stopped_after_s"] \
        <= truth["lost_within_s"] + 0.5, ctx
    assert proc["calls"] == 1 and proc["records"] == 1, ctx
    at = markers(prog)
    by_line = {r["line"]: r for r in gpu["lines"] if r["file"] == prog}
    assert set(by_line) == {at["before"]}, ctx
    assert abs(by_line[at["before"]]["kernel_s"] - truth["kernel_s"]) < 1e-6, ctx
    assert "the GPU profile of process" in res.stderr and "stops here" in res.stderr, res.stderr


@needs_gpu_lib
def test_virtual_memory_management(tmp_path):
    """Memory taken with cuMemCreate (PyTorch's expandable segments), of
    which CUPTI writes no record: the library makes one from the call, so
    the device's goes to its line and into the lines' device memory while
    held, the pinned host memory is counted apart, and the release takes
    back what the create took."""
    prog = program("gpu_fake_vmm.py")
    side = tmp_path / "truth.json"
    res = profile_run(default_interpreter(), prog, [FAKE_CUPTI, side], tmp=tmp_path)
    prof = res.profile
    truth = json.loads(side.read_text())
    gpu = prof["scalene_bpf"]["gpu"]
    ctx = f"scalene_bpf.gpu: {gpu}"
    assert gpu["calls"] == truth["calls"] and gpu["records"] == 3, ctx
    assert gpu["records_unmatched"] == 0, ctx
    at = markers(prog)
    by_line = {r["line"]: r for r in gpu["lines"] if r["file"] == prog}
    assert by_line[at["create"]]["alloc_mb"] == truth["device_mb"], ctx
    assert by_line[at["create"]]["host_alloc_mb"] == 0, ctx
    assert by_line[at["pinned"]]["host_alloc_mb"] == truth["pinned_mb"], ctx
    assert by_line[at["pinned"]]["alloc_mb"] == 0, ctx
    assert by_line[at["release"]]["free_mb"] == truth["device_mb"], ctx
    assert gpu["alloc_mb"] == gpu["free_mb"] == truth["device_mb"], ctx
    assert gpu["peak_memory_mb"] == truth["device_mb"], ctx
    # While it is held, the spinning line's samples see it.
    held = lines_by_marker(prof, prog)["held"]
    assert abs(held["n_gpu_peak_memory_mb"] - truth["device_mb"]) < 0.01, held


def test_no_gpu_option(tmp_path):
    """--no-gpu (and --cpu-only, as in Scalene): the program gets no
    library, and the profile says why."""
    prog = tmp_path / "env.py"
    prog.write_text("import os, sys\n"
                    "open(sys.argv[1], 'w').write("
                    "os.environ.get('CUDA_INJECTION64_PATH', ''))\n")
    side = tmp_path / "env.txt"
    for opt in ("--no-gpu", "--cpu-only"):
        res = profile_run(default_interpreter(), prog, [side], tmp=tmp_path,
                          opts=(opt,))
        assert side.read_text() == "", opt
        assert res.profile["gpu"] is False
        assert res.profile["scalene_bpf"]["gpu"]["off"] == opt


@needs_gpu_lib
def test_library_given_to_every_program(tmp_path):
    """Without --no-gpu a program that never uses CUDA still has the
    variable (only the driver reads it) and its profile says GPU is off."""
    prog = tmp_path / "env.py"
    prog.write_text("import os, sys\n"
                    "open(sys.argv[1], 'w').write("
                    "os.environ.get('CUDA_INJECTION64_PATH', ''))\n")
    side = tmp_path / "env.txt"
    res = profile_run(default_interpreter(), prog, [side], tmp=tmp_path)
    assert Path(side.read_text()) == GPU_LIB.resolve()
    assert res.profile["gpu"] is False
    gpu = res.profile["scalene_bpf"]["gpu"]
    assert gpu["processes_collecting"] == 0 and gpu["records"] == 0, gpu


@needs_gpu_lib
def test_sampled_calls(tmp_path):
    """--gpu-call-sample 4: 1 in 4 calls probed at random; the others cost
    no trap and their records are counted apart, and each line's launched
    work is estimated from its probed calls (1000 calls of 1 ms and 1000 of
    3 ms: a quarter probed, so about 250 each, within 20 % of the truth)."""
    prog = program("gpu_fake_sampled.py")
    side = tmp_path / "truth.json"
    res = profile_run(default_interpreter(), prog, [FAKE_CUPTI, side],
                      tmp=tmp_path, opts=("--gpu-call-sample", "4"))
    truth = json.loads(side.read_text())
    gpu = res.profile["scalene_bpf"]["gpu"]
    ctx = f"scalene_bpf.gpu: {gpu}"
    (proc,) = gpu["processes"]
    calls = 2 * truth["calls"]
    assert proc["calls"] == calls, ctx
    # A quarter probed, each call on its own: binomial (sd ~19 of 500).
    check_share(proc["calls_probed"], calls / 4, calls, "calls probed", whole=calls,
                ctx=ctx)
    assert gpu["calls"] == proc["calls_probed"], ctx
    assert gpu["call_sample"] == 4, ctx
    assert gpu["records"] == calls, ctx
    assert gpu["records_unmatched"] == 0, ctx
    assert gpu["records_not_sampled"] == calls - proc["calls_probed"], ctx
    # The run's totals come from every record: exact.
    assert gpu["kernels"] == calls, ctx
    assert abs(gpu["kernel_s"] - truth["short_s"] - truth["long_s"]) < 1e-6, ctx
    at = markers(prog)
    by_line = {r["line"]: r for r in gpu["lines"] if r["file"] == prog}
    for mark in ("short", "long"):
        row = by_line[at[mark]]
        # Each line's estimates are its probed calls (binomial: a quarter
        # of its calls) times four: the range of that count, times four
        # (about 20 % either side for 1000 calls).
        n = truth["calls"]
        for key, whole in (("kernels", n), ("calls", n), ("kernel_s", truth[f"{mark}_s"])):
            check_share(row[key], whole, n, f"{mark} line {key}", whole=4 * whole,
                        ctx=f"{row}; {ctx}")


needs_fake_nvml = pytest.mark.skipif(
    not FAKE_NVML.is_file(),
    reason="the fake libnvidia-ml.so.1 was not built (make unit-tests)")


def _attach_nvml(tmp_path, mode="", opts=(), env=None, duration=5):
    """Attach for duration seconds to programs/nvml_target.py; returns the
    Result (profile not yet read)."""
    state, stop = tmp_path / "nvml.state", tmp_path / "stop"
    stop.unlink(missing_ok=True)
    target = subprocess.Popen(
        [default_interpreter(), program("nvml_target.py"), str(state),
         str(stop)] + ([mode] if mode else []),
        cwd=str(tmp_path), env=clean_env(), stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = target.stdout.readline()
    if line.strip() != "ready":
        target.kill()
        raise AssertionError(f"target did not start: {line!r} "
                             f"{target.stderr.read()}")
    env = clean_env({"FAKE_NVML_STATE": str(state), **(env or {})})
    try:
        res = invoke(["--pid", target.pid, "--duration", duration, *opts,
                      "-o", tmp_path / "profile.json"],
                     cwd=tmp_path, timeout=60, env=env)
    finally:
        stop.touch()
        try:
            target.wait(timeout=20)
        except subprocess.TimeoutExpired:
            target.kill()
    return res


@needs_fake_nvml
@pytest.mark.parametrize("mode", ["", "device"])
def test_attach_nvml_sampling(tmp_path, mode):
    """The GPU line runs while the (fake) GPU is 100 % busy with 512 MiB of
    the process's memory on it, the cpu line while it is idle and empty:
    each line's GPU fields say so, within a poll period at each switch
    (100 ms of every 0.8 s), from per-process utilisation or, where the
    device gives none, the device's."""
    res = _attach_nvml(tmp_path, mode, env={"SCALENE_BPF_NVML_LIB":
                                            str(FAKE_NVML)})
    finish(res, tmp_path / "profile.json", gui=True)
    prof = res.profile
    gpu = prof["scalene_bpf"]["gpu"]
    ctx = f"scalene_bpf.gpu: {gpu}"
    assert prof["gpu"] is True and prof["gpu_device"] == "GPU", ctx
    assert gpu["method"] == "nvml-sampling", ctx
    assert gpu["library"] == str(FAKE_NVML), ctx
    assert gpu["devices"] == ["Fake H100"], ctx
    assert gpu["utilization"] == ("device" if mode else "per_process"), ctx
    assert gpu["memory_read"] is True, ctx
    # About one poll per 100 ms over the 5 s, none failed.
    assert 30 <= gpu["polls"] <= 60, ctx
    assert gpu["polls_failed"] == 0 and gpu["polls_memory_unread"] == 0, ctx
    assert "last_error" not in gpu, ctx
    assert abs(gpu["peak_memory_mb"] - 512) < 1e-6, ctx
    # Busy half the time, less the attach's start.
    assert 1.5 <= gpu["busy_s"] <= 3.0, ctx
    # No launch sites from sampling: the table stays empty.
    assert gpu["lines"] == [], ctx
    rows = lines_by_marker(prof, program("nvml_target.py"))
    busy, idle = rows["gpu"], rows["cpu"]
    assert busy["n_gpu_percent"] >= 80, (busy, ctx)
    assert idle["n_gpu_percent"] <= 20, (idle, ctx)
    assert abs(busy["n_gpu_peak_memory_mb"] - 512) < 1e-6, busy
    assert busy["n_gpu_avg_memory_mb"] >= 0.8 * 512, busy
    assert idle["n_gpu_avg_memory_mb"] <= 0.2 * 512, idle
    # The views say where the numbers come from.
    view = subprocess.run([str(BUILD / "scalene-bpf"), "view", "--cli",
                           str(tmp_path / "profile.json")],
                          capture_output=True, text=True, timeout=60,
                          env=clean_env(), stdin=subprocess.DEVNULL)
    assert "sampled through NVML" in view.stdout, view.stdout


def test_attach_without_nvml(tmp_path):
    """No NVML (no driver, or here a library that is not there): no error,
    gpu false, and the reason in the profile; --no-gpu and --cpu-only do
    not open it at all."""
    missing = tmp_path / "no" / "libnvidia-ml.so.1"
    res = _attach_nvml(tmp_path, env={"SCALENE_BPF_NVML_LIB": str(missing)},
                       duration=1.5)
    finish(res, tmp_path / "profile.json")
    gpu = res.profile["scalene_bpf"]["gpu"]
    assert res.profile["gpu"] is False, gpu
    assert gpu["method"] == "nvml-sampling", gpu
    assert gpu["off"].startswith(f"{missing} could not be loaded"), gpu
    # Named by the user: said on stderr too.
    assert f"no GPU profiling: {missing}" in res.stderr, res.stderr
    for opt in ("--no-gpu", "--cpu-only"):
        env = {"SCALENE_BPF_NVML_LIB": str(FAKE_NVML)}
        res = _attach_nvml(tmp_path, opts=(opt,), env=env, duration=1.5)
        finish(res, tmp_path / "profile.json")
        gpu = res.profile["scalene_bpf"]["gpu"]
        assert res.profile["gpu"] is False and gpu["off"] == opt, (opt, gpu)
