# SPDX-License-Identifier: BSD-2-Clause
"""`scalene-bpf view --html`: the self-contained page of a profile.

Each page is loaded in headless Chromium driven over the DevTools pipe (the
machinery of tests/compat/scalene_compat.py); a test fails on any JavaScript
exception, console error or error log entry (a blocked load included), on a
dialog, and on any network request.  What the page shows is read back from
its DOM and compared with the profile's JSON: the hottest line's numbers and
source text, the functions, the flame graphs' frames for the heaviest
stacks, the timeline, the data-quality note.  Profiles: one of ours (made
here), Scalene's reference profiles, hostile and malformed ones, and large
synthetic ones for the size bounds.
"""

import base64
import decimal
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import time
import zlib
from pathlib import Path

import pytest

from e2e_helpers import (ASYNC_FILE, BIN, REPO, async_profile, clean_env,
                         compat, default_interpreter, markers, profile_run,
                         program, reference_dir, sudo_env)

REFERENCE = reference_dir()
REFERENCE_FILES = sorted(REFERENCE.glob("*.json")) if REFERENCE.is_dir() \
    else []
FIXTURES = REPO / "tests" / "fixtures" / "view"
# The page's threshold: lines under it (and without memory activity) are
# left out, as in the terminal view.
HOT_PERCENT = 1.0
MAX_STACKS = 2000
WINDOW = (1400, 1000)

# What the page shows, read from its DOM once it says it is drawn.
PROBE = r"""(() => {
  const attrs = g => ({name: g.getAttribute('data-name'),
    file: g.getAttribute('data-file'), line: g.getAttribute('data-line'),
    depth: +g.getAttribute('data-depth'), w: +g.getAttribute('data-weight'),
    x: +g.querySelector('rect').getAttribute('x'),
    width: +g.querySelector('rect').getAttribute('width')});
  const rows = (root, sel) => [...root.querySelectorAll(sel)].map(tr => {
    const cells = {};
    for (const td of tr.cells) cells[td.getAttribute('data-col')] = td.textContent;
    return {n: tr.getAttribute('data-n'), cells};
  });
  const meta = document.querySelector('meta[http-equiv="Content-Security-Policy"]');
  return {
    ready: document.body.getAttribute('data-ready'),
    title: document.title,
    text: document.body.innerText,
    header: (document.querySelector('.facts') || {}).textContent || '',
    scripts: document.scripts.length,
    images: document.images.length,
    iframes: document.querySelectorAll('iframe, object, embed').length,
    pwned: window.__pwned === undefined ? null : String(window.__pwned),
    csp: meta ? meta.content : '',
    files: [...document.querySelectorAll('div.file')].map(f => ({
      name: f.getAttribute('data-file'),
      lines: rows(f, 'table.profile-lines tbody tr'),
      funcs: rows(f, 'table.profile-functions tbody tr')})),
    cpu: [...document.querySelectorAll('#cpu-flame g.frame')].map(attrs),
    mem: [...document.querySelectorAll('#mem-flame g.frame')].map(attrs),
    cpuWidth: +((document.querySelector('#cpu-flame svg') || {getAttribute: () => 0}).getAttribute('width')),
    sparks: document.querySelectorAll('svg.spark polyline').length,
    runs: [...document.querySelectorAll('#timeline rect.run')].map(r => r.getAttribute('data-name')),
    footprint: document.querySelectorAll('#timeline path.footprint').length,
    quality: (document.getElementById('quality') || {}).textContent || '',
    warnings: (document.getElementById('warnings') || {}).textContent || '',
    notes: [...document.querySelectorAll('p.note')].map(p => p.textContent),
    gpu: document.getElementById('gpu-lines') ? {
      title: document.querySelector('#gpu-lines h2').textContent,
      rows: rows(document, 'table.gpu-lines tbody tr')} : null,
    nav: [...document.querySelectorAll('nav a')].map(a => a.getAttribute('href')),
  };
})()"""


# --------------------------------------------------------------------------
# Chromium
# --------------------------------------------------------------------------

def render_page(html, actions=None, screenshot=None, timeout=60):
    """Loads an HTML file in headless Chromium and returns (problems,
    requests, probe): the JavaScript exceptions, console errors, error log
    entries and dialogs; the URLs of every request but the page's own; and
    PROBE's value, after `actions` (a JavaScript expression) ran.
    `screenshot`: where to write a PNG of the window."""
    binary = compat.find_chromium()
    if not binary:
        pytest.fail("Chromium not found: apt-get install chromium, or set "
                    "SCALENE_COMPAT_CHROMIUM", pytrace=False)
    page_url = Path(html).resolve().as_uri()
    tmp = tempfile.mkdtemp(prefix="sbpf-html-")
    try:
        with compat.chromium(binary, tmp, window=WINDOW) as cdp:
            return _drive(cdp, page_url, actions, screenshot, timeout)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _drive(cdp, page_url, actions, screenshot, timeout):
    deadline = time.monotonic() + timeout
    target = cdp.call("Target.createTarget", {"url": "about:blank"},
                      timeout=30)["targetId"]
    sess = cdp.call("Target.attachToTarget",
                    {"targetId": target, "flatten": True})["sessionId"]
    for m in ("Runtime.enable", "Log.enable", "Page.enable",
              "Network.enable", "Inspector.enable"):
        cdp.call(m, session=sess)
    cdp.call("Emulation.setDeviceMetricsOverride",
             {"width": WINDOW[0], "height": WINDOW[1], "deviceScaleFactor": 1,
              "mobile": False}, session=sess)
    cdp.events.clear()
    nav = cdp.call("Page.navigate", {"url": page_url}, session=sess)
    assert not nav.get("errorText"), f"Chromium: {nav['errorText']}"
    problems, requests = [], []
    state = {"loaded": False}

    def drain():
        while cdp.events:
            ev = cdp.events.pop(0)
            if ev.get("sessionId") not in (None, sess):
                continue
            m, p = ev.get("method"), ev.get("params", {})
            if m == "Runtime.exceptionThrown":
                problems.append(compat._describe_exception(p))
            elif m == "Runtime.consoleAPICalled" and p.get("type") in (
                    "error", "assert", "warning"):
                problems.append(f"console.{p['type']}: "
                                f"{compat._console_text(p)[:800]}")
            elif m == "Log.entryAdded":
                e = p.get("entry", {})
                if e.get("level") in ("error", "warning"):
                    problems.append(f"log {e.get('level')}: {e.get('source')}"
                                    f": {e.get('text')} {e.get('url', '')}")
            elif m == "Network.requestWillBeSent":
                url = p.get("request", {}).get("url", "")
                if url != page_url:
                    requests.append(url)
            elif m == "Page.javascriptDialogOpening":
                problems.append(f"dialog: {p.get('message', '')[:200]}")
                cdp.send("Page.handleJavaScriptDialog", {"accept": True},
                         session=sess)
            elif m in ("Inspector.targetCrashed", "Target.targetCrashed"):
                problems.append("renderer crashed")
            elif m == "Page.loadEventFired":
                state["loaded"] = True

    def evaluate(expr):
        r = cdp.call("Runtime.evaluate", {"expression": expr,
                                          "returnByValue": True},
                     session=sess, timeout=30)
        if "exceptionDetails" in r:
            raise AssertionError("probe failed: "
                                 + compat._describe_exception(r))
        return r.get("result", {}).get("value")

    ready = False
    while time.monotonic() < deadline:
        cdp.pump(min(deadline, time.monotonic() + 0.1))
        drain()
        if state["loaded"] and evaluate(
                "document.body && document.body.getAttribute('data-ready')"):
            ready = True
            break
    assert ready, f"the page did not finish drawing in {timeout} s: " \
        f"{problems}"
    end = time.monotonic() + 0.3  # late errors, late requests
    while time.monotonic() < end:
        cdp.pump(end)
        drain()
    done = evaluate(actions) if actions else None
    probe = evaluate(PROBE)
    probe["actions"] = done
    if screenshot:
        shot = cdp.call("Page.captureScreenshot", {"format": "png"},
                        session=sess, timeout=30)
        with open(screenshot, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
    drain()
    try:
        cdp.send("Browser.close")
    except OSError:
        pass
    return problems, requests, probe


def png_pixels(path):
    """(width, height, set of distinct colours, share of the commonest) of
    an 8-bit RGB or RGBA PNG (what Chromium writes), decoded here."""
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = hdr
    assert depth == 8 and ctype in (2, 6) and interlace == 0, hdr
    bpp = 3 if ctype == 2 else 4
    raw, stride = zlib.decompress(idat), w * bpp
    prev, counts, i = bytearray(stride), {}, 0
    for _ in range(h):
        ftype, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if ftype == 1:
                line[x] = (line[x] + a) & 255
            elif ftype == 2:
                line[x] = (line[x] + b) & 255
            elif ftype == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pr = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[x] = (line[x] + pr) & 255
        for x in range(0, stride, bpp * 2):  # every other pixel is enough
            px = bytes(line[x:x + 3])
            counts[px] = counts.get(px, 0) + 1
        prev = line
    return w, h, set(counts), max(counts.values()) / sum(counts.values())


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------

def write_html(profile, out, env=None, cwd=None):
    # Without sudo's variables unless a test gives them: under `sudo make
    # test` they would make the view write as the invoking user, who cannot
    # reach root's temporary folders.
    p = subprocess.run([str(BIN), "view", "--html", str(out), str(profile)],
                       capture_output=True, text=True, timeout=60,
                       env=env if env is not None else clean_env(),
                       cwd=cwd, stdin=subprocess.DEVNULL)
    return p


def page_of(profile, tmp, name="page.html"):
    """Writes the page of a profile file; its path."""
    out = Path(tmp) / name
    p = write_html(profile, out)
    assert p.returncode == 0, f"view --html exited {p.returncode}: {p.stderr}"
    assert f"HTML view written to {out}" in p.stderr, p.stderr
    assert out.is_file()
    return out


def render_ok(html, **kw):
    problems, requests, probe = render_page(html, **kw)
    assert not problems, "the page reported errors:\n  " + "\n  ".join(
        problems[:20])
    assert not requests, f"the page made network requests: {requests[:10]}"
    assert probe["ready"] == "1"
    assert "default-src 'none'" in probe["csp"], probe["csp"]
    return probe


def embedded_model(html):
    """The model the page carries, parsed from its JSON script element."""
    text = Path(html).read_text(encoding="utf-8")
    m = re.search(r'<script type="application/json" id="profile-data">'
                  r'(.*?)</script>', text, re.S)
    assert m, "no embedded model"
    return json.loads(m.group(1))


def total(row):
    return sum(row.get(k) if isinstance(row.get(k), (int, float)) else 0
               for k in ("n_cpu_percent_python", "n_cpu_percent_c",
                         "n_sys_percent"))


def unescape_line(text):
    """What the page shows of a source line: Scalene's \\u0026 etc. as the
    characters, without the line break."""
    for k, v in (("\\u0026", "&"), ("\\u003c", "<"), ("\\u003e", ">")):
        text = text.replace(k, v)
    return text.rstrip("\r\n")


def js_fixed(x, digits=1):
    """Number.prototype.toFixed: the exact binary value, ties up."""
    q = decimal.Decimal(1).scaleb(-digits)
    return str(decimal.Decimal(x).quantize(q, decimal.ROUND_HALF_UP))


def shown_number(cell):
    m = re.search(r"-?\d+(\.\d+)?", cell.replace(",", ""))
    assert m, f"no number in {cell!r}"
    return float(m.group(0))


def file_block(probe, name):
    for f in probe["files"]:
        if f["name"] == name:
            return f
    raise AssertionError(f"no table for {name}; tables: "
                         f"{[f['name'] for f in probe['files']]}")


def check_hottest_line(profile, probe):
    """The hottest line of the profile: its row shows its number, its time
    split and its source text."""
    best = None
    for name, fd in profile["files"].items():
        for row in fd["lines"]:
            if best is None or total(row) > total(best[1]):
                best = (name, row)
    name, row = best
    shown = file_block(probe, name)
    match = [r for r in shown["lines"] if r["n"] == str(row["lineno"])]
    assert match, (f"hottest line {name}:{row['lineno']} ({total(row):.1f}%)"
                   f" not shown; rows: {[r['n'] for r in shown['lines']]}")
    cells = match[0]["cells"]
    for col, key in (("py", "n_cpu_percent_python"), ("c", "n_cpu_percent_c"),
                     ("sys", "n_sys_percent")):
        assert abs(shown_number(cells[col]) - row[key]) <= 0.051, (
            f"{name}:{row['lineno']} {col}: page {cells[col]!r}, JSON "
            f"{row[key]}")
    assert abs(shown_number(cells["time"]) - total(row)) <= 0.051, cells
    assert cells["src"] == unescape_line(row["line"]), (cells["src"],
                                                         row["line"])
    return name, row


def awaits(profile):
    """The await column's rule: await profiling on, and some line or
    function awaited."""
    return profile.get("async_profile") is True and any(
        r.get("n_async_await_percent", 0) > 0
        for fd in profile["files"].values()
        for r in fd["lines"] + fd.get("functions", []))


def row_shown(profile, row):
    """The views' rule (user/view/viewutil.c vj_row_shown) at the default
    threshold: time, or in an async profile the await share, reaching it,
    or memory activity."""
    a = row.get("n_async_await_percent", 0) if awaits(profile) else 0
    hot = (total(row) > 0 and total(row) >= HOT_PERCENT) or \
        (a > 0 and a >= HOT_PERCENT)
    active = profile.get("memory") is True and (
        row.get("n_malloc_mb", 0) > 0 or
        row.get("n_usage_fraction", 0) > 0 or
        row.get("n_copy_mb_s", 0) > 0)
    return hot or active


def file_shown(profile, fd):
    """The views' rule for a file (vj_file_shown): its share of the time
    reaches the threshold, or one of its rows is shown."""
    return (fd.get("percent_cpu_time", 0) >= HOT_PERCENT or
            any(row_shown(profile, r)
                for r in fd["lines"] + fd.get("functions", [])))


def check_lines_shown(profile, probe):
    """Every line at or above the threshold is in its table, and none
    under it without memory activity; a file with none of either and
    under the threshold is left out."""
    for name, fd in profile["files"].items():
        if not file_shown(profile, fd):
            assert name not in [f["name"] for f in probe["files"]], name
            continue
        shown = {r["n"] for r in file_block(probe, name)["lines"]}
        for row in fd["lines"]:
            want = row_shown(profile, row)
            assert (str(row["lineno"]) in shown) == want, (
                f"{name}:{row['lineno']} ({total(row):.2f}%) shown: "
                f"{str(row['lineno']) in shown}")


def check_functions(profile, probe):
    """The functions shown are those the same rule keeps, in their order."""
    for name, fd in profile["files"].items():
        if not file_shown(profile, fd):
            continue
        funcs = file_block(probe, name)["funcs"]
        kept = [fn for fn in fd["functions"] if row_shown(profile, fn)]
        assert len(funcs) == len(kept)
        for fn, r in zip(kept, funcs):
            assert r["cells"]["name"] == fn["line"]
            assert abs(shown_number(r["cells"]["time"]) - total(fn)) <= 0.051


def heaviest(stacks):
    return max(stacks, key=lambda s: s[1])


def check_flame(frames_shown, stack, what):
    """Each frame of the stack has its element in the flame graph, at its
    depth (the root, "all", is depth 0), drawn inside its caller's element
    and at least as heavy as the stack: the same frame under another caller
    is another element. Frames alike but for their address (Scalene's
    unnamed native frames) are elements alike, so each depth keeps every
    element that can be on the stack's path."""
    def inside(g, parent):
        # Rects are drawn half a pixel narrower than their span, at two
        # decimals.
        return parent["x"] - 0.01 <= g["x"] <= \
            parent["x"] + parent["width"] + 0.51
    parents = [g for g in frames_shown if g["depth"] == 0]
    for depth, fr in enumerate(stack[0], 1):
        want = (fr["display_name"], fr["filename_or_module"])
        at = [g for g in frames_shown
              if (g["name"], g["file"]) == want and g["depth"] == depth
              and (fr.get("line") is None or g["line"] == str(fr["line"]))
              and any(inside(g, p) for p in parents)]
        assert at, f"{what}: no element for {want} at depth {depth}"
        # The page carries six significant digits.
        parents = [g for g in at if g["w"] >= stack[1] * (1 - 1e-5)]
        assert parents, (what, want, depth, [g["w"] for g in at], stack[1])


def check_header(profile, probe):
    head = probe["header"]
    e = profile["elapsed_time_sec"]
    assert f"elapsed {js_fixed(e, 1 if e >= 10 else 2)} s" in head, head
    assert ("memory on" if profile["memory"] else "memory off") in head
    assert ("GPU on" if profile["gpu"] else "GPU off") in head
    assert profile["program"] in probe["text"]


# --------------------------------------------------------------------------
# Our profile
# --------------------------------------------------------------------------

def test_our_profile(any_python, tmp_path):
    res = profile_run(any_python, str(REPO / "examples" / "demo.py"),
                      tmp=tmp_path)
    prof = res.profile
    html = page_of(res.path, tmp_path)
    assert html.stat().st_size < res.path.stat().st_size
    # Hover on the heaviest frame, and sort the first table by Python time.
    actions = r"""(() => {
      const gs = [...document.querySelectorAll('#cpu-flame g.frame')]
        .filter(g => g.getAttribute('data-depth') === '1')
        .sort((a, b) => b.getAttribute('data-weight') - a.getAttribute('data-weight'));
      gs[0].dispatchEvent(new MouseEvent('mousemove', {clientX: 50, clientY: 50, bubbles: true}));
      const tip = document.getElementById('tip');
      const shown = tip.hidden ? '' : tip.textContent;
      document.querySelector('table.profile-lines th[data-col=py]').click();
      const order = [...document.querySelector('table.profile-lines tbody').rows]
        .map(tr => +tr.getAttribute('data-n'));
      return {tip: shown, order: order, file: document.querySelector('div.file').getAttribute('data-file')};
    })()"""
    shot = Path(os.environ.get("SBPF_HTML_SHOT") or tmp_path / "page.png")
    probe = render_ok(html, actions=actions, screenshot=shot)
    check_header(prof, probe)
    samples = prof["scalene_bpf"]["bpf"]["samples"]
    assert f"samples {samples:,}" in probe["header"], probe["header"]
    name, hot = check_hottest_line(prof, probe)
    check_lines_shown(prof, probe)
    check_functions(prof, probe)

    # Memory columns: the line that allocated most.
    assert prof["memory"] is True
    mrow = max((r for fd in prof["files"].values() for r in fd["lines"]),
               key=lambda r: r["n_malloc_mb"])
    mname = next(n for n, fd in prof["files"].items() if mrow in fd["lines"])
    cells = next(r["cells"] for r in file_block(probe, mname)["lines"]
                 if r["n"] == str(mrow["lineno"]))
    assert abs(float(cells["peak"]) - mrow["n_peak_mb"]) <= 0.0051
    assert abs(float(cells["avg"]) - mrow["n_avg_mb"]) <= 0.0051
    assert abs(shown_number(cells["usage"]) -
               100 * mrow["n_usage_fraction"]) <= 0.051
    with_samples = sum(1 for fd in prof["files"].values()
                       for r in fd["lines"] if r["memory_samples"])
    assert probe["sparks"] >= 1 and probe["sparks"] <= with_samples
    # Our churn column (scalene_bpf.allocation_churn): every line shown with
    # its churn, the MB it allocated freed or not.
    churn = prof["scalene_bpf"]["allocation_churn"]["files"]
    checked = 0
    for name in prof["files"]:
        for r in file_block(probe, name)["lines"]:
            want = churn.get(name, {}).get("lines", {}).get(r["n"], 0.0)
            assert abs(float(r["cells"]["churn"]) - want) <= 0.051, (name, r, want)
            checked += want > 0
    assert checked, "no line with churn shown"

    # Flame graphs: the heaviest stacks' frames, the root spanning all.
    check_flame(probe["cpu"], heaviest(prof["combined_stacks"]), "CPU")
    root = [g for g in probe["cpu"] if g["depth"] == 0]
    assert root and root[0]["name"] == "all"
    assert abs(root[0]["w"] - sum(s[1] for s in prof["combined_stacks"])) \
        < 1e-6
    assert prof["memory_stacks"], "demo.py allocates: memory stacks expected"
    check_flame(probe["mem"], heaviest(prof["memory_stacks"]), "memory")

    # The footprint timeline, the data-quality note.
    assert probe["footprint"] == (1 if prof["samples"] else 0)
    lost = {k: v for k, v in prof["scalene_bpf"]["bpf"].items()
            if k in ("lost_ringbuf_full", "frames_unreadable",
                     "walk_read_failed", "walk_truncated", "bad_records")
            and v}
    for k, v in lost.items():
        assert f"{k} = {v:,}" in probe["quality"], probe["quality"]
    if not lost:
        assert "frames_unreadable" not in probe["quality"]

    # The tooltip of the heaviest root frame: name, place, share.
    top = {}
    for st, w in prof["combined_stacks"]:
        key = (st[0]["display_name"], st[0]["filename_or_module"],
               st[0]["line"])
        top[key] = top.get(key, 0) + w
    (tname, tfile, tline), tw = max(top.items(), key=lambda kv: kv[1])
    share = 100 * tw / sum(s[1] for s in prof["combined_stacks"])
    tip = probe["actions"]["tip"]
    assert tname in tip and f"{tfile}:{tline}" in tip, tip
    assert f"{js_fixed(share)}%" in tip, (share, tip)
    # Sorted by Python time, the most first.
    order = probe["actions"]["order"]
    rows = {r["lineno"]: r for r in
            prof["files"][probe["actions"]["file"]]["lines"]}
    pys = [rows[n]["n_cpu_percent_python"] for n in order]
    assert pys == sorted(pys, reverse=True) and len(pys) >= 2, order

    # The screenshot: the window's size, and a drawing (many colours, no
    # colour covering nearly all of it).
    w, h, colours, commonest = png_pixels(shot)
    assert (w, h) == WINDOW
    assert len(colours) >= 40, f"{len(colours)} colours: a blank page?"
    assert commonest < 0.97, f"one colour covers {commonest:.0%}"


# --------------------------------------------------------------------------
# Scalene's profiles
# --------------------------------------------------------------------------

@pytest.mark.parametrize("ref", REFERENCE_FILES,
                         ids=[p.stem for p in REFERENCE_FILES])
def test_reference_profile(ref, tmp_path):
    prof = json.loads(ref.read_text())
    probe = render_ok(page_of(ref, tmp_path))
    check_header(prof, probe)
    assert "written by Scalene" in probe["header"]
    check_hottest_line(prof, probe)
    check_lines_shown(prof, probe)
    check_functions(prof, probe)
    combined = [s for s in prof.get("combined_stacks", []) if s[1] > 0]
    if combined:
        check_flame(probe["cpu"], heaviest(combined), "CPU")
        total_hits = sum(s[1] for s in combined)
        assert f"samples {total_hits:,}" in probe["header"]
    elif prof.get("stacks"):
        # Scalene's older stacks: "file name:line;" strings, by count.
        st = max(prof["stacks"], key=lambda s: s[1]["count"])
        for depth, fs in enumerate(st[0], 1):
            m = re.match(r"(.*) (\S+):(\d+);?$", fs)
            assert any(g["name"] == m.group(2) and g["file"] == m.group(1)
                       and g["depth"] == depth for g in probe["cpu"]), fs
    else:
        assert not probe["cpu"]
        assert "This profile has no stacks for it." in probe["notes"]
    mem_stacks = [s for s in prof.get("memory_stacks", []) if s[1] > 0]
    if mem_stacks:
        check_flame(probe["mem"], heaviest(mem_stacks), "memory")
    else:
        assert not probe["mem"]
    if prof.get("memory"):
        assert probe["sparks"] >= 1
        assert probe["footprint"] == (1 if prof["samples"] else 0)
    tl = prof.get("combined_stacks_timeline", [])
    assert len(probe["runs"]) == len(tl)
    if tl:
        # The first run is named by its stack's innermost Python frame.
        st = prof["combined_stacks"][tl[0]["stack_index"]][0]
        py = [f for f in st if f["kind"] == "py"]
        assert probe["runs"][0] == (py or st)[-1]["display_name"]
    else:
        assert not probe["runs"]
    assert probe["quality"] == ""


# --------------------------------------------------------------------------
# Hostile and malformed profiles
# --------------------------------------------------------------------------

INJECTIONS = [
    "<script>window.__pwned = 1</script>",
    "</script><script>window.__pwned = 2</script>",
    "<img src=x onerror=\"window.__pwned = 3\">",
    "<img src=\"http://127.0.0.1:9/leak.png\">",
    "\"'><svg onload=\"window.__pwned = 4\"><!--",
    "<style>body{display:none}</style>]]>",
]


def hostile_profile():
    """A profile whose every string tries to become markup or script."""
    lines = []
    texts = INJECTIONS + [
        "if a \\u003c b \\u0026\\u0026 c \\u003e d:  # caf\u00e9",
        "x = 1\u2028y = 2\u2029z = 3",
        "ctl \u0001\u001b[31m\u007f\u0085 end",
    ]
    for i, t in enumerate(texts, 1):
        lines.append({
            "lineno": i, "line": t + "\n", "n_cpu_percent_python": 10.0,
            "n_cpu_percent_c": 1.0, "n_sys_percent": 0.5,
            "memory_samples": [[1000000 * i, 1.5 * i]],
            "n_avg_mb": 1.0, "n_peak_mb": 2.0, "n_malloc_mb": 3.0,
            "n_usage_fraction": 0.1, "n_copy_mb_s": 0.0,
        })
    frame = lambda name, f, line: {  # noqa: E731
        "kind": "py", "display_name": name, "filename_or_module": f,
        "line": line, "ip": None, "offset": None}
    fname = "/app/<svg onload=window.__pwned=5>.py"
    return {
        "program": "/app/<script>window.__pwned=6</script>.py",
        "elapsed_time_sec": 2.0, "memory": True, "gpu": False,
        "max_footprint_mb": 20.0, "samples": [[0, 1.0], [10 ** 9, 20.0]],
        "files": {fname: {
            "percent_cpu_time": 90.0, "imports": [], "leaks": {},
            "lines": lines,
            "functions": [{"line": "<img src=x onerror=window.__pwned=7>",
                           "lineno": 1, "n_cpu_percent_python": 50.0,
                           "n_cpu_percent_c": 0.0, "n_sys_percent": 0.0,
                           "memory_samples": []}]}},
        "combined_stacks": [
            [[frame("</script><script>window.__pwned=8</script>", fname, 1),
              frame("q\"uo'te\u2028", fname, 2)], 30],
            [[frame("<b>bold</b>", "INVALID_UTF8", 3)], 10]],
        "combined_stacks_timeline": [
            {"t_sec": 0.0, "stack_index": 0, "count": 3, "thread_id": 1},
            {"t_sec": 1.0, "stack_index": 1, "count": 1, "thread_id": 1}],
        "scalene_bpf": {"bpf": {"samples": 40, "lost_ringbuf_full": 7,
                                "frames_unreadable": 0},
                        "warnings": ["<img src=x onerror=window.__pwned=9> "
                                     "use --profile-all", 3]},
    }


def test_hostile_profile(tmp_path):
    prof = hostile_profile()
    raw = json.dumps(prof, ensure_ascii=False).encode()
    # Invalid UTF-8 in a frame's file name and in a source line.
    raw = raw.replace(b"INVALID_UTF8", b"bad\xff\xfe\xc3name")
    raw = raw.replace(b"ctl ", b"ctl \xed\xa0\x80 ")
    src = tmp_path / "hostile.json"
    src.write_bytes(raw)
    html = page_of(src, tmp_path)
    page = html.read_bytes()
    # Only the page's two script elements; the text of the profile is in
    # the JSON one, with nothing that could end it.
    assert len(re.findall(rb"<script", page, re.I)) == 2
    assert len(re.findall(rb"</script", page, re.I)) == 2
    assert b"\xe2\x80\xa8" not in page and b"\xe2\x80\xa9" not in page
    page.decode("utf-8")  # valid UTF-8 throughout
    probe = render_ok(html)
    assert probe["pwned"] is None, f"injected script ran: {probe['pwned']}"
    assert probe["scripts"] == 2 and probe["images"] == 0
    assert probe["iframes"] == 0
    rows = file_block(probe, "/app/<svg onload=window.__pwned=5>.py")
    srcs = {r["n"]: r["cells"]["src"] for r in rows["lines"]}
    for i, t in enumerate(INJECTIONS, 1):
        assert srcs[str(i)] == t, (srcs[str(i)], t)
    n = len(INJECTIONS)
    assert srcs[str(n + 1)] == "if a < b && c > d:  # caf\u00e9"
    assert srcs[str(n + 2)] == "x = 1\u2028y = 2\u2029z = 3"
    # Control characters and invalid UTF-8 become U+FFFD; the rest stays.
    assert srcs[str(n + 3)] == ("ctl \ufffd\ufffd\ufffd \ufffd\ufffd[31m"
                                "\ufffd\ufffd end"), srcs[str(n + 3)]
    assert rows["funcs"][0]["cells"]["name"] == \
        "<img src=x onerror=window.__pwned=7>"
    assert "/app/<script>window.__pwned=6</script>.py" in probe["text"]
    names = {g["name"] for g in probe["cpu"]}
    assert "</script><script>window.__pwned=8</script>" in names
    assert "q\"uo'te\u2028" in names
    bad = [g for g in probe["cpu"] if g["name"] == "<b>bold</b>"]
    assert bad and bad[0]["file"] == "bad\ufffd\ufffd\ufffdname", bad
    # Timeline runs: named by their stack's innermost frame.
    assert probe["runs"] == ["q\"uo'te\u2028", "<b>bold</b>"]
    assert "lost_ringbuf_full = 7" in probe["quality"]
    assert "frames_unreadable" not in probe["quality"]
    # The profile's warnings, as text (the non-string one left out).
    assert probe["warnings"] == ("Warning<img src=x onerror=window.__pwned=9> "
                                 "use --profile-all"), probe["warnings"]


@pytest.mark.parametrize("name", ["hostile", "wrong-types", "huge-numbers"])
def test_malformed_fixture(name, tmp_path):
    """The terminal view's fixtures: wrong types, extreme numbers, terminal
    escapes.  The page draws them without an error."""
    src = FIXTURES / f"{name}.json"
    prof = json.loads(src.read_text())
    probe = render_ok(page_of(src, tmp_path))
    assert probe["pwned"] is None and probe["scripts"] == 2
    assert len(probe["files"]) == len(prof["files"])
    if name == "huge-numbers":
        # 1e308 is shown bounded (1e15), not as Infinity or NaN.
        assert "Infinity" not in probe["text"] and "NaN" not in probe["text"]
        rows = probe["files"][0]["lines"]
        assert any(r["cells"]["src"] == "lineno past int" for r in rows)
    if name == "wrong-types":
        # "memory": "yes" is not true: no memory columns.
        assert "memory off" in probe["header"]
        rows = file_block(probe, "/app/types.py")["lines"]
        assert [r["cells"]["src"] for r in rows] == ["", "no lineno at all"]


@pytest.mark.parametrize("doc", [
    '{"a": 1}', '[1, 2]', '{"files": []}', '{"files": {"x.py": 3}}', '"x"',
    '{"files": {', 'not json'])
def test_not_a_profile(doc, tmp_path):
    src = tmp_path / "bad.json"
    src.write_text(doc)
    out = tmp_path / "bad.html"
    p = write_html(src, out)
    assert p.returncode == 1, (p.returncode, p.stderr)
    assert not out.exists(), "a page was written for a bad input"
    msg = p.stderr.strip()
    assert len(msg.splitlines()) == 1 and msg.startswith("scalene-bpf: "), msg
    if doc.startswith("{\"") and doc.endswith("}"):
        assert "not a profile" in msg, msg
    else:
        assert "not a profile" in msg or "JSON" in msg, msg


# --------------------------------------------------------------------------
# Size: the page grows with the hot lines, and the stacks are capped
# --------------------------------------------------------------------------

def synthetic(hot, cold, stacks=0):
    lines = []
    for i in range(hot + cold):
        t = 90.0 / hot if i < hot else 0.0001
        lines.append({"lineno": i + 1, "line": f"x_{i} = compute({i})\n",
                      "n_cpu_percent_python": t, "n_cpu_percent_c": 0.0,
                      "n_sys_percent": 0.0, "memory_samples": []})
    frame = lambda i: {"kind": "py", "display_name": f"f{i}",  # noqa: E731
                       "filename_or_module": "/s.py", "line": i + 1,
                       "ip": None, "offset": None}
    return {"program": "/s.py", "elapsed_time_sec": 1.0, "memory": False,
            "gpu": False, "files": {"/s.py": {
                "percent_cpu_time": 90.0, "functions": [], "imports": [],
                "leaks": {}, "lines": lines}},
            "combined_stacks": [[[frame(0), frame(i % 50), frame(i)], i + 1]
                                for i in range(stacks)]}


def test_size_grows_with_hot_lines(tmp_path):
    sizes, models = {}, {}
    for hot, cold in ((10, 100), (10, 50000), (80, 100)):
        src = tmp_path / f"s{hot}-{cold}.json"
        src.write_text(json.dumps(synthetic(hot, cold)))
        html = page_of(src, tmp_path, name=f"s{hot}-{cold}.html")
        sizes[hot, cold] = html.stat().st_size
        models[hot, cold] = embedded_model(html)
    cold_json = (tmp_path / "s10-50000.json").stat().st_size
    assert cold_json > 4_000_000
    # 49,900 more cold lines: a few bytes (the counts), not megabytes.
    assert sizes[10, 50000] - sizes[10, 100] < 200, sizes
    assert sizes[10, 50000] < 100_000, sizes
    f = models[10, 50000]["files"][0]
    assert len(f["lines"]) == 10 and f["hidden"] == 50000
    assert f["nlines"] == 50010
    # 70 more hot lines: each costs its row.
    assert 70 * 60 < sizes[80, 100] - sizes[10, 100] < 70 * 400, sizes
    assert len(models[80, 100]["files"][0]["lines"]) == 80


def test_stacks_capped(tmp_path):
    n = 5000
    src = tmp_path / "stacks.json"
    src.write_text(json.dumps(synthetic(10, 0, stacks=n)))
    html = page_of(src, tmp_path)
    assert html.stat().st_size < 400_000, html.stat().st_size
    cpu = embedded_model(html)["cpu"]
    assert len(cpu["stacks"]) == MAX_STACKS
    assert cpu["count"] == n and cpu["omitted"] == n - MAX_STACKS
    # The heaviest are kept: weights n down to n - MAX_STACKS + 1.
    assert [s[1] for s in cpu["stacks"][:3]] == [n, n - 1, n - 2]
    assert cpu["stacks"][-1][1] == n - MAX_STACKS + 1
    assert cpu["omitted_w"] == sum(range(1, n - MAX_STACKS + 1))
    assert cpu["total"] == sum(range(1, n + 1))
    probe = render_ok(html)
    omitted = sum(range(1, n - MAX_STACKS + 1))
    share = 100 * omitted / sum(range(1, n + 1))
    assert (f"The {n - MAX_STACKS:,} lightest stacks ({omitted:,} samples "
            f"({js_fixed(share)}%)) are left out; the {MAX_STACKS} heaviest are "
            f"drawn.") in probe["notes"], probe["notes"]
    top = [g for g in probe["cpu"] if g["name"] == f"f{n - 1}"]
    assert top and top[0]["w"] == n


# --------------------------------------------------------------------------
# sudo: the page belongs to the invoking user
# --------------------------------------------------------------------------

def test_sudo_page_belongs_to_the_user(user_dir):
    user, d = user_dir
    src = d / "cpu.json"
    shutil.copy(REFERENCE / "scalene_ref_cpu.json"
                if REFERENCE.is_dir() else FIXTURES / "hostile.json", src)
    env = sudo_env(user)
    env.pop("DISPLAY", None)
    out = d / "named.html"
    p = write_html(src, out, env=env)
    assert p.returncode == 0, p.stderr
    # The default name: the profile's, .json replaced by .html.
    p2 = subprocess.run([str(BIN), "view", "--html", str(src)], env=env,
                        capture_output=True, text=True, timeout=60,
                        stdin=subprocess.DEVNULL)
    assert p2.returncode == 0, p2.stderr
    assert f"HTML view written to {d / 'cpu.html'}" in p2.stderr
    for page in (out, d / "cpu.html"):
        st = page.stat()
        assert (st.st_uid, st.st_gid) == (user.pw_uid, user.pw_gid), (
            f"{page} belongs to {st.st_uid}:{st.st_gid}, not "
            f"{user.pw_uid}:{user.pw_gid}")
        assert page.read_bytes().startswith(b"<!DOCTYPE html>")
    # A directory the user cannot write to: refused, nothing written as
    # root there.
    locked = d / "locked"
    locked.mkdir()
    os.chmod(locked, 0o755)  # root's
    p3 = write_html(src, locked / "x.html", env=env)
    assert p3.returncode == 1 and not (locked / "x.html").exists()
    assert "cannot write" in p3.stderr, p3.stderr


# --------------------------------------------------------------------------
# Optional columns, zoom
# --------------------------------------------------------------------------

def test_gpu_and_leak_columns(tmp_path):
    prof = synthetic(3, 2)
    prof.update({"gpu": True, "gpu_device": "GPU", "memory": True,
                 "max_footprint_mb": 64.0, "elapsed_time_sec": 2.0})
    rows = prof["files"]["/s.py"]["lines"]
    rows[0].update({"n_gpu_percent": 71.25, "n_gpu_avg_memory_mb": 123.4,
                    "n_gpu_peak_memory_mb": 456.7,
                    # Without async_profile: no await column.
                    "n_async_await_percent": 42.5})
    rows[1].update({"n_malloc_mb": 8.0, "n_avg_mb": 3.5, "n_peak_mb": 7.25,
                    "n_usage_fraction": 0.8, "n_copy_mb_s": 12.5,
                    "memory_samples": [[5e8, 10.0], [1.5e9, 60.0]]})
    prof["files"]["/s.py"]["leaks"] = {
        "2": {"likelihood": 0.99, "velocity_mb_s": 1.75}}
    src = tmp_path / "gpu.json"
    src.write_text(json.dumps(prof))
    probe = render_ok(page_of(src, tmp_path))
    assert "GPU on (GPU)" in probe["header"] and "async on" not in \
        probe["header"]
    cells = {r["n"]: r["cells"] for r in file_block(probe, "/s.py")["lines"]}
    assert cells["1"]["gpu"] == js_fixed(71.25) + "%" == "71.3%"
    assert cells["1"]["gavg"] == "123.4" and cells["1"]["gpeak"] == "456.7"
    assert "await" not in cells["1"] and "tasks" not in cells["1"]
    assert cells["2"]["avg"] == "3.50" and cells["2"]["peak"] == "7.25"
    assert cells["2"]["usage"] == "80.0%" and cells["2"]["copy"] == "12.5"
    assert "possible leak 1.75 MB/s" in cells["2"]["timeline"]
    assert "leak" not in cells["1"]["timeline"]
    # Memory activity alone keeps a cold line.
    assert set(cells) == {"1", "2", "3"}
    assert probe["sparks"] == 1


def test_gpu_launch_table(tmp_path):
    """scalene_bpf.gpu.lines: a section of the lines that launched GPU work
    (the first ten), with their numbers and source, linked from the
    navigation; no section without GPU lines; unmatched and lost GPU
    records in the data quality note."""
    prof = synthetic(3, 0)
    prof.update({"gpu": True, "gpu_device": "GPU",
                 "scalene_bpf": {"bpf": {"samples": 10}}})
    lines = [{"file": "/s.py", "line": 2, "calls": 9, "kernels": 30,
              "kernel_s": 1.5, "copies": 2, "copy_s": 0.01,
              "copy_mb": {"htod": 32.0, "dtoh": 0.25, "dtod": 0.0,
                          "other": 0.0},
              "memsets": 0, "memset_mb": 0.0, "alloc_mb": 128.0,
              "free_mb": 0.0}]
    for i in range(1, 12):
        lines.append({"file": "/opt/k.py", "line": 40 + i, "calls": 1,
                      "kernels": 2, "kernel_s": 0.02 / i,
                      "copy_mb": {"htod": 0.0}, "alloc_mb": 0.0})
    prof["scalene_bpf"]["gpu"] = {"records_unmatched": 5,
                                  "lost_ringbuf_full": 0, "lines": lines}
    src = tmp_path / "gpu.json"
    src.write_text(json.dumps(prof))
    html = page_of(src, tmp_path)
    model = embedded_model(html)
    assert len(model["gpu_lines"]) == 10 and model["gpu_lines_total"] == 12
    probe = render_ok(html)
    assert "#gpu-lines" in probe["nav"], probe["nav"]
    gpu = probe["gpu"]
    assert gpu and gpu["title"] == "GPU work by the line that launched it"
    assert any(n.startswith("The 10 of 12 lines with the most GPU time")
               for n in probe["notes"]), probe["notes"]
    rows = [r["cells"] for r in gpu["rows"]]
    assert len(rows) == 10
    assert rows[0] == {"where": "s.py:2", "calls": "9", "kernels": "30",
                       "kernel_s": "1.50 s",
                       "copy": "32.0 htod, " + js_fixed(0.25) + " dtoh",
                       "alloc": "128.0",
                       "src": prof["files"]["/s.py"]["lines"][1]["line"]
                       .strip()}, rows[0]
    for i, r in enumerate(rows[1:], 1):
        ms = 0.02 / i * 1e3
        assert r == {"where": f"k.py:{40 + i}", "calls": "1",
                     "kernels": "2", "kernel_s": js_fixed(ms) + " ms",
                     "copy": "", "alloc": "", "src": ""}, r
    assert "records_unmatched" in probe["quality"], probe["quality"]
    assert "lost_ringbuf_full" not in probe["quality"]

    # No GPU lines: no section and no link.
    prof["scalene_bpf"]["gpu"]["lines"] = []
    src.write_text(json.dumps(prof))
    html = page_of(src, tmp_path, "none.html")
    assert "gpu_lines" not in embedded_model(html)
    probe = render_ok(html)
    assert probe["gpu"] is None and "#gpu-lines" not in probe["nav"]


def check_await_cells(cells, row):
    names = row["async_task_names"]
    assert cells["await"] == js_fixed(row["n_async_await_percent"]) + "%", cells
    more = len(names) - 3
    assert cells["tasks"] == ", ".join(names[:3]) + \
        (f" +{more} more" if more > 0 else ""), cells
    assert cells["conc"] == (js_fixed(row["n_async_concurrency_mean"]) + " / " +
                             js_fixed(row["n_async_concurrency_peak"], 0)), cells


def test_async_reference_columns(tmp_path):
    """Scalene's async profile: Await, Tasks waiting and Concurrency for
    the lines that awaited, without CPU time."""
    ref = REFERENCE / "scalene_ref_async.json"
    prof = json.loads(ref.read_text())
    probe = render_ok(page_of(ref, tmp_path))
    assert "async on" in probe["header"] and "await time" not in probe["header"]
    checked = 0
    for name, fd in prof["files"].items():
        cells = {r["n"]: r["cells"] for r in file_block(probe, name)["lines"]}
        for row in fd["lines"]:
            if row.get("n_async_await_percent", 0) >= HOT_PERCENT:
                check_await_cells(cells[str(row["lineno"])], row)
                checked += 1
            elif str(row["lineno"]) in cells and not row.get("async_task_names"):
                # Shown for its time, with no task waiting there.
                assert cells[str(row["lineno"])]["tasks"] == ""
    assert checked >= 2


def test_async_made_profile_columns(tmp_path):
    prof = async_profile()
    src = tmp_path / "async.json"
    src.write_text(json.dumps(prof))
    probe = render_ok(page_of(src, tmp_path))
    assert "await time 2.50 s" in probe["header"], probe["header"]
    assert "async.tasks_unreadable = 4" in probe["quality"]
    fd = prof["files"][ASYNC_FILE]
    cells = {r["n"]: r["cells"] for r in file_block(probe, ASYNC_FILE)["lines"]}
    # The file has no CPU time: its awaits make it shown; 0.4% is under
    # the threshold.
    assert set(cells) == {"3", "4"}
    check_await_cells(cells["3"], fd["lines"][2])
    assert cells["3"]["tasks"] == "Task-1, Task-2, Task-3 +2 more"
    check_await_cells(cells["4"], fd["lines"][3])
    funcs = file_block(probe, ASYNC_FILE)["funcs"]
    assert len(funcs) == 1
    check_await_cells(funcs[0]["cells"], fd["functions"][0])
    # The same numbers without async_profile: no await column, and the
    # file has nothing to show.
    src.write_text(json.dumps(async_profile(with_async=False)))
    probe = render_ok(page_of(src, tmp_path, name="sync.html"))
    assert ASYNC_FILE not in [f["name"] for f in probe["files"]]
    for f in probe["files"]:
        for r in f["lines"] + f["funcs"]:
            assert not {"await", "tasks", "conc"} & set(r["cells"]), r


def test_flame_graph_zoom(tmp_path):
    ref = REFERENCE / "scalene_ref_cpu.json"
    if not ref.is_file():
        pytest.skip(f"{ref} not found")
    prof = json.loads(ref.read_text())
    st = heaviest(prof["combined_stacks"])
    target = st[0][1]["display_name"]  # the second frame of the heaviest
    actions = """(() => {
      const g = [...document.querySelectorAll('#cpu-flame g.frame')]
        .find(g => g.getAttribute('data-name') === %s &&
                   g.getAttribute('data-depth') === '2');
      g.dispatchEvent(new MouseEvent('click', {bubbles: true}));
      const after = [...document.querySelectorAll('#cpu-flame g.frame')];
      const z = after.find(g => g.getAttribute('data-name') === %s &&
                                g.getAttribute('data-depth') === '2');
      const level = () => [...document.querySelectorAll('#cpu-flame g.frame')]
        .filter(g => g.getAttribute('data-depth') === '2').length;
      const out = {zoomed: +z.querySelector('rect').getAttribute('width'),
                   level: level()};
      z.dispatchEvent(new MouseEvent('click', {bubbles: true}));
      out.back = level();
      return out;
    })()""" % (json.dumps(target), json.dumps(target))
    probe = render_ok(page_of(ref, tmp_path), actions=actions)
    done = probe["actions"]
    # Zoomed in, the frame spans the graph; a click on it zooms out again.
    assert abs(done["zoomed"] - (probe["cpuWidth"] - 0.5)) < 1, done
    # The frames under the target's parent (frames are told apart by name,
    # file and line, as in Scalene's GUI).
    key = lambda f: (f["display_name"], f["filename_or_module"],  # noqa
                     f["line"])
    siblings = {key(s[1]) for s, _ in prof["combined_stacks"]
                if len(s) > 1 and key(s[0]) == key(st[0][0])}
    assert len(siblings) > 1, siblings
    # Zoomed in: only the target at its depth; out again: its siblings.
    assert done["level"] == 1 and done["back"] == len(siblings), (
        done, siblings)


def test_threshold_and_all_lines(tmp_path):
    """--cpu-percent-threshold and --all-lines choose the page's lines as
    they choose the terminal's."""
    src = tmp_path / "s.json"
    doc = synthetic(10, 20)  # 10 lines of 9 %, 20 of 0.0001 %
    doc["files"]["/s.py"]["lines"][0]["n_cpu_percent_python"] = 30.0
    src.write_text(json.dumps(doc))
    counts = {}
    for opts in ((), ("--cpu-percent-threshold", "20"), ("--all-lines",)):
        out = tmp_path / ("p%d.html" % len(counts))
        p = subprocess.run([str(BIN), "view", "--html", str(out), *opts, str(src)],
                           capture_output=True, text=True, timeout=60,
                           env=clean_env(), stdin=subprocess.DEVNULL)
        assert p.returncode == 0, p.stderr
        counts[opts] = len(embedded_model(out)["files"][0]["lines"])
    assert counts[()] == 10, counts
    assert counts[("--cpu-percent-threshold", "20")] == 1, counts
    assert counts[("--all-lines",)] == 30, counts


def _attach_memory_doc():
    """One of our memory profiles made to look like an attach (--pid
    --memory) profile: memory by uprobes (no footprint), and the probes'
    own CPU time kept apart."""
    doc = json.loads((REPO / "tests" / "fuzz" / "corpus" / "view" /
                      "ours-demo.json").read_text())
    doc["max_footprint_mb"] = 0.0
    doc["growth_rate"] = 0.0
    doc["samples"] = []
    doc["scalene_bpf"]["memory"] = {"mode": "uprobes", "hits": 1000}
    doc["scalene_bpf"]["probe_overhead_s"] = 1.25
    return doc


def test_attach_memory_not_measured(tmp_path):
    """An attach profile's footprint and growth are "not measured", not
    0 MB, and the footer names the probes' overhead; a profile of `run`
    keeps its footprint and has no such line."""
    path = tmp_path / "attach.json"
    path.write_text(json.dumps(_attach_memory_doc()))
    html = page_of(path, tmp_path)
    model = embedded_model(html)
    assert model["footprint_measured"] is False, model.get("footprint_measured")
    assert model["probe_overhead_s"] == 1.25
    probe = render_ok(html)
    assert "peak footprint not measured" in probe["header"], probe["header"]
    assert "growth not measured" in probe["header"], probe["header"]
    assert "0.0 MB" not in probe["header"], probe["header"]
    assert any("Profiler overhead" in n and "not counted" in n
               for n in probe["notes"]), probe["notes"]
    ours = REPO / "tests" / "fuzz" / "corpus" / "view" / "ours-demo.json"
    model = embedded_model(page_of(ours, tmp_path, "run.html"))
    assert model["footprint_measured"] is True
    assert "probe_overhead_s" not in model


def test_time_on_no_line_named(tmp_path):
    """The page names the sampled time that is on no line, as the terminal
    does (one text, made once), and says nothing when it is small."""
    doc = json.loads((REPO / "tests" / "fuzz" / "corpus" / "view" /
                      "ours-demo.json").read_text())
    doc["scalene_bpf"]["total_sampled_s"] = 4.0
    doc["scalene_bpf"]["unattributed"] = {
        "threads_without_python_s": 1.25, "unreadable_stacks_s": 0.0,
        "outside_profiled_files_s": 0.0}
    path = tmp_path / "off.json"
    path.write_text(json.dumps(doc))
    html = page_of(path, tmp_path)
    assert embedded_model(html)["off_lines_note"].startswith(
        "time on no line: 1.25 s of the 4.00 s sampled (31%)")
    probe = render_ok(html)
    assert any(n.startswith("Time on no line: 1.25 s") and "no Python frame" in n
               for n in probe["notes"]), probe["notes"]
    doc["scalene_bpf"]["unattributed"]["threads_without_python_s"] = 0.01
    path.write_text(json.dumps(doc))
    assert "off_lines_note" not in embedded_model(page_of(path, tmp_path, "small.html"))


def test_numbers_rounded_once(tmp_path):
    """The page carries the profile's numbers as they are and rounds them
    once: an elapsed time of 1.5050001 s shows as 1.51 s (rounded to six
    digits first, it became 1.505, shown as 1.50)."""
    ours = REPO / "tests" / "fuzz" / "corpus" / "view" / "ours-demo.json"
    doc = json.loads(ours.read_text())
    doc["elapsed_time_sec"] = 1.5050001
    path = tmp_path / "tie.json"
    path.write_text(json.dumps(doc))
    html = page_of(path, tmp_path)
    assert embedded_model(html)["elapsed"] == 1.5050001
    probe = render_ok(html)
    assert "elapsed 1.51 s" in probe["header"], probe["header"]


def test_timeline_tracks(tmp_path):
    """The timeline draws scalene_bpf.tracks: a GC row and an I/O row, whose
    bars are the tracks' intervals, the collect line's in the tooltip, in
    their colours on the screen (programs/gc_io.py: test_tracks.py judges
    the numbers)."""
    res = profile_run(default_interpreter(), program("gc_io.py"), ["0.6"],
                      tmp=tmp_path, opts=["--cpu-only"])
    tracks = res.profile["scalene_bpf"]["tracks"]["intervals"]
    want = {k: sum(1 for i in tracks if i[0] == k) for k in ("gc", "io")}
    assert want["gc"] and want["io"], tracks
    gc_line = markers(program("gc_io.py"))["collect"]
    html = page_of(res.path, tmp_path)
    actions = r"""(() => {
      document.getElementById('timeline').scrollIntoView();
      const gc = [...document.querySelectorAll('#timeline rect.track-gc')];
      const io = [...document.querySelectorAll('#timeline rect.track-io')];
      const longest = gc.sort((a, b) => b.getAttribute('width') - a.getAttribute('width'))[0];
      const r = longest.getBoundingClientRect();
      longest.dispatchEvent(new MouseEvent('mousemove', {clientX: r.x + 1, clientY: r.y + 1, bubbles: true}));
      const tip = document.getElementById('tip');
      return {gc: gc.length, io: io.length, tip: tip.hidden ? '' : tip.textContent};
    })()"""
    shot = tmp_path / "timeline.png"
    probe = render_ok(html, actions=actions, screenshot=shot)
    got = probe["actions"]
    assert got["gc"] == want["gc"] and got["io"] == want["io"], (got, want)
    assert got["tip"].startswith("GC") and f"gc_io.py:{gc_line}" in got["tip"], got["tip"]
    _, _, colours, _ = png_pixels(shot)
    assert bytes((0xd9, 0x53, 0x4f)) in colours, "no GC bar on the screen"
    assert bytes((0x2a, 0x9d, 0x8f)) in colours, "no I/O bar on the screen"
