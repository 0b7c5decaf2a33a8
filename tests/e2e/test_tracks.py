# SPDX-License-Identifier: BSD-2-Clause
"""The timeline's tracks (scalene_bpf.tracks) and the lines' garbage
collection share (n_gc_percent), on every interpreter, against what
programs/gc_io.py is known to do:

- its collect line runs the collector all the time: nearly all of its CPU
  samples are taken with the collector running, and the track holds that
  line's collection as one stretch of about the loop's length;
- its churn loop triggers collections by allocating, and they run on its
  lines (from 3.12 at the eval loop's next check: a call or the loop's jump,
  so on a line of the loop, not always the allocating one);
- its recv line blocks 20 times for 20 ms: the main thread's I/O track holds
  about 0.4 s at that line.

The page's timeline draws the tracks: tests/e2e/test_view_html.py.
"""

from e2e_helpers import check_share, markers, period_s, profile_run, program

PROGRAM = program("gc_io.py")
LINES = markers(PROGRAM)
SECONDS = 0.8
# The collect line's CPU samples taken while collecting, at least, as the
# truth: gc.collect() is the collector's entry, whose own frames (the call,
# the loop around it) take a few samples.
GC_SHARE = 0.95


def line_row(profile, name):
    path = next(p for p in profile["files"] if p.endswith("gc_io.py"))
    return next(r for r in profile["files"][path]["lines"] if r["lineno"] == LINES[name])


def line_cpu_percent(row):
    return row["n_cpu_percent_python"] + row["n_cpu_percent_c"] + row["n_sys_percent"] \
        - row.get("n_blocked_percent", 0)


def intervals(profile, kind, name):
    return [i for i in profile["scalene_bpf"]["tracks"]["intervals"]
            if i[0] == kind and i[4] and i[4].endswith("gc_io.py") and i[5] == LINES[name]]


def test_gc_and_io_tracks(python, tmp_path):
    res = profile_run(python, PROGRAM, [str(SECONDS)], tmp=tmp_path, opts=["--cpu-only"])
    prof = res.profile
    total_s = prof["scalene_bpf"]["total_sampled_s"]

    row = line_row(prof, "collect")
    cpu = line_cpu_percent(row)
    n = cpu / 100 * total_s / period_s(prof)
    assert n > 300, f"the collect line has {n:.0f} samples"
    check_share(row["n_gc_percent"] / cpu, GC_SHARE, n,
                "the collect line's samples taken while collecting", side="low")
    spans = intervals(prof, "gc", "collect")
    assert spans, prof["scalene_bpf"]["tracks"]
    longest = max(e - s for _, _, s, e, _, _ in spans)
    assert longest >= 0.7 * SECONDS, spans

    loop = range(LINES["churn_loop"], LINES["churn_end"] + 1)
    path = next(p for p in prof["files"] if p.endswith("gc_io.py"))
    assert sum(r.get("n_gc_percent", 0) for r in prof["files"][path]["lines"]
               if r["lineno"] in loop) > 0, "no collection in the churn loop"
    assert any(i[0] == "gc" and i[4] == path and i[5] in loop
               for i in prof["scalene_bpf"]["tracks"]["intervals"]), \
        "no collection on the timeline at the churn loop's lines"

    # The main thread's waits on the socket: 20 of 20 ms (the writer's
    # sleeps are not at that line).
    waited = sum(e - s for _, _, s, e, _, _ in intervals(prof, "io", "recv"))
    assert 0.3 <= waited <= 0.6, intervals(prof, "io", "recv")
    # The totals are the samples' and records' own time; an interval also
    # spans the moments between them (under the gap).
    total = prof["scalene_bpf"]["tracks"]["total_s"]
    assert total["gc"] >= 0.7 * SECONDS and 0.3 <= total["io"], total


GIL_PROGRAM = program("gil_held.py")
GIL_LINES = markers(GIL_PROGRAM)


def gil_row(profile, name):
    path = next(p for p in profile["files"] if p.endswith("gil_held.py"))
    return next(r for r in profile["files"][path]["lines"] if r["lineno"] == GIL_LINES[name])


def test_gil_held(python, tmp_path):
    """programs/gil_held.py, another thread alive: its sort line's C code
    holds the GIL all along, its compress line's lets it go around deflate.
    The lines' n_gil_held_percent and the gil_held track say so; a
    free-threaded build with its GIL off holds none."""
    res = profile_run(python, GIL_PROGRAM, ["0.6"], tmp=tmp_path, opts=["--cpu-only"])
    prof = res.profile
    total_s = prof["scalene_bpf"]["total_sampled_s"]
    interps = prof["scalene_bpf"]["interpreters"]
    no_gil = interps and interps[0].get("free_threaded") and not interps[0].get("gil_enabled")
    shares = {}
    for name in ("sort", "compress"):
        row = gil_row(prof, name)
        cpu = line_cpu_percent(row)
        n = cpu / 100 * total_s / period_s(prof)
        assert n > 200, f"the {name} line has {n:.0f} samples"
        shares[name] = (row["n_gil_held_percent"] / cpu, n)
    held = [i for i in prof["scalene_bpf"]["tracks"]["intervals"] if i[0] == "gil_held"]
    if no_gil:
        assert all(s == 0 for s, _ in shares.values()), shares
        assert not held, held
        return
    share, n = shares["sort"]
    check_share(share, GC_SHARE, n, "the sort line's samples holding the GIL", side="low")
    # deflate's own time, without the GIL, is most of the compress line's:
    # what holds it there is the call around it (the argument, the result).
    share, n = shares["compress"]
    check_share(share, 0.1, n, "the compress line's samples holding the GIL", side="high")
    path = next(p for p in prof["files"] if p.endswith("gil_held.py"))
    # The sort line's stretches (the loop's own line, holding it too,
    # comes between them).
    spans = [e - s for k, _, s, e, f, line in held if f == path and line == GIL_LINES["sort"]]
    assert sum(spans) >= 0.5 * 0.6, held
    assert prof["scalene_bpf"]["tracks"]["total_s"]["gil_held"] >= 0.5 * 0.6, \
        prof["scalene_bpf"]["tracks"]["total_s"]
