# SPDX-License-Identifier: BSD-2-Clause
"""`scalene-bpf view DIR`: the views of a system-wide run's directory.

The directory is built here as `scalene-bpf --all -o DIR` lays it out
(docs: the index's schema): real profiles made with `scalene-bpf run` of two
small programs, and an index.json written by the test whose numbers come
from those profiles.  Beside them: a process not profiled, one whose profile
is missing, one whose profile is malformed, one whose profile name tries to
leave the directory.  The terminal view must rank the processes by CPU time
with the index's numbers and list the others with why; the host's page
(headless Chromium, the machinery of test_view_html.py) must show the same,
link each profiled process to its own page, identical to what `view --html
DIR/<file>` writes, and say what is wrong with the others.  Hostile indexes
are refused with a clear message and a non-zero exit.

Profiles are made once for the module (root, BPF); the rest reads files.
"""

import json
import re
import subprocess
from pathlib import Path

import pytest

from e2e_helpers import BIN, clean_env, default_interpreter, profile_run, program
from test_view_cli import assert_terminal_safe, assert_width
from test_view_html import embedded_model, render_ok

TIMEOUT = 60
WIDTH = 200
NONCE = re.compile(r"nonce-[0-9a-f]+|nonce=\"[0-9a-f]+\"")

# Read back from the host's page once it is drawn.
HOST_PROBE = r"""(() => {
  const rows = sel => [...document.querySelectorAll(sel)].map(tr => {
    const cells = {};
    for (const td of tr.cells) cells[td.getAttribute('data-col')] = td.textContent;
    const a = tr.querySelector('a');
    return {cells, href: a ? a.getAttribute('href') : null,
            problem: (tr.querySelector('.problem') || {}).textContent || ''};
  });
  return {title: document.title,
          header: (document.querySelector('.facts') || {}).textContent || '',
          warnings: (document.getElementById('warnings') || {}).textContent || '',
          procs: rows('table.host-procs tbody tr'),
          skipped: rows('table.host-skipped tbody tr')};
})()"""


def split_of(profile):
    """Seconds of Python, native and system time: the lines' percents of
    the profile's sampled time."""
    total = profile["scalene_bpf"]["total_sampled_s"]
    parts = [0.0, 0.0, 0.0]
    for fd in profile["files"].values():
        for line in fd["lines"]:
            for i, k in enumerate(("n_cpu_percent_python", "n_cpu_percent_c",
                                   "n_sys_percent")):
                parts[i] += line.get(k, 0) * total / 100
    return parts


def entry(pid, name, made_profile, **kw):
    """An index entry whose numbers are those of made_profile."""
    profile = made_profile
    py, nat, sys_ = split_of(profile)
    e = {"pid": pid, "ns_pid": pid, "ppid": 1, "uid": 0, "comm": "python3",
         "cmdline": ["python3", name], "python": "3.11",
         "profile": f"{pid}-{Path(name).stem}.json", "started_s": 0.0,
         "exited": True, "exit_code": 0,
         "cpu_s": profile["scalene_bpf"]["total_sampled_s"],
         "python_s": py, "native_s": nat, "system_s": sys_,
         "samples": profile["scalene_bpf"]["bpf"]["samples"],
         "peak_rss_mb": 12.5, "not_profiled": None}
    e.update(kw)
    return e


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """The two real profiles: {pid: (file name, profile)}."""
    tmp = tmp_path_factory.mktemp("host-profiles")
    py = default_interpreter()
    busy = profile_run(py, program("busy.py"), ["0.3"], tmp=tmp,
                       out=tmp / "101-busy.json")
    sha = profile_run(py, program("native_sha.py"), ["0.15"], tmp=tmp,
                      out=tmp / "202-native_sha.json")
    return {101: ("101-busy.json", busy.path, busy.profile),
            202: ("202-native_sha.json", sha.path, sha.profile)}


def index_of(made, **top):
    procs = [entry(pid, name.split("-", 1)[1].replace(".json", ".py"), prof)
             for pid, (name, _, prof) in sorted(made.items())]
    # The profile missing, the malformed one, the one that tries to leave
    # the directory: numbers of their own, so that they rank among the others.
    procs.append(entry(404, "gone.py", made[101][2], cpu_s=0.01, python_s=0.01,
                       native_s=0, system_s=0, samples=10, exited=False,
                       peak_rss_mb=None, ns_pid=4))
    procs.append(entry(505, "bad.py", made[101][2], cpu_s=0.02, python_s=0.0,
                       native_s=0.02, system_s=0, samples=20, exit_code=3,
                       await_s=1.25))
    procs.append(entry(606, "evil.py", made[101][2], cpu_s=0.03, python_s=0.0,
                       native_s=0, system_s=0.03, samples=30,
                       profile="../escape.json"))
    procs.append({"pid": 303, "ns_pid": 303, "comm": "python3.8",
                  "cmdline": ["python3.8", "old.py"], "python": None,
                  "profile": None, "exited": False,
                  "not_profiled": "Python 3.8 is not supported"})
    doc = {"scalene_bpf_index": 1, "host": "testhost", "kernel": "6.1.0-test",
           "start_time_absolute": 1764186000.5, "elapsed_time_sec": 9.25,
           "sampling_rate_hz": 997,
           "filters": {"pid": [], "comm": [], "uid": [], "exclude_pid": []},
           "processes": procs,
           "not_profiled": {"not_python": 12, "unsupported": 1, "filtered": 3,
                            "table_full": 0},
           "warnings": ["the process table was full for 2 s"]}
    doc.update(top)
    return doc


def make_dir(tmp_path, made, doc=None, raw=None):
    d = tmp_path / "all"
    d.mkdir()
    for name, path, _ in made.values():
        (d / name).write_bytes(Path(path).read_bytes())
    (d / "505-bad.json").write_text('{"files": {')
    # What ../escape.json would reach: never read, never linked.
    (tmp_path / "escape.json").write_bytes(Path(made[101][1]).read_bytes())
    if raw is not None:
        (d / "index.json").write_bytes(raw)
    else:
        (d / "index.json").write_text(json.dumps(doc if doc is not None
                                                 else index_of(made)))
    return d


def view(*args, width=WIDTH):
    p = subprocess.run([str(BIN), "view", *map(str, args)], capture_output=True,
                       timeout=TIMEOUT, stdin=subprocess.DEVNULL,
                       env=clean_env({"COLUMNS": str(width), "LANG": "C.UTF-8"}))
    assert p.returncode >= 0, f"killed by signal {-p.returncode}"
    return (p.returncode, p.stdout.decode("utf-8", "strict"),
            p.stderr.decode("utf-8", "strict"))


def ranked(doc):
    profiled = [p for p in doc["processes"] if p["not_profiled"] is None]
    return sorted(profiled, key=lambda p: -p["cpu_s"])


def pct(x):
    return f"{x:.1f}%"


def table_rows(out):
    """The rows of the process table: {pid: row}, and the pids in order."""
    lines = out.split("\n")
    start = next(i for i, r in enumerate(lines) if r.lstrip().startswith("pid ")
                 and "CPU s" in r)
    rows = []
    for r in lines[start + 1:]:
        if not r.strip():
            break
        rows.append(r)
    return rows


# --------------------------------------------------------------------------
# The terminal view
# --------------------------------------------------------------------------

def test_terminal_view(made, tmp_path):
    doc = index_of(made)
    d = make_dir(tmp_path, made, doc)
    rc, out, err = view("--cli", d)
    assert rc == 0, err
    assert_terminal_safe(out)
    assert_width(out, WIDTH)
    assert "host: testhost, kernel 6.1.0-test" in out
    assert "elapsed: 9.25 s, sampling at 997 Hz" in out
    assert ("processes: 5 profiled, 16 not profiled (not_python 12, "
            "unsupported 1, filtered 3, table_full 0)") in out, out
    order = ranked(doc)
    total = sum(p["cpu_s"] for p in order)
    assert f"CPU: {total:.2f} s sampled" in out
    rows = table_rows(out)
    assert [int(r.split()[0]) for r in rows] == [p["pid"] for p in order], out
    for p, row in zip(order, rows):
        assert f" {p['cpu_s']:.2f} " in row, (p, row)
        assert pct(100 * p["cpu_s"] / total) in row, (p, row)
        for k in ("python_s", "native_s", "system_s"):
            share = 100 * p[k] / total
            if round(share, 1) > 0:
                assert pct(share) in row, (k, p, row)
        assert " ".join(p["cmdline"]) in row
    by_pid = {int(r.split()[0]): r for r in rows}
    assert re.search(r"\b4\b", by_pid[404].split("python3")[0]), by_pid[404]
    assert "404-gone.json (missing)" in by_pid[404] and "running" in by_pid[404]
    assert "exit 3" in by_pid[505] and "505-bad.json" in by_pid[505]
    # An await column, since one process has await time: blank for the
    # others.
    head = next(ln for ln in out.splitlines() if ln.lstrip().startswith("pid "))
    assert "await s" in head, head
    assert re.search(r"\s1\.25\s", by_pid[505]), by_pid[505]
    assert "(name refused)" in by_pid[606] and "escape" not in by_pid[606]
    assert re.search(r" \?\s", by_pid[404]), "unknown peak RSS not shown as ?"
    assert "101-busy.json" in by_pid[101] and "12.5" in by_pid[101]
    assert str(made[101][2]["scalene_bpf"]["bpf"]["samples"]) in by_pid[101]
    # Not profiled, after the table, with why.
    after = out[out.index("not profiled (1 listed)"):]
    assert re.search(r"303\s+Python 3.8 is not supported\s+python3.8 old.py", after)
    assert "warning: the process table was full for 2 s" in out
    hottest = next(p for p in order if p["pid"] in made)
    assert out.rstrip().endswith(
        f"to open one process: {BIN} view {d}/{hottest['profile']}"), out
    # Which opens as a profile, as before.
    rc, one, err = view("--cli", d / hottest["profile"])
    assert rc == 0 and one.startswith("program: "), err


def test_narrow_terminal(made, tmp_path):
    d = make_dir(tmp_path, made)
    for width in (40, 80, 100):
        rc, out, err = view("--cli", d, width=width)
        assert rc == 0, err
        assert_width(out, width)
        assert "pid" in out and "CPU s" in out and "total" in out


def test_hostile_strings(made, tmp_path):
    doc = index_of(made, host="h\u202e\x1b[2J\x07")
    doc["processes"][0]["cmdline"] = ["\x1b]0;title\x07", "\u0085x", "\u6f22" * 200]
    doc["processes"][0]["comm"] = "\x9b31m"
    doc["warnings"] = ["\x1b[31mred\u2028next"]
    raw = json.dumps(doc).replace('"testhost"', '"x"').encode()
    raw = raw.replace(b'"6.1.0-test"', b'"6.1\xff\xc0"')
    d = make_dir(tmp_path, made, raw=raw)
    for width in (60, WIDTH):
        rc, out, err = view("--cli", d, width=width)
        assert rc == 0, err
        assert_terminal_safe(out)
        assert_width(out, width)


@pytest.mark.parametrize("change, message", [
    ({"scalene_bpf_index": 2}, "index format version 2"),
    ({"scalene_bpf_index": "1"}, "scalene_bpf_index is not a number"),
    ({"processes": {}}, "processes is not an array"),
    ({"host": None}, "host is null"),
    ({"elapsed_time_sec": -1}, "elapsed_time_sec is out of range"),
    ({"processes": [{"pid": "4242", "comm": "x"}]}, "processes[0].pid is not a number"),
    ({"processes": [{"pid": 1, "comm": "x", "exited": False, "cpu_s": 1}]},
     "processes[0].python_s is missing"),
    ({"warnings": "none"}, "warnings is not an array"),
])
def test_hostile_index_refused(made, tmp_path, change, message):
    doc = index_of(made)
    doc.update(change)
    d = make_dir(tmp_path, made, doc)
    for opts in (["--cli"], ["--html", tmp_path / "o.html"]):
        rc, out, err = view(*opts, d)
        assert rc == 1, f"exit {rc}: {err}"
        assert message in err, err
        assert not out
        assert_terminal_safe(err)
    assert not (tmp_path / "o.html").exists()


def test_huge_and_broken_indexes(made, tmp_path):
    doc = index_of(made)
    doc["processes"] = [1] * 100001
    d = make_dir(tmp_path, made, doc)
    rc, _, err = view("--cli", d)
    assert rc == 1 and "more entries than this reader takes" in err, err
    (d / "index.json").write_text('{"scalene_bpf_index": 1, "host": ')
    rc, _, err = view("--cli", d)
    assert rc == 1 and "truncated JSON" in err, err
    (d / "index.json").write_text("[]")
    rc, _, err = view("--cli", d)
    assert rc == 1 and "not a valid index" in err, err


def test_not_an_all_directory(tmp_path):
    rc, out, err = view("--cli", tmp_path)
    assert rc == 1 and not out
    assert "without index.json: not the output of scalene-bpf --all" in err, err
    rc, _, err = view("--format", "folded", tmp_path)
    assert rc == 1 and "--format exports one profile" in err, err


# --------------------------------------------------------------------------
# The host's page
# --------------------------------------------------------------------------

def same_page(a, b):
    """Two pages the same but for their CSP nonce."""
    ta, tb = (NONCE.sub("nonce", Path(p).read_text(encoding="utf-8")) for p in (a, b))
    return ta == tb


def test_host_page(made, tmp_path):
    doc = index_of(made)
    d = make_dir(tmp_path, made, doc)
    out = tmp_path / "pages" / "host.html"
    out.parent.mkdir()
    rc, stdout, err = view("--html", out, d)
    assert rc == 0, err
    assert not stdout
    assert f"HTML view written to {out}, with 2 process pages beside it" in err
    assert "505-bad.json" in err and "missing" in err  # said on stderr too
    pages = sorted(p.name for p in out.parent.iterdir())
    assert pages == ["host-101-busy.html", "host-202-native_sha.html", "host.html"]
    assert not (tmp_path / "escape.html").exists()

    model = embedded_model(out)
    assert model["kind"] == "host" and model["host"] == "testhost"
    probe = render_ok(out, actions=HOST_PROBE)["actions"]
    assert probe["title"].startswith("testhost")
    for fact in ("6.1.0-test", "9.25 s", "997 Hz", "not_python 12",
                 "table_full 0"):
        assert fact in probe["header"], probe["header"]
    assert "the process table was full for 2 s" in probe["warnings"]
    order = ranked(doc)
    total = sum(p["cpu_s"] for p in order)
    rows = probe["procs"]
    assert [int(r["cells"]["pid"]) for r in rows] == [p["pid"] for p in order]
    for p, r in zip(order, rows):
        c = r["cells"]
        assert c["cpu"] == f"{p['cpu_s']:.2f}", (p, c)
        assert c["total"].endswith(pct(100 * p["cpu_s"] / total)), (p, c)
        assert c["py"] == pct(100 * p["python_s"] / total)
        assert c["c"] == pct(100 * p["native_s"] / total)
        assert c["sys"] == pct(100 * p["system_s"] / total)
        assert c["cmd"] == " ".join(p["cmdline"])
        if p["pid"] in made:
            assert r["href"] == f"host-{Path(p['profile']).stem}.html", r
            assert (out.parent / r["href"]).is_file()
            assert not r["problem"]
        else:
            assert r["href"] is None, r
            assert r["problem"], r
    by_pid = {int(r["cells"]["pid"]): r for r in rows}
    assert "missing" in by_pid[404]["problem"]
    assert by_pid[404]["cells"]["peak"] == "?"
    assert by_pid[505]["cells"]["await"] == "1.25"
    assert by_pid[101]["cells"]["await"] == ""
    assert by_pid[404]["cells"]["ns_pid"] == "4"
    assert "truncated JSON" in by_pid[505]["problem"]
    assert "refused" in by_pid[606]["problem"]
    assert "escape" not in json.dumps(by_pid[606])
    assert [(int(r["cells"]["pid"]), r["cells"]["reason"]) for r in probe["skipped"]] \
        == [(303, "Python 3.8 is not supported")]

    # Each process's page is the one `view --html DIR/<file>` writes.
    for pid, (name, _, _) in made.items():
        page = out.parent / f"host-{Path(name).stem}.html"
        alone = tmp_path / f"alone-{pid}.html"
        rc, _, err = view("--html", alone, d / name)
        assert rc == 0, err
        assert same_page(page, alone), f"{page} differs from {alone}"
    probe = render_ok(out.parent / "host-101-busy.html")
    assert probe["files"], "the process page shows no file"


def test_host_page_default_paths(made, tmp_path):
    """Without OUT.html: DIR/index.html, and each process's page where
    `view --html DIR/<file>` puts it."""
    d = make_dir(tmp_path, made)
    rc, _, err = view("--html", d)
    assert rc == 0, err
    assert (d / "index.html").is_file()
    for name, _, _ in made.values():
        page = d / name.replace(".json", ".html")
        assert page.is_file()
        before = tmp_path / "before.html"
        before.write_bytes(page.read_bytes())
        rc, _, err = view("--html", d / name)
        assert rc == 0 and f"HTML view written to {page}" in err, err
        assert same_page(page, before)
    probe = render_ok(d / "index.html", actions=HOST_PROBE)["actions"]
    links = [r["href"] for r in probe["procs"] if r["href"]]
    assert sorted(links) == sorted(n.replace(".json", ".html")
                                   for n, _, _ in made.values())


def test_host_page_hostile_strings(made, tmp_path):
    doc = index_of(made, host="<script>window.__pwned=1</script>")
    doc["processes"][0]["cmdline"] = ["</script><img src=x onerror=window.__pwned=2>"]
    doc["warnings"] = ["<b>bold</b>\u2028"]
    d = make_dir(tmp_path, made, doc)
    out = tmp_path / "h.html"
    rc, _, err = view("--html", out, d)
    assert rc == 0, err
    res = render_ok(out, actions=HOST_PROBE)
    assert res["pwned"] is None
    assert res["images"] == 0 and res["scripts"] == 2
    probe = res["actions"]
    assert probe["title"].startswith("<script>")
    assert any(r["cells"]["cmd"].startswith("</script><img")
               for r in probe["procs"])
