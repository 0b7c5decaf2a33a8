# SPDX-License-Identifier: BSD-2-Clause
"""GIL wait: the main thread's blocked time spent waiting for the GIL is
named per line (n_gil_wait_percent, part of n_blocked_percent and so of
n_sys_percent) and in total (scalene_bpf.gil_wait_s)."""

import json

from e2e_helpers import (clean_env, find_interpreter, hot_lines, line_time, markers,
                         profile_run, program)
from test_view_cli import row_of, view
from test_view_export import check_pprof, pprof_message  # noqa: F401 (a fixture)
from test_view_html import file_block, js_fixed, page_of, render_ok

SECONDS = 1.0


def gil_s(t):
    return t.extra.get("n_gil_wait_percent", 0) / 100.0 * t.total_sampled_s


def blocked_s(t):
    return t.extra.get("n_blocked_percent", 0) / 100.0 * t.total_sampled_s


def test_gil_wait_named_on_the_waiting_line(python, tmp_path, accuracy):
    check_gil_contend(python, tmp_path, accuracy)


def test_free_threaded_with_its_gil_on(tmp_path, accuracy):
    """The free-threaded build with PYTHON_GIL=1: its GIL is back, and its
    wait is what it is in the other builds; the profile says it was on."""
    res = check_gil_contend(find_interpreter("ft3.13-static"), tmp_path, accuracy,
                            env=dict(clean_env(), PYTHON_GIL="1"))
    interps = res.profile["scalene_bpf"]["interpreters"]
    assert all(i["free_threaded"] and i["gil_enabled"] is True for i in interps), interps
    rc, out, err = view(res.path)
    assert rc == 0, err
    assert "GIL wait:" in out and "its GIL turned on" in out, out


def check_gil_contend(python, tmp_path, accuracy, env=None):
    """gil_contend.py: the main thread's loop line waits for the GIL about
    half its time (a free-threaded build with its GIL off: not at all)."""
    prog = program("gil_contend.py")
    side = tmp_path / "spent.json"
    res = profile_run(python, prog, [str(SECONDS), side], tmp=tmp_path, env=env)
    spent = json.loads(side.read_text())
    facts = res.profile["scalene_bpf"]
    m = markers(prog)
    period_s = facts["sampling_period_ns"] / 1e9
    interps = facts["interpreters"]
    loop = line_time(res.profile, prog, m["loop"])
    # Where the time went, and the counts that would say what was lost on
    # the way (a line whose whole block is missing).
    bpf = facts.get("bpf", {})
    lost = {k: bpf.get(k) for k in ("offcpu_records", "offcpu_work_failed", "walk_scratch_busy",
                                    "walk_read_failed", "no_python_thread_state",
                                    "lost_ringbuf_full", "offcpu_hook")}
    ctx = (f"spent {spent}; loop line: sys {loop.system:.1f} %, blocked "
           f"{blocked_s(loop):.3f} s, GIL {gil_s(loop):.3f} s; facts "
           f"gil_wait_s {facts['gil_wait_s']:.3f}, uncounted_blocked_s "
           f"{facts.get('uncounted_blocked_s')}, unattributed {facts.get('unattributed')}, "
           f"bpf {lost}\nlines: {hot_lines(res.profile, 12)}\n" + res.describe())
    if interps and interps[0].get("free_threaded") and not interps[0].get("gil_enabled"):
        check_no_gil(res, loop, interps, period_s, ctx)
        return res
    assert interps and all(i["gil_wait_measured"] for i in interps), interps
    # Two threads spinning in Python: the main one holds the GIL about half
    # of its sampled time on the line and waits for it the other half.  A
    # quarter is the floor (time spent runnable, waiting for a CPU on a
    # loaded machine, is neither: it is not sampled).
    accuracy("loop line GIL wait / line time", 0.5,
             gil_s(loop) / loop.seconds, ">= 0.25")
    assert gil_s(loop) >= 0.25 * loop.seconds, ctx
    # Pure Python blocks only for the GIL: the line's blocked time is GIL
    # wait, within 10% (or two sampling periods: records carry whole
    # periods, the remainder goes with the thread's next record).
    accuracy("loop line GIL wait / blocked", 1.0,
             gil_s(loop) / blocked_s(loop), "10%")
    assert abs(gil_s(loop) - blocked_s(loop)) <= max(
        0.1 * blocked_s(loop), 2 * period_s), ctx
    # The GIL wait is system time.
    assert gil_s(loop) <= loop.system / 100.0 * loop.total_sampled_s + 1e-9
    assert facts["gil_wait_s"] >= gil_s(loop) - 1e-9, ctx

    # Sleeping and waiting on a lock with no other thread running Python:
    # blocked, but not for the GIL.  At most what a record carried over from
    # before (under one period) plus the wake-up's own wait (microseconds).
    for name, want in (("sleep", spent["sleep_s"]), ("lock", spent["lock_s"])):
        t = line_time(res.profile, prog, m[name])
        msg = (f"{name} line: blocked {blocked_s(t):.3f} s, GIL "
               f"{gil_s(t):.4f} s\n" + ctx)
        accuracy(f"{name} line GIL wait s", 0.0, gil_s(t), "< 2 periods")
        assert blocked_s(t) >= 0.5 * want, msg
        assert gil_s(t) <= 2 * period_s, msg
    return res


def check_no_gil(res, loop, interps, period_s, ctx):
    """A free-threaded build with its GIL off: no GIL wait, and the two threads
    spin side by side: the main thread's loop line runs, it is not blocked
    (at most what a record carried over, two periods).  The terminal view
    says there is no GIL."""
    assert all(i["free_threaded"] and i["gil_enabled"] is False for i in interps), interps
    assert res.profile["scalene_bpf"]["gil_wait_s"] == 0, ctx
    assert loop.extra.get("n_gil_wait_percent", 0) == 0, ctx
    assert blocked_s(loop) <= 2 * period_s, ctx
    rc, out, err = view(res.path)
    assert rc == 0, err
    assert "GIL: none (free-threaded" in out, out


def test_gil_wait_in_the_views(any_python, tmp_path, pprof_message):
    """Both views show the loop line's GIL wait as the profile has it, and
    the total in their header; the stacks through the line carry the same
    wait (scalene_bpf.gil_wait_stacks), which the pprof export gives as a
    sample type of its own (gil_wait_time)."""
    prog = program("gil_contend.py")
    res = profile_run(any_python, prog, ["0.5", tmp_path / "spent.json"],
                      tmp=tmp_path)
    loop = markers(prog)["loop"]
    row = line_time(res.profile, prog, loop).extra
    gil = row["n_gil_wait_percent"]
    assert gil > 0, res.describe()

    rc, out, err = view(res.path)
    assert rc == 0, err
    total = res.profile["scalene_bpf"]["gil_wait_s"]
    assert f"GIL wait: {total:.2f} s" in out, out
    # The row by its number and the start of its text (the source column
    # is cut to the terminal's width).
    cells = row_of(out, loop, "for i in range(2000)").split()
    assert f"{gil:.1f}%" in cells, out

    probe = render_ok(page_of(res.path, tmp_path))
    assert "GIL wait" in probe["header"], probe["header"]
    lines = {r["n"]: r["cells"] for r in file_block(probe, prog)["lines"]}
    assert lines[str(loop)]["gil"] == js_fixed(gil) + "%", lines[str(loop)]

    # The same samples make the line and its stacks: the wait of the
    # stacks whose innermost frame of the program is the loop line is the
    # line's (within what the percentages' rounding leaves).
    doc = res.profile
    on_loop = 0.0
    for i, s in doc["scalene_bpf"]["gil_wait_stacks"]:
        frames = [f for f in doc["combined_stacks"][i][0]
                  if f.get("kind") == "py" and f.get("filename_or_module") == str(prog)]
        if frames and frames[-1]["line"] == loop:
            on_loop += s
    line_s = gil_s(line_time(res.profile, prog, loop))
    assert abs(on_loop - line_s) <= 0.01 * line_s + 1e-4, (on_loop, line_s)
    p, _, st, _ = check_pprof(doc, res.path, tmp_path, pprof_message)
    assert "gil_wait_time" in [st[v.type] for v in p.sample_type]
