# SPDX-License-Identifier: BSD-2-Clause
"""`scalene-bpf view --cli` end to end: the binary on real files.

Bad input gets a clear message and a non-zero exit (never a crash, a hang
or a traceback-like signal death); hostile text in a valid profile never
reaches the terminal as a control character; colour follows the terminal,
NO_COLOR and TERM=dumb; rows fit COLUMNS or the pty's width; the reference
profiles written by Scalene show their hot lines with the numbers of the
JSON; one of our memory profiles shows its memory columns and sparkline;
the footer names the loss counters that are not zero.

Every subprocess has a timeout.  Only the last test profiles (root, BPF);
the others only read files.
"""

import errno
import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time
import unicodedata
from pathlib import Path

import pytest

from e2e_helpers import (ASYNC_FILE, BIN, REPO, async_profile,
                         default_interpreter,
                         ensure_test_user, profile_run, program,
                         reference_dir, sudo_env)

TIMEOUT = 30
REFS = reference_dir()
FIXTURES = REPO / "tests" / "fixtures" / "view"
SGR = re.compile(r"\x1b\[[0-9;]*m")
BLOCKS = set("\u2581\u2582\u2583\u2584\u2585\u2586\u2587\u2588")


def env_for(**extra):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
           "TERM": "xterm-256color"}
    env.update({k: v for k, v in extra.items() if v is not None})
    return env


def view(path, *opts, **env):
    """view --cli on a pipe: (exit status, stdout, stderr) as text."""
    p = subprocess.run([str(BIN), "view", "--cli", *opts, str(path)],
                       capture_output=True, timeout=TIMEOUT,
                       stdin=subprocess.DEVNULL, env=env_for(**env))
    assert p.returncode >= 0, f"killed by signal {-p.returncode}"
    return (p.returncode, p.stdout.decode("utf-8", "strict"),
            p.stderr.decode("utf-8", "strict"))


def view_pty(path, cols=100, rows=40, *opts, **env):
    """view --cli with stdout on a pty of cols x rows: (status, output)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    proc = subprocess.Popen([str(BIN), "view", "--cli", *opts, str(path)],
                            stdin=subprocess.DEVNULL, stdout=slave,
                            stderr=subprocess.PIPE, env=env_for(**env))
    os.close(slave)
    out = b""
    deadline = time.monotonic() + TIMEOUT
    try:
        while time.monotonic() < deadline:
            r, _, _ = select.select([master], [], [], 0.5)
            if not r:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError as e:  # EIO: the child closed the pty
                if e.errno != errno.EIO:
                    raise
                break
            if not chunk:
                break
            out += chunk
        else:
            proc.kill()
            pytest.fail(f"view --cli on a pty did not finish in {TIMEOUT} s")
        rc = proc.wait(timeout=TIMEOUT)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
        proc.stderr.close()
    # The pty's line discipline turns \n into \r\n.
    return rc, out.decode("utf-8", "strict").replace("\r\n", "\n")


def cols(s):
    """Display columns of one row as a terminal draws it."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1
               for ch in SGR.sub("", s))


def assert_terminal_safe(text):
    bad = [(i, hex(ord(ch))) for i, ch in enumerate(text)
           if (ord(ch) < 0x20 and ch != "\n") or 0x7f <= ord(ch) <= 0x9f
           or ch in "\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067"
                    "\u2068\u2069\u2028\u2029"]
    assert not bad, f"control characters in the output: {bad[:10]}"


def assert_width(text, width):
    wide = [(n, cols(r), r) for n, r in enumerate(text.split("\n"))
            if cols(r) > width]
    assert not wide, f"rows wider than {width}: {wide[:3]}"


def row_of(out, lineno, text):
    """The table row of line lineno that shows text."""
    rows = [r for r in out.split("\n")
            if re.match(rf"\s*{lineno}\s", r) and text in r]
    assert rows, f"no row for line {lineno} ({text!r}) in:\n{out}"
    return rows[0]


def spark_of(out, row):
    """The row's cells under the "timeline" title of the table above it."""
    rows = out.split("\n")
    head = next(r for r in reversed(rows[:rows.index(row)]) if "timeline" in r)
    at = head.index("timeline")
    end = head.index("mem%")
    return row[at:end - 1]


def pct(v):
    return f"{v:.1f}%"


def ref(name):
    path = REFS / name
    if not path.is_file():
        pytest.fail(f"no reference profile {path}", pytrace=False)
    return path


def write(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(data if isinstance(data, bytes) else data.encode())
    return p


# --------------------------------------------------------------------------
# Bad input: a clear message, a non-zero exit
# --------------------------------------------------------------------------

def check_refused(path, message):
    rc, out, err = view(path)
    assert rc == 1, f"exit {rc}, stderr {err!r}"
    assert message in err, f"{message!r} not in {err!r}"
    assert len(err.strip().split("\n")) <= 2, err
    assert_terminal_safe(err)
    return out, err


def test_missing_file(tmp_path):
    _, err = check_refused(tmp_path / "nope.json", "cannot open")
    assert "nope.json" in err and "No such file" in err


def test_empty_file(tmp_path):
    check_refused(write(tmp_path, "e.json", ""), "is empty")


def test_directory(tmp_path):
    check_refused(tmp_path, "is a directory")


@pytest.mark.parametrize("text", ['{"a" 1}', '{"a": tru}', "\x00"])
def test_not_json(tmp_path, text):
    check_refused(write(tmp_path, "t.json", text), "not valid JSON")


# Stray characters and trailing commas are json-c's "unexpected character":
# said, with where (once printed nothing; tests/fuzz/repro/view-parse-silent-*).
@pytest.mark.parametrize("text", ["profile: yes\n", "[1,]", '{"a": 1,}'])
def test_not_json_unexpected_character(tmp_path, text):
    check_refused(write(tmp_path, "t.json", text), "not valid JSON")


def test_trailing_garbage(tmp_path):
    # json-c's strict mode stops at the second document itself.
    check_refused(write(tmp_path, "two.json", '{"files": {}} {"files": {}}'),
                  "not valid JSON: unexpected character (at byte 14)")
    check_refused(write(tmp_path, "junk.json", '{"files": {}}\n]'),
                  "not valid JSON")


def test_truncated_json(tmp_path):
    text = ref("scalene_ref_cpu.json").read_bytes()
    check_refused(write(tmp_path, "cut.json", text[:len(text) // 2]), "truncated")


@pytest.mark.parametrize("doc", ['{"program": "x"}', "[]", "42\n", '"files"',
                                 '{"files": [1]}', '{"files": {"a.py": 5}}',
                                 '{"files": {"a.py": {"lines": [1]}}}'])
def test_not_a_profile(tmp_path, doc):
    out, _ = check_refused(write(tmp_path, "np.json", doc), "not a profile")
    assert out == "", "a refused profile printed a partial table"


def test_deep_nesting(tmp_path):
    t0 = time.monotonic()
    check_refused(write(tmp_path, "deep.json", "[" * 10000 + "]" * 10000),
                  "nested deeper")
    check_refused(write(tmp_path, "deepo.json",
                        '{"files": ' + '{"a": ' * 10000 + "1" + "}" * 10001),
                  "nested deeper")
    assert time.monotonic() - t0 < 10


def test_wrong_types_display(tmp_path):
    """Fields of the wrong type read as absent: the rest shows."""
    rc, out, err = view(FIXTURES / "wrong-types.json", "--all-lines")
    assert rc == 0, err
    assert "/app/types.py" in out and "no lineno at all" in out
    assert "50.0%" not in out  # "50" as a string is not a number
    assert_terminal_safe(out)


def test_nan_and_huge_numbers(tmp_path):
    """NaN (which the parser lets through) and numbers past any double read
    as nothing and never print as nan / inf; huge ones fit their columns."""
    doc = ('{"program": "/app/n.py", "elapsed_time_sec": 0, "files": '
           '{"/app/n.py": {"percent_cpu_time": Infinity, "lines": ['
           '{"lineno": 1, "line": "a = 1\\n", "n_cpu_percent_python": NaN},'
           '{"lineno": 2, "line": "b = 2\\n", "n_cpu_percent_python": 1e999},'
           '{"lineno": 3, "line": "c = 3\\n", "n_cpu_percent_python": 1e300,'
           ' "n_cpu_percent_c": 123456789}]}}}')
    rc, out, err = view(write(tmp_path, "nan.json", doc), COLUMNS="80")
    assert rc == 0, err
    assert "nan" not in out.lower() and "inf" not in out.lower()
    assert "elapsed: 0.00 s" in out
    assert "c = 3" in out and "a = 1" not in out
    assert_width(out, 80)
    rc, out, err = view(FIXTURES / "huge-numbers.json", "--all-lines",
                        COLUMNS="40")
    assert rc == 0, err
    assert "big = 1" in out and "nan" not in out and "inf" not in out
    assert_width(out, 40)


@pytest.mark.parametrize("value,why", [
    ("NaN", "is NaN"), ("Infinity", "is infinite"), ("-1", "is negative"),
    ('"1.5"', "is not a number"), ("null", "is not a number"),
    (None, "is missing")])
def test_elapsed_time_checked(tmp_path, value, why):
    """The header's elapsed time is required, a number >= 0 (Scalene's
    schema): anything else is refused, never shown as 0.00 s."""
    field = "" if value is None else f'"elapsed_time_sec": {value}, '
    doc = ('{"program": "/app/e.py", ' + field + '"files": {"/app/e.py": '
           '{"lines": [{"lineno": 1, "line": "a = 1\\n", '
           '"n_cpu_percent_python": 50}]}}}')
    path = write(tmp_path, "e.json", doc)
    out, err = check_refused(path, "not a profile")
    assert f"elapsed_time_sec) {why}" in err, err
    assert out == ""
    p = subprocess.run([str(BIN), "view", "--html", str(tmp_path / "e.html"),
                        str(path)], capture_output=True, text=True,
                       timeout=TIMEOUT, stdin=subprocess.DEVNULL,
                       env=env_for())
    assert p.returncode == 1 and f"elapsed_time_sec) {why}" in p.stderr
    assert not (tmp_path / "e.html").exists()


def hostile_profile(tmp_path):
    raw = (b'{"program": "/app/\x1b[2J\xc2\x9b.py", "elapsed_time_sec": 1, "files": {'
           b'"/app/\x1b]0;pwned\x07\xff\xfeevil.py": {"percent_cpu_time": 90, '
           b'"lines": [{"lineno": 1, "line": "print(\'\\u001b[31mred\\u001b[0m\')\\n", '
           b'"n_cpu_percent_python": 50, "memory_samples": []}, '
           b'{"lineno": 2, "line": "x = \'\x9b2J\xc2\x85\xe2\x80\xaeabc\xed\xa0\x80\' '
           b'\\u0007 \\t tail\\n", "n_cpu_percent_python": 40, "memory_samples": []}], '
           b'"functions": [{"line": "f\\u001b[5m", "lineno": 1, '
           b'"n_cpu_percent_python": 90}]}}}')
    return write(tmp_path, "hostile.json", raw)


def test_control_characters_and_invalid_utf8(tmp_path):
    path = hostile_profile(tmp_path)
    rc, out, err = view(path, COLUMNS="120")
    assert rc == 0, err
    assert "\x1b" not in out
    assert_terminal_safe(out)
    assert "evil.py" in out and "red" in out and "tail" in out and "abc" in out
    # Under a pty with colour on: only our own SGR escapes.
    rc, out = view_pty(path, 120)
    assert rc == 0
    assert "\x1b[" in out
    assert_terminal_safe(SGR.sub("", out))
    assert "pwned" in out and "\x1b]" not in out


# --------------------------------------------------------------------------
# Colour and width
# --------------------------------------------------------------------------

def test_color_on_a_terminal_only():
    path = ref("scalene_ref_cpu.json")
    rc, out = view_pty(path, 120)
    assert rc == 0 and SGR.search(out), "no colour on a terminal"
    rc, out = view_pty(path, 120, NO_COLOR="1")
    assert rc == 0 and "\x1b" not in out and "busy_python" in out
    rc, out = view_pty(path, 120, TERM="dumb")
    assert rc == 0 and "\x1b" not in out
    # no-color.org: an empty NO_COLOR does not count.
    rc, out = view_pty(path, 120, NO_COLOR="")
    assert rc == 0 and SGR.search(out)
    rc, out, _ = view(path)
    assert rc == 0 and "\x1b" not in out and "busy_python" in out


@pytest.mark.parametrize("width", [40, 80, 200])
def test_columns_respected(width):
    for name in ("scalene_ref_cpu.json", "scalene_ref_mem.json",
                 "scalene_ref_async.json"):
        rc, out, err = view(ref(name), "--all-lines", COLUMNS=str(width))
        assert rc == 0, err
        assert_width(out, width)
        assert max(cols(r) for r in out.split("\n")) >= min(width, 80) * 0.75, \
            f"{name} at {width}: the width is not used"


def test_wide_characters_fit(tmp_path):
    line = "s = '" + "\u6f22\u5b57\U0001f600" * 40 + "'\n"
    doc = {"program": "/app/w.py", "elapsed_time_sec": 1, "files": {"/app/\u6f22\u5b57.py": {
        "percent_cpu_time": 80, "functions": [], "lines": [
            {"lineno": 1, "line": line, "n_cpu_percent_python": 80,
             "memory_samples": []}]}}}
    path = write(tmp_path, "w.json", json.dumps(doc, ensure_ascii=False))
    for width in (40, 41, 57, 80, 133):
        rc, out, err = view(path, COLUMNS=str(width))
        assert rc == 0, err
        assert_width(out, width)
        assert "\u6f22\u5b57" in out


@pytest.mark.parametrize("width", [40, 60, 132, 300])
def test_pty_width_respected(width):
    # The pty's size wins over COLUMNS.
    rc, out = view_pty(ref("scalene_ref_mem.json"), width, 40, "--all-lines",
                       COLUMNS="1000")
    assert rc == 0
    assert_width(out, width)
    assert "mem_bound.py" in out


def test_long_lines_whole_when_wide():
    rc, out, _ = view(ref("scalene_ref_mem.json"), COLUMNS="200")
    assert rc == 0
    assert "bufs.append(bytearray(10 * 1024 * 1024))" in out
    assert "timeline" in out  # room for the sparkline too
    rc, out, _ = view(ref("scalene_ref_mem.json"), COLUMNS="60")
    assert "bufs.append(bytearray(10 * 1024 * 1024))" not in out
    assert "bufs.append(" in out


# --------------------------------------------------------------------------
# The reference profiles: hot lines with the numbers of the JSON
# --------------------------------------------------------------------------

def hot(line, threshold=1.0):
    return (line["n_cpu_percent_python"] + line["n_cpu_percent_c"]
            + line["n_sys_percent"]) >= threshold


def awaits(prof):
    """The await column's rule: await profiling on, and some line or
    function awaited."""
    return prof.get("async_profile") is True and any(
        r.get("n_async_await_percent", 0) > 0
        for fd in prof["files"].values()
        for r in fd["lines"] + fd.get("functions", []))


def shown(prof, line, threshold=1.0):
    """Time, or in an async profile the await share, reaching the
    threshold."""
    a = line.get("n_async_await_percent", 0) if awaits(prof) else 0
    return hot(line, threshold) or (a > 0 and a >= threshold)


def check_numbers(out, entry, text, prof=None):
    row = row_of(out, entry["lineno"], text)
    keys = ["n_cpu_percent_python", "n_cpu_percent_c", "n_sys_percent"]
    if prof is not None and awaits(prof):
        keys.append("n_async_await_percent")
    for key in keys:
        if entry.get(key, 0) >= 0.05:
            assert pct(entry[key]) in row, f"{key} {entry[key]} not in {row!r}"
    return row


@pytest.mark.parametrize("name", ["scalene_ref_cpu.json", "scalene_ref_async.json",
                                  "minimal_valid.json"])
def test_reference_hot_lines(name):
    path = ref(name)
    prof = json.loads(path.read_text())
    rc, out, err = view(path, COLUMNS="200")
    assert rc == 0, err
    assert out.startswith(f"program: {prof['program']}\n")
    assert f"elapsed: {prof['elapsed_time_sec']:.2f} s" in out
    assert "scalene_bpf" not in out  # no footer for Scalene's profiles
    nshown = 0
    for fname, fd in prof["files"].items():
        assert f"{fname}: {fd['percent_cpu_time']:.1f}% of the time" in out
        for line in fd["lines"]:
            text = line["line"].strip()
            if shown(prof, line) and text:
                check_numbers(out, line, text, prof)
                nshown += 1
            elif text and not shown(prof, line, 1e-9) and len(text) > 12:
                assert not any(r.rstrip().endswith(text)
                               for r in out.split("\n")), f"cold {text!r} shown"
        for fn in fd["functions"]:
            if shown(prof, fn):
                check_numbers(out, fn, fn["line"], prof)
    assert nshown > 0


# --------------------------------------------------------------------------
# Async profiles: the await column, task names and concurrency
# --------------------------------------------------------------------------

def header_row(out, last="source"):
    return next(r for r in out.split("\n")
                if re.match(r"^\s*line\s+python\b", r) and r.endswith(last))


def note_under(out, row):
    """The row after a table row: its await note."""
    rows = out.split("\n")
    return rows[rows.index(row) + 1]


def check_await_note(note, entry, shown_names=3):
    names = entry["async_task_names"]
    assert note.lstrip().startswith("tasks: " + ", ".join(names[:shown_names])), note
    more = len(names) - shown_names
    assert (f" +{more} more" in note) == (more > 0), note
    assert (f"concurrency {entry['n_async_concurrency_mean']:.1f} mean, "
            f"{entry['n_async_concurrency_peak']:.0f} peak") in note, note
    assert not re.match(r"^\s*\d", note), "a note that reads as a table row"


def test_async_reference_profile():
    """Scalene's async profile: its awaits, on lines without CPU time, are
    shown with their share of the await time, tasks and concurrency."""
    path = ref("scalene_ref_async.json")
    prof = json.loads(path.read_text())
    assert awaits(prof)
    rc, out, err = view(path, COLUMNS="100")
    assert rc == 0, err
    assert_width(out, 100)
    assert "await: the await column is each line's share of all await time" in out
    head = header_row(out)
    assert re.search(r"\bsystem\s+await\b", head), head
    awaited = 0
    for fd in prof["files"].values():
        for line in fd["lines"]:
            if line.get("n_async_await_percent", 0) < 1:
                continue
            text = line["line"].strip()[:20]
            row = row_of(out, line["lineno"], text)
            # Under the title "await", as the other % columns.
            end = head.index("await") + len("await")
            assert row[:end].rstrip().endswith(pct(line["n_async_await_percent"])), \
                (head, row)
            check_await_note(note_under(out, row), line)
            awaited += 1
    assert awaited >= 2


def test_async_made_profile(tmp_path):
    prof = async_profile()
    path = write(tmp_path, "async.json", json.dumps(prof))
    rc, out, err = view(path, COLUMNS="100")
    assert rc == 0, err
    assert_width(out, 100)
    assert_terminal_safe(out)
    assert "await: 2.50 s of event-loop idle time attributed to waiting tasks" in out
    # A file with no CPU time, shown for its awaits.
    assert f"{ASYNC_FILE}: 0.0% of the time" in out
    lines = {l["lineno"]: l for l in prof["files"][ASYNC_FILE]["lines"]}
    row3 = row_of(out, 3, "await asyncio.sleep(1.5)")
    assert "69.6%" in row3
    check_await_note(note_under(out, row3), lines[3])
    assert "Task-1, Task-2, Task-3 +2 more" in note_under(out, row3)
    row4 = row_of(out, 4, "item = await q.get()")
    assert "30.0%" in row4
    check_await_note(note_under(out, row4), lines[4])
    # Under the 1% threshold: shown with --all-lines only.
    assert "await asyncio.sleep(0)" not in out
    fn = row_of(out, 2, "fetch")
    assert "100.0%" in fn
    check_await_note(note_under(out, fn), prof["files"][ASYNC_FILE]["functions"][0])
    # The counter of unreadable tasks is a loss.
    assert ("async.tasks_unreadable = 4: asyncio tasks whose await could "
            "not be read") in out
    rc, out, _ = view(path, "--all-lines", COLUMNS="100")
    row5 = row_of(out, 5, "await asyncio.sleep(0)")
    assert "0.4%" in row5
    check_await_note(note_under(out, row5), lines[5])
    # Narrow terminals: still within the width, the note cut.
    for width in (40, 60, 80):
        rc, out, _ = view(path, COLUMNS=str(width))
        assert rc == 0
        assert_width(out, width)


def test_async_made_profile_all_columns_fit(tmp_path):
    """Memory, GIL, churn and await at once still fit 100 columns."""
    prof = async_profile()
    prof["memory"] = True
    prof["scalene_bpf"].update(gil_wait_s=0.5, allocation_churn={"files": {}})
    line = prof["files"][ASYNC_FILE]["lines"][2]
    line.update(n_malloc_mb=3.0, n_usage_fraction=0.5, n_avg_mb=1.0, n_peak_mb=2.0,
                n_sys_percent=3.0, n_gil_wait_percent=1.0)
    path = write(tmp_path, "all.json", json.dumps(prof))
    rc, out, err = view(path, COLUMNS="100")
    assert rc == 0, err
    assert_width(out, 100)
    head = header_row(out)
    for title in ("GIL", "await", "avg MB", "churn"):
        assert title in head, head
    assert "69.6%" in row_of(out, 3, "await asyncio.sleep(1.5)")


@pytest.mark.parametrize("name", ["scalene_ref_cpu.json", "made"])
def test_no_await_column(name, tmp_path):
    """No column without await time (Scalene's CPU profile: async_profile
    true, no await), nor without async_profile (the same awaits)."""
    if name == "made":
        path = write(tmp_path, "sync.json",
                     json.dumps(async_profile(with_async=False)))
    else:
        path = ref(name)
        assert json.loads(path.read_text())["async_profile"] is True
    rc, out, err = view(path, "--all-lines", COLUMNS="100")
    assert rc == 0, err
    assert "await" not in header_row(out)
    assert "tasks:" not in out and "concurrency" not in out
    assert "the await column" not in out
    if name == "made":
        # Lines with await time only are not hot without it.
        assert "await asyncio.sleep(1.5)" not in out


def test_threshold_and_all_lines():
    path = ref("scalene_ref_cpu.json")
    prof = json.loads(path.read_text())
    lines = next(iter(prof["files"].values()))["lines"]
    big = [l for l in lines if hot(l, 30)]
    small = [l for l in lines if hot(l, 1e-9) and not hot(l, 30)]
    assert big and small
    rc, out, _ = view(path, "--cpu-percent-threshold", "30", COLUMNS="200")
    assert rc == 0
    for l in big:
        check_numbers(out, l, l["line"].strip())
    for l in small:
        assert l["line"].strip() not in out
    rc, out, _ = view(path, "--all-lines", COLUMNS="200")
    for l in big + small:
        check_numbers(out, l, l["line"].strip())


def test_reference_memory_columns():
    path = ref("scalene_ref_mem.json")
    prof = json.loads(path.read_text())
    rc, out, err = view(path, COLUMNS="200")
    assert rc == 0, err
    assert f"max footprint {prof['max_footprint_mb']:.1f} MB" in out
    assert re.search(r"avg MB +peak MB +timeline +mem%", out), out
    fd = prof["files"][prof["program"]]
    checked = set()
    for line in fd["lines"]:
        if line["n_malloc_mb"] > 0:
            row = check_numbers(out, line, line["line"].strip())
            # Zero is left blank, as in check_numbers.
            for key in ("n_avg_mb", "n_peak_mb"):
                if line[key] >= 0.05:
                    assert f"{line[key]:.1f}" in row, (key, row)
            assert f"{100 * line['n_usage_fraction']:.0f}%" in row
            assert set(spark_of(out, row).strip()) <= BLOCKS | {" "}
            assert spark_of(out, row).strip(), f"no sparkline in {row!r}"
            checked.add(line["line"].strip())
    # The program's two allocating lines, and any other line Scalene's
    # sampling happened to charge (a megabyte on the loop's `for`, in some
    # runs).
    assert {"keep.append([j for j in range(1000)])",
            "bufs.append(bytearray(10 * 1024 * 1024))"} <= checked, checked


# --------------------------------------------------------------------------
# Our own profiles
# --------------------------------------------------------------------------

def test_loss_footer(tmp_path):
    doc = json.loads((REPO / "tests" / "fuzz" / "corpus" / "view" /
                      "ours-demo.json").read_text())
    bpf = doc["scalene_bpf"]["bpf"]
    for k in bpf:
        if isinstance(bpf[k], int):
            bpf[k] = 0
    bpf["samples"] = 473
    path = write(tmp_path, "z.json", json.dumps(doc))
    rc, out, _ = view(path, COLUMNS="120")
    assert rc == 0 and "data lost" not in out
    assert "473 CPU samples" in out
    bpf["memory_lost_ringbuf_full"] = 12
    bpf["walk_truncated"] = 5
    path = write(tmp_path, "l.json", json.dumps(doc))
    rc, out, _ = view(path, COLUMNS="120")
    assert rc == 0
    assert "data lost or incomplete" in out
    assert "bpf.memory_lost_ringbuf_full = 12" in out
    assert "bpf.walk_truncated = 5" in out
    assert "lost_ringbuf_full = 0" not in out


def gpu_profile(nlines):
    """ours-demo.json with GPU data: nlines lines of scalene_bpf.gpu.lines
    (most GPU time first), the first on line 8 of the demo (whose source
    the view has), the others in a file the profile does not list."""
    doc = json.loads((REPO / "tests" / "fuzz" / "corpus" / "view" /
                      "ours-demo.json").read_text())
    demo = next(iter(doc["files"]))
    doc["gpu"], doc["gpu_device"] = True, "GPU"
    lines = [{"file": demo, "line": 8, "calls": 12, "kernels": 48,
              "kernel_s": 2.5, "copies": 3, "copy_s": 0.02,
              "copy_mb": {"htod": 96.0, "dtoh": 0.0, "dtod": 7.5,
                          "other": 0.0},
              "memsets": 1, "memset_mb": 1.0, "alloc_mb": 384.0,
              "free_mb": 0.0}]
    for i in range(1, nlines):
        lines.append({"file": "/opt/lib/kernels.py", "line": 100 + i,
                      "calls": 1, "kernels": 1, "kernel_s": 0.5 / i,
                      "copies": 0, "copy_s": 0.0,
                      "copy_mb": {"htod": 0.0, "dtoh": 0.0, "dtod": 0.0,
                                  "other": 0.0},
                      "memsets": 0, "memset_mb": 0.0, "alloc_mb": 0.0,
                      "free_mb": 0.0})
    doc["scalene_bpf"]["gpu"] = {"records": 60, "records_unmatched": 0,
                                 "lost_ringbuf_full": 0, "lines": lines}
    return doc, demo


def gpu_block(out):
    """The GPU block: (its title, wrapped rows joined; its header row; its
    rows); None when there is none."""
    rows = out.split("\n")
    at = [i for i, r in enumerate(rows)
          if r.startswith("GPU work by the line that launched it")]
    if not at:
        return None
    head = next(i for i in range(at[0], len(rows))
                if rows[i].lstrip().startswith("file:line"))
    end = next((i for i in range(head, len(rows)) if not rows[i].strip()),
               len(rows))
    return (" ".join(r.strip() for r in rows[at[0]:head]), rows[head],
            rows[head + 1:end])


def test_gpu_launch_sites(tmp_path):
    """scalene_bpf.gpu.lines: after the files, a block of the lines that
    launched GPU work, the first ten, with their numbers and source; none
    without GPU lines; unmatched and lost GPU records in the footer."""
    doc, demo = gpu_profile(12)
    rc, out, _ = view(write(tmp_path, "g.json", json.dumps(doc)),
                      COLUMNS="140")
    assert rc == 0, out
    block = gpu_block(out)
    assert block, out
    title, head, rows = block
    assert title == ("GPU work by the line that launched it "
                     "(the 10 of 12 with the most GPU time):"), title
    assert out.index("GPU work") > out.index(f"{demo}: "), out
    assert head.split() == ["file:line", "calls", "kernels", "kernel",
                            "time", "copy", "MB", "alloc", "MB",
                            "source"], head
    assert len(rows) == 10, block
    first = doc["scalene_bpf"]["gpu"]["lines"][0]
    src = next(l["line"] for l in doc["files"][demo]["lines"]
               if l["lineno"] == 8).strip()
    assert rows[0].split() == [
        "demo.py:8", str(first["calls"]), str(first["kernels"]),
        f"{first['kernel_s']:.2f}", "s",
        f"{first['copy_mb']['htod']:.1f}", "htod,",
        f"{first['copy_mb']['dtod']:.1f}", "dtod",
        f"{first['alloc_mb']:.1f}", *src.split()], rows[0]
    # The next ones in the profile's order, down to the tenth; no source
    # for a file the profile does not have.
    for i, r in enumerate(rows[1:], 1):
        line = doc["scalene_bpf"]["gpu"]["lines"][i]
        ms = line["kernel_s"] * 1e3
        assert r.split() == [f"kernels.py:{line['line']}", "1", "1",
                             f"{ms:.1f}", "ms"], r
    assert "kernels.py:110" not in out and "kernels.py:111" not in out
    assert "gpu.records_unmatched" not in out
    assert "gpu.lost_ringbuf_full" not in out

    # Unmatched and lost GPU records: named in the footer.
    doc["scalene_bpf"]["gpu"]["records_unmatched"] = 4
    doc["scalene_bpf"]["gpu"]["lost_ringbuf_full"] = 2
    rc, out, _ = view(write(tmp_path, "lost.json", json.dumps(doc)),
                      COLUMNS="140")
    assert rc == 0
    footer = out[out.index("data lost or incomplete"):]
    assert "  gpu.records_unmatched = 4: GPU records whose CUDA call was " \
           "not seen" in footer, footer
    assert "  gpu.lost_ringbuf_full = 2: GPU " in footer, footer

    # Narrow: every row fits.
    rc, out, _ = view(write(tmp_path, "g.json", json.dumps(doc)),
                      COLUMNS="60")
    assert rc == 0
    assert_width(out, 60)
    assert gpu_block(out)[2][0].split()[:2] == ["demo.py:8", "48"], out

    # Fewer than ten: all of them, and the order's name.
    doc, _ = gpu_profile(2)
    rc, out, _ = view(write(tmp_path, "two.json", json.dumps(doc)),
                      COLUMNS="140")
    title, _, rows = gpu_block(out)
    assert title.endswith("(most GPU time first):") and len(rows) == 2, out

    # No GPU lines, or no GPU object: no block.
    doc["scalene_bpf"]["gpu"]["lines"] = []
    rc, out, _ = view(write(tmp_path, "none.json", json.dumps(doc)),
                      COLUMNS="140")
    assert rc == 0 and gpu_block(out) is None and "GPU work" not in out
    del doc["scalene_bpf"]["gpu"]
    rc, out, _ = view(write(tmp_path, "nogpu.json", json.dumps(doc)),
                      COLUMNS="140")
    assert rc == 0 and "GPU work" not in out


def test_attach_memory_not_measured(tmp_path):
    """Memory by uprobes (--pid --memory) sees no frees: the header says the
    footprint and growth are not measured instead of showing 0 MB, and the
    footer names the CPU time of the profiler's probes."""
    doc = json.loads((REPO / "tests" / "fuzz" / "corpus" / "view" /
                      "ours-demo.json").read_text())
    rc, out, _ = view(write(tmp_path, "run.json", json.dumps(doc)), COLUMNS="120")
    assert rc == 0
    assert f"max footprint {doc['max_footprint_mb']:.1f} MB" in out, out
    assert "profiler overhead" not in out
    doc["max_footprint_mb"] = 0.0
    doc["scalene_bpf"]["memory"] = {"mode": "uprobes", "hits": 1000}
    doc["scalene_bpf"]["probe_overhead_s"] = 1.25
    rc, out, _ = view(write(tmp_path, "attach.json", json.dumps(doc)), COLUMNS="120")
    assert rc == 0
    flat = " ".join(out.split())
    assert "max footprint not measured" in flat, out
    assert "growth rate not measured" in flat, out
    assert "max footprint 0.0 MB" not in flat, out
    assert ("profiler overhead: 1.25 s of CPU time in the profiler's probes, "
            "not counted in the lines' percentages") in flat, out


def test_steal_named_from_one_percent(tmp_path):
    """The time the host took the CPUs away while the program ran (steal,
    scalene_bpf.stolen_s, left out of the lines) is named in the footer from
    1 % of the time sampled."""
    doc = json.loads((REPO / "tests" / "fuzz" / "corpus" / "view" /
                      "ours-demo.json").read_text())
    doc["scalene_bpf"]["total_sampled_s"] = 4.0
    doc["scalene_bpf"]["stolen_s"] = 0.039
    rc, out, _ = view(write(tmp_path, "low.json", json.dumps(doc)), COLUMNS="120")
    assert rc == 0 and "steal" not in out, out
    doc["scalene_bpf"]["stolen_s"] = 0.4
    rc, out, _ = view(write(tmp_path, "steal.json", json.dumps(doc)), COLUMNS="120")
    flat = " ".join(out.split())
    assert rc == 0
    assert ("steal: the host took the CPUs away for 0.40 s while the program's threads ran "
            "(10.0% of the time sampled)") in flat, out


def test_time_on_no_line_named(tmp_path):
    """The lines' percentages are shares of all the sampled time; the part on
    no line (threads with no Python frame, files not profiled) is named in
    the footer from 2 % of the total up, each part from 0.01 s."""
    doc = json.loads((REPO / "tests" / "fuzz" / "corpus" / "view" /
                      "ours-demo.json").read_text())
    doc["scalene_bpf"]["total_sampled_s"] = 4.0
    doc["scalene_bpf"]["unattributed"] = {
        "threads_without_python_s": 1.25, "unreadable_stacks_s": 0.001,
        "outside_profiled_files_s": 0.25}
    rc, out, _ = view(write(tmp_path, "off.json", json.dumps(doc)), COLUMNS="120")
    assert rc == 0
    flat = " ".join(out.split())
    assert ("time on no line: 1.50 s of the 4.00 s sampled (38%): 1.25 s in threads "
            "with no Python frame") in flat, out
    assert "0.25 s in files not profiled" in flat, out
    assert "in stacks that could not be read" not in flat, out
    doc["scalene_bpf"]["unattributed"] = {
        "threads_without_python_s": 0.05, "unreadable_stacks_s": 0.0,
        "outside_profiled_files_s": 0.0}
    rc, out, _ = view(write(tmp_path, "little.json", json.dumps(doc)), COLUMNS="120")
    assert rc == 0 and "on no line" not in out, out


def test_our_memory_profile(tmp_path):
    """Profiles mem_lines.py (memory is on by default) and checks the memory
    columns and the sparkline against the profile's own numbers."""
    res = profile_run(default_interpreter(), program("mem_lines.py"), ["20"],
                      tmp=tmp_path)
    prof = res.profile
    assert prof["memory"] is True
    rc, out, err = view(res.path, COLUMNS="200")
    assert rc == 0, err
    assert re.search(r"avg MB +peak MB +timeline +mem%", out), out
    assert f"max footprint {prof['max_footprint_mb']:.1f} MB" in out
    fd = next(f for n, f in prof["files"].items() if n.endswith("mem_lines.py"))
    top = max(fd["lines"], key=lambda l: l["n_malloc_mb"])
    row = row_of(out, top["lineno"], top["line"].strip())
    assert f"{top['n_peak_mb']:.1f}" in row
    assert f"{100 * top['n_usage_fraction']:.0f}%" in row
    spark = spark_of(out, row).strip()
    assert spark and set(spark) <= BLOCKS | {" "}, f"no sparkline in {row!r}"
    # No UTF-8 locale: the sparkline (and the bars) in ASCII.
    rc, out, err = view(res.path, COLUMNS="200", LANG="C", LC_ALL="C")
    assert rc == 0, err
    assert out.isascii()
    row = row_of(out, top["lineno"], top["line"].strip())
    spark = spark_of(out, row).strip()
    assert spark and set(spark) <= set("_.-:=+*# "), f"{spark!r} in {row!r}"


def test_display_opens_the_page_as_the_user(tmp_path):
    """With a display and neither --cli nor --html, `view` writes the page
    next to the profile and starts the browser through xdg-open, as the
    invoking user under sudo (never as root), with the page's file URL."""
    import shutil
    import tempfile
    user = ensure_test_user()
    d = tempfile.mkdtemp(prefix="sbpf-view-")
    try:
        os.chmod(d, 0o755)
        os.chown(d, user.pw_uid, user.pw_gid)
        prof = Path(d) / "prof.json"
        shutil.copy(ref("scalene_ref_cpu.json"), prof)
        os.chmod(prof, 0o644)
        seen = Path(d) / "seen"
        fake = Path(d) / "bin"
        fake.mkdir()
        (fake / "xdg-open").write_text(
            "#!/bin/sh\n"
            f'echo "$(id -u) $(id -g) $1" > {seen}\n')
        os.chmod(fake / "xdg-open", 0o755)
        os.chown(fake, user.pw_uid, user.pw_gid)
        env = sudo_env(user)
        env["DISPLAY"] = ":99"
        env["PATH"] = f"{fake}:{env.get('PATH', '/usr/bin:/bin')}"
        p = subprocess.run([str(BIN), "view", str(prof)], capture_output=True,
                           text=True, timeout=60, env=env, cwd=d,
                           stdin=subprocess.DEVNULL)
        assert p.returncode == 0, p.stderr
        page = Path(d) / "prof.html"
        assert f"HTML view written to {page}" in p.stderr, p.stderr
        assert "opened" in p.stderr, p.stderr
        st = page.stat()
        assert (st.st_uid, st.st_gid) == (user.pw_uid, user.pw_gid)
        uid, gid, url = seen.read_text().split()
        assert (int(uid), int(gid)) == (user.pw_uid, user.pw_gid)
        assert url == f"file://{page}", url
        # Without a display: the terminal table, no page, no browser.
        page.unlink()
        seen.unlink()
        env.pop("DISPLAY")
        p = subprocess.run([str(BIN), "view", str(prof)], capture_output=True,
                           text=True, timeout=60, env=env, cwd=d,
                           stdin=subprocess.DEVNULL)
        assert p.returncode == 0 and "program:" in p.stdout, p.stderr
        assert not page.exists() and not seen.exists()
    finally:
        shutil.rmtree(d, ignore_errors=True)
