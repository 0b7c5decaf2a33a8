# SPDX-License-Identifier: BSD-2-Clause
"""Time goes to the code that ran: the right file and the right lines."""

import json

import pytest

from e2e_helpers import BUILD, line_time, markers, profile_run, program


def test_code_objects_at_a_reused_address(python, tmp_path, accuracy):
    prog = program("code_reuse.py")
    first, second = program("spin_first.py"), program("spin_second.py")
    side = tmp_path / "reuse.json"
    res = profile_run(python, prog, [first, second, side], tmp=tmp_path)
    info = json.loads(side.read_text())
    if not info["reused"]:
        pytest.skip("the allocator did not put the second code object where "
                    "the first was: nothing to test this time")
    hot = markers(first)["hot"]
    files = {k: round(v["percent_cpu_time"], 1)
             for k, v in res.profile["files"].items()}
    ctx = f"files: {files}; each file ran {info['first_s']:.2f} s / " \
          f"{info['second_s']:.2f} s of CPU"
    a = line_time(res.profile, first, hot)
    b = line_time(res.profile, second, hot)
    accuracy("spin_first.py hot line s", info["first_s"], a.seconds, "25%")
    accuracy("spin_second.py hot line s", info["second_s"], b.seconds, "25%")
    # Each file's loop ran for its own time; 25% is slack for the loop's
    # other lines (the `for _` header).
    assert abs(a.seconds / info["first_s"] - 1) <= 0.25, ctx
    assert abs(b.seconds / info["second_s"] - 1) <= 0.25, ctx
    # Walks kept what they read of code objects from one walk to the next,
    # and the probe on the deallocator told them when the first was freed
    # (without it, the second file's time went to the first's lines).
    bpf = res.profile["scalene_bpf"]["bpf"]
    assert bpf["code_dealloc_probes"] == {"placed": 1, "failed": 0, "before_exec": 1}, bpf
    assert bpf["code_objects_freed"] >= 1, bpf


def test_threads_without_python_work_for_the_main_line(python, tmp_path, accuracy):
    """A library's own threads (no Python thread state, as in BLAS or
    OpenMP) spin 2 x 0.6 s while the calling line waits for them: their CPU
    time is that line's native time, as Scalene counts the process's CPU
    time beyond its Python time; the wait itself is the line's system time,
    and nothing is left on no line."""
    prog = program("native_threads.py")
    side = tmp_path / "pool.json"
    res = profile_run(python, prog, [BUILD / "tests" / "libnativepool.so", side],
                      tmp=tmp_path)
    truth = json.loads(side.read_text())["pool_cpu_s"]
    facts = res.profile["scalene_bpf"]
    lines = markers(prog)
    pool, own = line_time(res.profile, prog, lines["pool"]), line_time(res.profile, prog,
                                                                       lines["own"])
    ctx = (f"pool line {pool.python:.1f}/{pool.native:.1f}/{pool.system:.1f} %, own line "
           f"{own.python:.1f}/{own.native:.1f}/{own.system:.1f} % of "
           f"{facts['total_sampled_s']:.2f} s; credited "
           f"{facts['native_threads_credited_s']:.3f} s; unattributed "
           f"{facts['unattributed']}; pool threads ran {truth:.3f} s")
    native_s = pool.native * pool.total_sampled_s / 100
    accuracy("native threads' CPU credited s", round(truth, 3),
             round(facts["native_threads_credited_s"], 3), "10%")
    accuracy("pool line native s", round(truth, 3), round(native_s, 3), "15%")
    assert abs(facts["native_threads_credited_s"] / truth - 1) <= 0.10, ctx
    # Their time in the kernel (reading the thread's CPU clock) is system.
    assert abs(native_s / truth - 1) <= 0.15, ctx
    assert facts["unattributed"]["threads_without_python_s"] <= 0.1 * truth, ctx
    # The main thread's own loop is not charged with the pool's work.
    assert own.native * own.total_sampled_s / 100 <= 0.1 * truth, ctx
