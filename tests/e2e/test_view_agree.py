# SPDX-License-Identifier: BSD-2-Clause
"""The terminal view, the HTML page and the exports of one profile agree.

`scalene-bpf view --cli`, `view --html` and `view --format` on the same
file, with the same options, show the same lines, functions and files, and
report the same counters of lost data with the same labels.  The rule they
are held to is written here (row_shown, file_shown), independently of
user/view/viewutil.c; the profiles are Scalene's reference profiles and one made
here with every loss counter set, lines of zero time and lines with memory
activity only, and one with await time only (with and without
async_profile).  Nothing here profiles: the tests only read files.
"""

import json
import re
import subprocess
from pathlib import Path

import pytest

from e2e_helpers import ASYNC_FILE, BIN, async_profile, reference_dir

TIMEOUT = 60
REFS = reference_dir()
REFERENCE_FILES = sorted(p for p in REFS.glob("scalene_ref_*.json"))

# The counters of lost data scalene-bpf writes (user/session/session.c), by group.
LOSSES = {
    "bpf": ["lost_ringbuf_full", "memory_lost_ringbuf_full",
            "process_events_lost", "process_table_full",
            "thread_state_unavailable", "walk_read_failed", "walk_truncated",
            "frames_unreadable", "bad_records", "stacks_dropped",
            "truncated_stacks"],
    "memory": ["records_lost", "sampler_not_loaded", "table_overflows",
               "untracked_blocks"],
    "async": ["tasks_unreadable"],
}

OPTIONS = [(), ("--all-lines",), ("--cpu-percent-threshold", "0"),
           ("--cpu-percent-threshold", "0", "--all-lines"),
           ("--cpu-percent-threshold", "30")]


def row_time(row):
    return sum(row.get(k, 0) if isinstance(row.get(k, 0), (int, float))
               else 0 for k in ("n_cpu_percent_python", "n_cpu_percent_c",
                                "n_sys_percent"))


def awaits(prof):
    """An async profile: await profiling on, and some row awaited."""
    return prof.get("async_profile") is True and any(
        isinstance(r.get("n_async_await_percent", 0), (int, float))
        and r.get("n_async_await_percent", 0) > 0
        for fd in prof["files"].values()
        for r in fd["lines"] + fd.get("functions", []))


def row_shown(prof, row, threshold, all_lines):
    mem = prof.get("memory") is True
    gpu = prof.get("gpu") is True
    a = row.get("n_async_await_percent", 0) if awaits(prof) else 0
    if a > 0 and (all_lines or a >= threshold):
        return True
    if mem and any(row.get(k, 0) > 0 for k in
                   ("n_malloc_mb", "n_copy_mb_s", "n_usage_fraction")):
        return True
    if gpu and any(row.get(k, 0) > 0 for k in
                   ("n_gpu_percent", "n_gpu_peak_memory_mb")):
        return True
    t = row_time(row)
    if all_lines:
        return t > 0 or (mem and (row.get("n_peak_mb", 0) > 0 or
                                  row.get("n_avg_mb", 0) > 0))
    return t > 0 and t >= threshold


def file_shown(prof, fd, threshold, all_lines):
    return (all_lines or fd.get("percent_cpu_time", 0) >= threshold or
            any(row_shown(prof, r, threshold, all_lines)
                for r in fd["lines"] + fd.get("functions", [])))


def settings(opts):
    threshold = float(opts[opts.index("--cpu-percent-threshold") + 1]) \
        if "--cpu-percent-threshold" in opts else 1.0
    return threshold, "--all-lines" in opts


def run(*args):
    p = subprocess.run([str(BIN), "view", *map(str, args)],
                       capture_output=True, timeout=TIMEOUT,
                       stdin=subprocess.DEVNULL,
                       env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
                            "COLUMNS": "400"})
    assert p.returncode == 0, p.stderr.decode()
    return p.stdout, p.stderr.decode()


def terminal(path, opts):
    """The terminal's files and rows, {file: ([line numbers], [function
    line numbers])}, and the footer's loss lines."""
    out, _ = run("--cli", *opts, path)
    files, rows, losses = {}, None, []
    for line in out.decode().splitlines():
        if not line:  # a blank line ends a table
            rows = None
            continue
        m = re.match(r"^(/\S+): [0-9.]+% of the time$", line)
        if m:
            current = files.setdefault(m.group(1), ([], []))
            rows = None
            continue
        m = re.match(r"^  ((?:bpf|memory|async)\.\w+ = \d+: .*)$", line)
        if m:
            losses.append(m.group(1))
            continue
        if re.match(r"^\s*line\s+python\b", line):
            rows = current[0] if line.endswith(" source") else current[1]
            continue
        m = re.match(r"^\s*(\d+)\s", line)
        if rows is not None and m:
            rows.append(int(m.group(1)))
    return files, losses


def page(path, opts, tmp_path):
    """The page's model, as terminal() gives the terminal's."""
    html = tmp_path / "p.html"
    run("--html", html, *opts, path)
    m = re.search(r'id="profile-data">(.*?)</script>', html.read_text(), re.S)
    model = json.loads(m.group(1))
    files = {f["name"]: ([r["n"] for r in f["lines"]],
                         sorted(r["n"] for r in f["funcs"]))
             for f in model["files"]}
    losses = [f"{q[0]} = {q[1]}: {q[2]}" for q in model.get("quality", [])]
    return files, losses


def expected(prof, opts):
    threshold, all_lines = settings(opts)
    out = {}
    for name, fd in prof["files"].items():
        if not file_shown(prof, fd, threshold, all_lines):
            continue
        out[name] = ([r["lineno"] for r in fd["lines"]
                      if row_shown(prof, r, threshold, all_lines)],
                     sorted(f["lineno"] for f in fd.get("functions", [])
                            if row_shown(prof, f, threshold, all_lines)))
    return out


def sort_funcs(files):
    """The terminal lists functions by time, the page as the profile does."""
    return {k: (v[0], sorted(v[1])) for k, v in files.items()}


def made_profile(tmp_path):
    lines = [
        ("hot = 1", {"n_cpu_percent_python": 40}),
        ("small = 1", {"n_cpu_percent_c": 0.5}),
        ("zero = 1", {}),
        ("mem_only = 1", {"n_malloc_mb": 2, "n_usage_fraction": 0.1}),
        ("footprint_only = 1", {"n_peak_mb": 3, "n_avg_mb": 1}),
        ("copy_only = 1", {"n_copy_mb_s": 5}),
    ]
    base = {"n_cpu_percent_python": 0, "n_cpu_percent_c": 0, "n_sys_percent": 0,
            "n_malloc_mb": 0, "n_peak_mb": 0, "n_avg_mb": 0, "n_copy_mb_s": 0,
            "n_usage_fraction": 0}
    prof = {
        "program": "/app/agree.py", "elapsed_time_sec": 1.0, "memory": True,
        "gpu": False,
        "files": {
            "/app/agree.py": {
                "percent_cpu_time": 41,
                "lines": [dict(base, lineno=i + 1, line=t + "\n", **f)
                          for i, (t, f) in enumerate(lines)],
                "functions": [dict(base, lineno=1, line="busy",
                                   n_cpu_percent_python=40),
                              dict(base, lineno=2, line="idle"),
                              dict(base, lineno=4, line="lukewarm",
                                   n_cpu_percent_python=0.4)],
            },
            "/app/cold.py": {
                "percent_cpu_time": 0.3,
                "lines": [dict(base, lineno=1, line="cold = 1\n",
                               n_cpu_percent_python=0.3)],
            },
        },
        "stacks": [[["/app/agree.py <module>:1;"], {"count": 4}]],
        "scalene_bpf": {
            g: {k: 100 + i for i, k in enumerate(keys)}
            for g, keys in LOSSES.items()},
    }
    path = tmp_path / "agree.json"
    path.write_text(json.dumps(prof))
    return path


@pytest.mark.parametrize("opts", OPTIONS, ids=lambda o: " ".join(o) or "default")
def test_made_profile(opts, tmp_path):
    path = made_profile(tmp_path)
    prof = json.loads(path.read_text())
    want = expected(prof, opts)
    term, term_losses = terminal(path, opts)
    pg, page_losses = page(path, opts, tmp_path)
    assert sort_funcs(term) == want
    assert pg == want
    # Every counter, in both, worded alike; the exports say them too.
    assert len(term_losses) == sum(len(v) for v in LOSSES.values())
    assert sorted(term_losses) == sorted(page_losses)
    for fmt in ("folded", "speedscope"):
        _, err = run("--format", fmt, path)
        said = [l.split("data lost or incomplete: ", 1)[1]
                for l in err.splitlines() if "data lost or incomplete: " in l]
        assert sorted(said) == sorted(term_losses), (fmt, err)


@pytest.mark.parametrize("with_async", [True, False], ids=["async", "no-async"])
@pytest.mark.parametrize("opts", OPTIONS, ids=lambda o: " ".join(o) or "default")
def test_async_profile(with_async, opts, tmp_path):
    """Lines and functions with await time only: shown by both views in an
    async profile, by neither without async_profile."""
    path = tmp_path / "async.json"
    path.write_text(json.dumps(async_profile(with_async)))
    prof = json.loads(path.read_text())
    want = expected(prof, opts)
    if with_async:
        assert 3 in want[ASYNC_FILE][0] and 2 in want[ASYNC_FILE][1]
    else:
        assert ASYNC_FILE not in want or not want[ASYNC_FILE][0]
    term, term_losses = terminal(path, opts)
    pg, page_losses = page(path, opts, tmp_path)
    assert sort_funcs(term) == want
    assert pg == want
    assert term_losses == page_losses == [
        "async.tasks_unreadable = 4: asyncio tasks whose await could not be read"]


@pytest.mark.parametrize("ref", REFERENCE_FILES, ids=[p.stem for p in REFERENCE_FILES])
@pytest.mark.parametrize("opts", OPTIONS[:3], ids=lambda o: " ".join(o) or "default")
def test_reference_profile(ref, opts, tmp_path):
    prof = json.loads(ref.read_text())
    want = expected(prof, opts)
    term, term_losses = terminal(ref, opts)
    pg, page_losses = page(ref, opts, tmp_path)
    assert sort_funcs(term) == want
    assert pg == want
    assert term_losses == page_losses == []
