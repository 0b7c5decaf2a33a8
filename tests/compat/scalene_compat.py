#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Checks that a JSON profile is Scalene-compatible.

A profile is compatible when all four of these hold (Scalene's JSON format as
its own reader, scalene_json.py, and its viewers take it):

  1. validate_strict(path)        Scalene's own pydantic model accepts it in
                                  strict mode;
  2. check_gui_invariants(dict)   the assumptions the viewers make without
                                  checking hold (load_profile(path) adds the
                                  text-level ones: UTF-8, plain JSON);
  3. render_gui(path)             Scalene's browser GUI renders it in headless
                                  Chromium with no JavaScript error;
  4. view_cli(path)               `scalene view --cli` exits 0.

Every check raises AssertionError with a readable message on failure.  The
installed Scalene is the one importable by the interpreter running this file
(tests/requirements.txt pins it); the viewers run under that same interpreter.

Command line:  python scalene_compat.py [--no-gui] FILE...
prints one line per file and exits 1 if any file fails.
"""

import contextlib
import json
import math
import os
import pathlib
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

__all__ = [
    "CompatError",
    "load_profile",
    "validate_strict",
    "check_gui_invariants",
    "view_cli",
    "render_gui",
    "find_chromium",
    "scalene_version",
    "check_all",
]

# Seconds.  Generous: CI machines are small.
VIEW_TIMEOUT = 120
CHROMIUM_START_TIMEOUT = 30
RENDER_TIMEOUT = 60

# Integer-valued fields: JSON must carry them as integers (no ".0").
_LINE_INT_FIELDS = ("lineno", "n_mallocs")
_REGION_PAIRS = (
    ("start_region_line", "end_region_line", 1),
    ("start_outermost_loop", "end_outermost_loop", 1),
    ("start_function_line", "end_function_line", 0),
)
# Numeric per-line / per-function fields (FunctionDetail), all required.
_LINE_NUM_FIELDS = (
    "n_avg_mb", "n_copy_mb_s", "n_core_utilization", "n_cpu_percent_c",
    "n_cpu_percent_python", "n_gpu_avg_memory_mb", "n_gpu_peak_memory_mb",
    "n_gpu_percent", "n_growth_mb", "n_peak_mb", "n_malloc_mb",
    "n_python_fraction", "n_sys_percent", "n_usage_fraction",
)
# Numeric per-line fields that have defaults (may be absent).
_LINE_OPT_NUM_FIELDS = (
    "n_async_await_percent", "n_async_concurrency_mean",
    "n_async_concurrency_peak",
    # AWS Neuron extras the GUI understands.
    "nrt_time_ms", "nrt_percent", "nc_time_ms",
    "cpu_samples_nc_overlap_percent",
)
_TOP_NUM_FIELDS = (
    "elapsed_time_sec", "start_time_absolute", "start_time_perf",
    "growth_rate", "max_footprint_mb", "max_footprint_python_fraction",
)


class CompatError(AssertionError):
    """A profile is not Scalene-compatible."""


def _fail(msg):
    raise CompatError(msg)


# --------------------------------------------------------------------------
# Text level and check 1: the schema.
# --------------------------------------------------------------------------

def _read_text(path):
    with open(path, "rb") as f:
        data = f.read()
    if data.startswith(b"\xef\xbb\xbf"):
        _fail(f"{path}: starts with a UTF-8 byte-order mark")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        _fail(f"{path}: not UTF-8: {e}")


def _reject_constant(name):
    raise ValueError(f"non-JSON number {name}")


def load_profile(path):
    """Read a profile with the text-level checks and return it as a dict.

    Fails when the file is not UTF-8, is not plain JSON (NaN, Infinity and
    -Infinity are JavaScript, not JSON), is not an object, or holds text that
    would close the <script> element the GUI pastes it into.
    """
    text = _read_text(path)
    try:
        profile = json.loads(text, parse_constant=_reject_constant)
    except ValueError as e:
        _fail(f"{path}: not valid JSON: {e}")
    if not isinstance(profile, dict):
        _fail(f"{path}: top level is {type(profile).__name__}, not an object")
    if "</script" in text.lower():
        _fail(f"{path}: contains '</script', which ends the GUI's embedded "
              "profile early (Scalene writes '<' in source text as the "
              "literal text \\u003c)")
    return profile


def _schema_class():
    try:
        from scalene.scalene_json import ScaleneJSONSchema
    except ImportError as e:  # pragma: no cover - depends on the venv
        _fail(f"cannot import Scalene's ScaleneJSONSchema with "
              f"{sys.executable}: {e} (install tests/requirements.txt)")
    return ScaleneJSONSchema


def scalene_version():
    """Version of the Scalene distribution this interpreter imports."""
    try:
        from importlib.metadata import version
        return version("scalene")
    except Exception:  # pragma: no cover
        return "unknown"


def validate_strict(path):
    """Check 1: ScaleneJSONSchema.model_validate_json(text, strict=True)."""
    text = _read_text(path)
    schema = _schema_class()
    try:
        from pydantic import ValidationError
    except ImportError as e:  # pragma: no cover
        _fail(f"pydantic is missing: {e}")
    try:
        schema.model_validate_json(text, strict=True)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(x) for x in first.get("loc", ()))
        _fail(f"{path}: Scalene {scalene_version()} strict schema validation "
              f"failed, {e.error_count()} error(s), first: {loc}: "
              f"{first.get('msg')} (input {repr(first.get('input'))[:60]})"
              f"\n{e}")


# --------------------------------------------------------------------------
# Check 2: what the viewers assume without checking.
# --------------------------------------------------------------------------

def _is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


class _Missing:
    def __repr__(self):
        return ""


_MISSING = _Missing()


def _tname(v):
    if v is _MISSING:
        return "missing"
    return "null" if v is None else type(v).__name__


def _walk_nonfinite(obj, where, errors):
    if isinstance(obj, float):
        if not math.isfinite(obj):
            errors.append(f"{where}: non-finite number {obj!r}")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _walk_nonfinite(v, f"{where}.{k}", errors)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            _walk_nonfinite(v, f"{where}[{i}]", errors)


def _check_row(row, where, nlines, is_line, errors):
    """One entry of `lines` (is_line) or `functions`."""
    if not isinstance(row, dict):
        errors.append(f"{where}: is {_tname(row)}, not an object")
        return
    for k in _LINE_INT_FIELDS:
        v = row.get(k, _MISSING)
        if not _is_int(v):
            errors.append(f"{where}.{k}: must be a JSON integer, is "
                          f"{_tname(v)} {v!r}")
    for k in _LINE_NUM_FIELDS:
        v = row.get(k, _MISSING)
        if not _is_num(v):
            errors.append(f"{where}.{k}: must be a JSON number, is "
                          f"{_tname(v)} {v!r}")
    for k in _LINE_OPT_NUM_FIELDS:
        if k in row and not _is_num(row[k]):
            errors.append(f"{where}.{k}: must be a JSON number, is "
                          f"{_tname(row[k])} {row[k]!r}")
    if not isinstance(row.get("line", _MISSING), str):
        errors.append(f"{where}.line: must be a string, is "
                      f"{_tname(row.get('line', _MISSING))}")
    ms = row.get("memory_samples", _MISSING)
    if not isinstance(ms, list):
        errors.append(f"{where}.memory_samples: must be present and a list "
                      f"(the GUI reads .length), is {_tname(ms)}")
    else:
        for j, s in enumerate(ms):
            if not isinstance(s, list) or not all(_is_num(x) for x in s):
                errors.append(f"{where}.memory_samples[{j}]: must be a list "
                              f"of numbers, is {s!r}")
                break
    csl = row.get("cpu_samples_list")
    if not isinstance(csl, list) or not all(_is_num(x) for x in csl):
        errors.append(f"{where}.cpu_samples_list: must be a list of numbers")
    if "async_task_names" in row and not (
            isinstance(row["async_task_names"], list)
            and all(isinstance(x, str) for x in row["async_task_names"])):
        errors.append(f"{where}.async_task_names: must be a list of strings")
    if "is_coroutine" in row and not isinstance(row["is_coroutine"], bool):
        errors.append(f"{where}.is_coroutine: must be true or false")
    parts = [row.get(k) for k in ("n_cpu_percent_python", "n_cpu_percent_c",
                                  "n_sys_percent")]
    if all(_is_num(p) and math.isfinite(p) for p in parts):
        total = sum(parts)
        if math.floor(total) > 100:
            errors.append(f"{where}: n_cpu_percent_python + n_cpu_percent_c "
                          f"+ n_sys_percent = {total} (floor > 100)")
    lineno = row.get("lineno")
    if _is_int(lineno) and not 1 <= lineno <= max(nlines, 1):
        errors.append(f"{where}.lineno: {lineno} outside 1..{nlines}")
    if not is_line:
        return
    for start_k, end_k, lo in _REGION_PAIRS:
        s, e = row.get(start_k, _MISSING), row.get(end_k, _MISSING)
        if lo == 0 and start_k not in row and end_k not in row:
            continue  # defaults (0, 0)
        bad = False
        for k, v in ((start_k, s), (end_k, e)):
            if not _is_int(v):
                errors.append(f"{where}.{k}: must be a JSON integer, is "
                              f"{_tname(v)} {v!r}")
                bad = True
        if bad:
            continue
        if lo == 0 and s == 0 and e == 0:
            continue  # module level
        if not (1 <= s <= nlines and 1 <= e <= nlines):
            errors.append(f"{where}: {start_k}..{end_k} = {s}..{e} is outside "
                          f"1..{nlines} (len(lines)); the GUI indexes "
                          f"lines[] with it")
        elif s > e:
            errors.append(f"{where}: {start_k} {s} > {end_k} {e}")


def _check_stacks(profile, errors):
    frame_int = ("line", "ip", "offset")

    def frames_ok(frames, where):
        if not isinstance(frames, list):
            errors.append(f"{where}: frames must be a list")
            return
        for i, fr in enumerate(frames):
            if not isinstance(fr, dict):
                errors.append(f"{where}[{i}]: frame must be an object")
                return
            for k in frame_int:
                v = fr.get(k)
                if v is not None and not _is_int(v):
                    errors.append(f"{where}[{i}].{k}: must be an integer or "
                                  f"null, is {_tname(v)} {v!r}")
                    return

    for key, want_int in (("combined_stacks", True), ("memory_stacks", False)):
        val = profile.get(key, [])
        if not isinstance(val, list):
            errors.append(f"{key}: must be a list")
            continue
        for i, ent in enumerate(val):
            if not isinstance(ent, list) or len(ent) != 2:
                errors.append(f"{key}[{i}]: must be [frames, value]")
                continue
            frames_ok(ent[0], f"{key}[{i}][0]")
            ok = _is_int(ent[1]) if want_int else _is_num(ent[1])
            if not ok:
                errors.append(f"{key}[{i}][1]: must be "
                              f"{'an integer' if want_int else 'a number'}, "
                              f"is {_tname(ent[1])} {ent[1]!r}")
    tl = profile.get("combined_stacks_timeline", [])
    if not isinstance(tl, list):
        errors.append("combined_stacks_timeline: must be a list")
    else:
        for i, ev in enumerate(tl):
            if not isinstance(ev, dict):
                errors.append(f"combined_stacks_timeline[{i}]: not an object")
                continue
            for k in ("stack_index", "count"):
                if not _is_int(ev.get(k)):
                    errors.append(f"combined_stacks_timeline[{i}].{k}: must "
                                  f"be an integer, is {ev.get(k)!r}")
            tid = ev.get("thread_id")
            if tid is not None and not _is_int(tid):
                errors.append(f"combined_stacks_timeline[{i}].thread_id: must "
                              "be an integer or null")
            if not _is_num(ev.get("t_sec")):
                errors.append(f"combined_stacks_timeline[{i}].t_sec: must be "
                              "a number")


def check_gui_invariants(profile, name=None):
    """Check 2: the viewers' unchecked assumptions (format notes, section 4).

    `profile` is the parsed JSON (a dict); use load_profile(path) to get it
    with the text-level checks (UTF-8, no NaN/Infinity literals).  `name`
    (e.g. the file's path) prefixes the message.  Collects every violation
    and raises one AssertionError listing them (the first 25).
    """
    errors = []
    if not isinstance(profile, dict):
        _fail(f"profile is {_tname(profile)}, not an object")
    _walk_nonfinite(profile, "$", errors)

    for k in _TOP_NUM_FIELDS:
        v = profile.get(k, _MISSING)
        if not _is_num(v):
            errors.append(f"{k}: must be a JSON number, is {_tname(v)} {v!r}")
    if "native_allocations_mb" in profile and not _is_num(
            profile["native_allocations_mb"]):
        errors.append("native_allocations_mb: must be a JSON number")
    if not _is_int(profile.get("alloc_samples")):
        errors.append(f"alloc_samples: must be a JSON integer, is "
                      f"{profile.get('alloc_samples')!r}")
    for k in ("max_footprint_lineno", "main_thread_id"):
        v = profile.get(k)
        if v is not None and not _is_int(v):
            errors.append(f"{k}: must be a JSON integer or null, is "
                          f"{_tname(v)} {v!r}")
    for k in ("gpu", "memory", "async_profile"):
        if k in profile and not isinstance(profile[k], bool):
            errors.append(f"{k}: must be true or false, is {profile[k]!r}")
    samples = profile.get("samples")
    if not isinstance(samples, list) or not all(
            isinstance(s, list) and all(_is_num(x) for x in s)
            for s in samples):
        errors.append("samples: must be a list of lists of numbers")
    _check_stacks(profile, errors)

    files = profile.get("files", _MISSING)
    if not isinstance(files, dict):
        errors.append(f"files: must be an object, is {_tname(files)}")
        files = {}
    for fname, fd in files.items():
        fw = f"files[{fname!r}]"
        if not isinstance(fd, dict):
            errors.append(f"{fw}: is {_tname(fd)}, not an object")
            continue
        if not _is_num(fd.get("percent_cpu_time", _MISSING)):
            errors.append(f"{fw}.percent_cpu_time: must be a JSON number, is "
                          f"{_tname(fd.get('percent_cpu_time', _MISSING))}")
        leaks = fd.get("leaks", {})
        if not isinstance(leaks, dict):
            errors.append(f"{fw}.leaks: must be an object")
        else:
            for lk, lv in leaks.items():
                if not isinstance(lv, dict) or not all(
                        _is_num(lv.get(x))
                        for x in ("likelihood", "velocity_mb_s")):
                    errors.append(f"{fw}.leaks[{lk!r}]: needs numeric "
                                  "likelihood and velocity_mb_s")
        lines = fd.get("lines", _MISSING)
        if not isinstance(lines, list):
            errors.append(f"{fw}.lines: must be a list, is {_tname(lines)}")
            lines = []
        nlines = len(lines)
        holes = [i for i, row in enumerate(lines)
                 if isinstance(row, dict) and row.get("lineno") != i + 1]
        if holes:
            i = holes[0]
            errors.append(f"{fw}.lines: not dense and in order (lines[k] must "
                          f"be line k+1): lines[{i}].lineno is "
                          f"{lines[i].get('lineno', 'missing')!r}, not "
                          f"{i + 1}; "
                          f"{len(holes)} of {nlines} rows misplaced")
        for i, row in enumerate(lines):
            _check_row(row, f"{fw}.lines[{i}]", nlines, True, errors)
        funcs = fd.get("functions", _MISSING)
        if not isinstance(funcs, list):
            errors.append(f"{fw}.functions: must be present and a list (the "
                          f"GUI reads .length), is {_tname(funcs)}")
            funcs = []
        for i, row in enumerate(funcs):
            _check_row(row, f"{fw}.functions[{i}]", nlines, False, errors)

    if errors:
        shown = errors[:25]
        more = len(errors) - len(shown)
        _fail((f"{name}: " if name else "")
              + f"{len(errors)} GUI invariant violation(s), first: "
              + errors[0] + "\n  " + "\n  ".join(shown)
              + (f"\n  ... and {more} more" if more > 0 else ""))


# --------------------------------------------------------------------------
# Checks 3 and 4: Scalene's own viewers.
# --------------------------------------------------------------------------

def _scalene_cmd(*args):
    # `python -m scalene` is the same entry point as the `scalene` script.
    return [sys.executable, "-m", "scalene", *args]


def _viewer_env():
    env = dict(os.environ)
    # The CLI viewer forces Rich's terminal mode and takes its width from
    # COLUMNS; TERM=dumb would shrink it to 80 columns and crop the source.
    env.update({"NO_COLOR": "1", "TERM": "xterm", "COLUMNS": "200",
                "PYTHONIOENCODING": "utf-8"})
    return env


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def view_cli(path, timeout=VIEW_TIMEOUT):
    """Check 4: `scalene view --cli PATH` must exit 0.

    Returns its stdout, 200 columns wide, with terminal escapes removed.
    """
    path = os.path.abspath(path)
    with tempfile.TemporaryDirectory(prefix="scompat-cli-") as tmp:
        try:
            p = subprocess.run(_scalene_cmd("view", "--cli", path), cwd=tmp,
                               env=_viewer_env(), stdin=subprocess.DEVNULL,
                               capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            _fail(f"{path}: scalene view --cli did not finish in {timeout} s")
    out = _ANSI.sub("", p.stdout.decode("utf-8", "replace"))
    err = _ANSI.sub("", p.stderr.decode("utf-8", "replace"))
    if p.returncode != 0:
        said = (err.strip() or out[-2000:].strip() or "(no output)")
        _fail(f"{path}: scalene view --cli exited {p.returncode}: "
              f"{said.splitlines()[-1]}\n{said}")
    return out


def find_chromium():
    """Path of a Chromium binary, or None.  $SCALENE_COMPAT_CHROMIUM wins."""
    env = os.environ.get("SCALENE_COMPAT_CHROMIUM")
    if env:
        return env
    # Debian's real binary; /usr/bin/chromium is a shell wrapper that adds
    # extension and GPU flags we do not want.
    for cand in ("/usr/lib/chromium/chromium",):
        if os.access(cand, os.X_OK):
            return cand
    for name in ("chromium", "chromium-browser", "google-chrome",
                 "google-chrome-stable"):
        p = shutil.which(name)
        if p:
            return p
    return None


def make_standalone_html(path, outdir, timeout=VIEW_TIMEOUT):
    """Run `scalene view --standalone PATH` in outdir; return the HTML path."""
    path = os.path.abspath(path)
    try:
        p = subprocess.run(_scalene_cmd("view", "--standalone", path),
                           cwd=outdir, env=_viewer_env(),
                           stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        _fail(f"{path}: scalene view --standalone did not finish in "
              f"{timeout} s")
    html = os.path.join(outdir, "scalene-profile.html")
    if p.returncode != 0 or not os.path.isfile(html):
        _fail(f"{path}: scalene view --standalone exited {p.returncode} "
              f"without writing scalene-profile.html:\n"
              f"{p.stderr.decode('utf-8', 'replace').strip()}")
    return html


class _Cdp:
    """Minimal Chrome DevTools protocol client over --remote-debugging-pipe.

    Chromium reads NUL-terminated JSON commands from fd 3 and writes
    NUL-terminated JSON replies and events to fd 4.
    """

    def __init__(self, wfd, rfd):
        self.wfd, self.rfd = wfd, rfd
        self.buf = b""
        self.next_id = 0
        self.events = []

    def send(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        while data:
            n = os.write(self.wfd, data)
            data = data[n:]
        return self.next_id

    def _read_one(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([self.rfd], [], [], min(left, 0.5))
            if not r:
                continue
            chunk = os.read(self.rfd, 1 << 16)
            if not chunk:
                raise EOFError("Chromium closed the DevTools pipe")
            self.buf += chunk
        raw, self.buf = self.buf.split(b"\0", 1)
        return json.loads(raw)

    def pump(self, deadline):
        """Read one message (or none by deadline); events go to .events."""
        msg = self._read_one(deadline)
        if msg is not None and "id" not in msg:
            self.events.append(msg)
        return msg

    def call(self, method, params=None, session=None, timeout=15.0):
        mid = self.send(method, params, session)
        deadline = time.monotonic() + timeout
        while True:
            msg = self.pump(deadline)
            if msg is None:
                raise TimeoutError(f"no reply to {method} in {timeout} s")
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})


def _is_expected_noise(text):
    # The GUI probes a local Ollama server at start; nothing listens here.
    return ":11434" in text


def _describe_exception(params):
    d = params.get("exceptionDetails", {})
    exc = d.get("exception") or {}
    desc = exc.get("description") or exc.get("value") or d.get("text", "")
    loc = f" (line {d.get('lineNumber')}, col {d.get('columnNumber')})"
    return f"page error: {str(desc)[:800]}{loc}"


def _console_text(params):
    parts = []
    for a in params.get("args", []):
        if "value" in a:
            parts.append(str(a["value"]))
        else:
            parts.append(str(a.get("description", a.get("type", ""))))
    return " ".join(parts)


def _chromium_argv(binary, user_dir, window=(1400, 1000)):
    return [
        binary, "--headless", "--no-sandbox", "--disable-gpu",
        "--disable-background-networking", "--no-first-run",
        "--no-default-browser-check", "--disable-dev-shm-usage",
        "--disable-extensions", "--disable-component-update",
        "--disable-sync", "--mute-audio", "--hide-scrollbars",
        f"--window-size={window[0]},{window[1]}", f"--user-data-dir={user_dir}",
        "--remote-debugging-pipe", "about:blank",
    ]


@contextlib.contextmanager
def chromium(binary, tmp, window=(1400, 1000)):
    """Headless Chromium, its profile and log (chromium.log) in the folder
    tmp, driven over its DevTools pipe (it reads commands on fd 3 and writes
    on fd 4): yields the _Cdp to talk to it; afterwards its whole process
    group is killed."""
    user_dir = os.path.join(tmp, "chromium-profile")
    os.mkdir(user_dir)
    cmd_r, cmd_w = os.pipe()   # we write commands, Chromium reads fd 3
    ev_r, ev_w = os.pipe()     # Chromium writes fd 4, we read
    fds = [cmd_r, cmd_w, ev_r, ev_w]
    proc = None

    def child_fds():
        # Park both ends above 4 first so that dup2 cannot clobber one
        # with the other, then put them on 3 and 4 (inheritable).
        os.dup2(cmd_r, 100)
        os.dup2(ev_w, 101)
        os.dup2(100, 3)
        os.dup2(101, 4)
        os.close(100)
        os.close(101)

    try:
        with open(os.path.join(tmp, "chromium.log"), "wb") as log:
            proc = subprocess.Popen(
                _chromium_argv(binary, user_dir, window), stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT,
                preexec_fn=child_fds, start_new_session=True,
                close_fds=False, env=dict(os.environ, HOME=tmp, TMPDIR=tmp))
        os.close(cmd_r)
        os.close(ev_w)
        fds = [cmd_w, ev_r]
        yield _Cdp(cmd_w, ev_r)
    finally:
        if proc is not None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover
                pass
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass


def render_gui(path, timeout=RENDER_TIMEOUT, screenshot=None, settle=1.0):
    """Check 3: Scalene's browser GUI renders the profile without an error.

    Makes the self-contained page with `scalene view --standalone`, loads it
    in headless Chromium driven over the DevTools protocol, and fails on any
    uncaught exception, console.error or error log entry (except the failed
    probe of localhost:11434), on a JavaScript dialog, on a renderer crash,
    or when no `table.profile` element rendered.  `screenshot`, if given,
    is a path where a PNG of the page is written.  After the table appears
    the page is watched for `settle` more seconds, for late errors.

    Returns a dict: seconds, tables, rows, title, ignored (noise seen),
    console (non-error console lines, at most 20).

    A browser that never answers its first command (it hung while
    starting, as a loaded machine sometimes sees) is replaced by a new one,
    once; the profile has not been looked at yet.
    """
    try:
        return _render_gui(path, timeout, screenshot, settle)
    except _NoStart:
        return _render_gui(path, timeout, screenshot, settle, last=True)


class _NoStart(Exception):
    """Chromium did not answer its first command."""


def _render_gui(path, timeout, screenshot, settle, last=False):
    t0 = time.monotonic()
    binary = find_chromium()
    if not binary:
        _fail("Chromium not found: install Debian's `chromium` package "
              "(tools/ci-deps) or set SCALENE_COMPAT_CHROMIUM")
    abspath = os.path.abspath(path)
    tmp = tempfile.mkdtemp(prefix="scompat-gui-")
    try:
        html = make_standalone_html(abspath, tmp)
        with chromium(binary, tmp) as cdp:
            return _drive(cdp, html, abspath, timeout, t0, screenshot, settle)
    except AssertionError:
        raise
    except Exception as e:  # EOFError, TimeoutError, OSError, bad reply...
        if isinstance(e, _NoStart) and not last:
            raise
        chlog = ""
        try:
            with open(os.path.join(tmp, "chromium.log"), "rb") as f:
                chlog = f.read()[-1500:].decode("utf-8", "replace")
        except OSError:
            pass
        _fail(f"{path}: could not drive Chromium: {type(e).__name__}: {e}"
              + (f"\nChromium said:\n{chlog}" if chlog else ""))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _drive(cdp, html, path, timeout, t0, screenshot, settle):
    deadline = t0 + timeout
    try:
        target = cdp.call("Target.createTarget", {"url": "about:blank"},
                          timeout=CHROMIUM_START_TIMEOUT)["targetId"]
    except TimeoutError as e:
        raise _NoStart(str(e)) from e
    sess = cdp.call("Target.attachToTarget",
                    {"targetId": target, "flatten": True})["sessionId"]
    for m in ("Runtime.enable", "Log.enable", "Page.enable",
              "Inspector.enable"):
        cdp.call(m, session=sess)
    cdp.events.clear()
    nav = cdp.call("Page.navigate", {"url": pathlib.Path(html).as_uri()},
                   session=sess)
    if nav.get("errorText"):
        _fail(f"{path}: Chromium could not open the page: {nav['errorText']}")

    errors, ignored, console = [], [], []
    loaded = None
    found_at = None

    def drain():
        nonlocal loaded
        while cdp.events:
            ev = cdp.events.pop(0)
            if ev.get("sessionId") not in (None, sess):
                continue
            m, p = ev.get("method"), ev.get("params", {})
            if m == "Runtime.exceptionThrown":
                text = _describe_exception(p)
                (ignored if _is_expected_noise(text) else errors).append(text)
            elif m == "Runtime.consoleAPICalled":
                text = _console_text(p)
                if p.get("type") in ("error", "assert"):
                    (ignored if _is_expected_noise(text)
                     else errors).append(f"console.{p['type']}: {text[:800]}")
                elif len(console) < 20:
                    console.append(f"console.{p.get('type')}: {text[:200]}")
            elif m == "Log.entryAdded":
                e = p.get("entry", {})
                text = f"{e.get('source')}: {e.get('text')} {e.get('url', '')}"
                if e.get("level") == "error":
                    (ignored if _is_expected_noise(text)
                     else errors).append(f"log error: {text[:800]}")
            elif m == "Page.javascriptDialogOpening":
                errors.append(f"JavaScript {p.get('type')} dialog: "
                              f"{p.get('message', '')[:400]}")
                cdp.send("Page.handleJavaScriptDialog", {"accept": True},
                         session=sess)
            elif m in ("Inspector.targetCrashed", "Target.targetCrashed"):
                errors.append("renderer crashed")
            elif m == "Page.loadEventFired" and loaded is None:
                loaded = time.monotonic()

    def evaluate(expr):
        r = cdp.call("Runtime.evaluate",
                     {"expression": expr, "returnByValue": True},
                     session=sess)
        return r.get("result", {}).get("value")

    # Wait for the load event, then for the table; keep listening a little
    # after it appears so that errors thrown by later rendering steps count.
    next_poll = 0.0
    while time.monotonic() < deadline:
        cdp.pump(min(deadline, time.monotonic() + 0.1))
        drain()
        now = time.monotonic()
        if loaded is None or now < next_poll:
            continue
        next_poll = now + 0.2
        if found_at is None and evaluate(
                "document.querySelectorAll('table.profile').length"):
            found_at = now
        if found_at is not None and now - found_at >= settle:
            break
        if found_at is None and errors and now - loaded >= 3.0:
            break  # it crashed and is not going to render
    else:
        if loaded is None:
            errors.append(f"page did not finish loading in {timeout} s")
    drain()
    info = evaluate("""(() => ({
        tables: document.querySelectorAll('table.profile').length,
        rows: document.querySelectorAll('table.profile tbody tr').length,
        title: document.title}))()""") or {}
    if screenshot:
        import base64
        shot = cdp.call("Page.captureScreenshot", {"format": "png"},
                        session=sess)
        with open(screenshot, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
    try:
        cdp.send("Browser.close")
    except OSError:
        pass
    details = {
        "seconds": round(time.monotonic() - t0, 3),
        "tables": info.get("tables", 0),
        "rows": info.get("rows", 0),
        "title": info.get("title", ""),
        "ignored": ignored,
        "console": console,
    }
    problems = list(errors)
    if not details["tables"]:
        problems.append("no table.profile element rendered"
                        + ("" if loaded else " (page never loaded)"))
    if problems:
        _fail(f"{path}: Scalene GUI failed to render it: "
              + problems[0].splitlines()[0] + "\n  "
              + "\n  ".join(problems[:20]))
    return details


# --------------------------------------------------------------------------
# All four, and the command line.
# --------------------------------------------------------------------------

CHECKS = ("strict", "invariants", "cli", "gui")


def check_all(path, gui=True):
    """Run every check on one file, even after one fails.

    Returns a dict of details; raises CompatError naming every failed check
    ("strict", "invariants", "cli", "gui") with its message.
    """
    t = time.monotonic()
    out = {"failed": {}}

    def run(name, fn):
        try:
            return fn()
        except AssertionError as e:
            out["failed"][name] = str(e)
            return None

    profile = run("invariants", lambda: load_profile(path))
    run("strict", lambda: validate_strict(path))
    if profile is not None:
        run("invariants", lambda: check_gui_invariants(profile, name=path))
        out["files"] = len(profile.get("files") or {})
    out["cli"] = run("cli", lambda: view_cli(path))
    if gui:
        out["gui"] = run("gui", lambda: render_gui(path))
    out["seconds"] = round(time.monotonic() - t, 3)
    if out["failed"]:
        err = CompatError(f"{path}: not Scalene-compatible, failed: "
                          + ", ".join(out["failed"]) + "\n"
                          + "\n".join(f"[{k}] {v}"
                                      for k, v in out["failed"].items()))
        err.details = out
        raise err
    return out


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(
        description="Check JSON profiles for Scalene compatibility "
                    f"(Scalene {scalene_version()}, {sys.executable}). "
                    "Prints one line per file on stdout, the failures' "
                    "details on stderr; exits 1 if any file fails.")
    ap.add_argument("--no-gui", action="store_true",
                    help="skip the headless-Chromium rendering check")
    ap.add_argument("files", nargs="+", metavar="FILE")
    args = ap.parse_args(argv)
    failed = 0
    for f in args.files:
        try:
            d = check_all(f, gui=not args.no_gui)
        except CompatError as e:
            failed += 1
            fails = e.details["failed"]
            first = {k: v.strip().splitlines()[0] for k, v in fails.items()}
            print(f"FAIL {f}: " + "; ".join(
                f"{k}: {v.replace(f + ': ', '', 1)[:160]}"
                for k, v in first.items()), flush=True)
            for k, v in fails.items():
                body = v.replace("\n", "\n    ")
                print(f"  [{k}] {body}", file=sys.stderr, flush=True)
            continue
        g = d.get("gui")
        gtxt = (f", gui: {g['tables']} table(s), {g['rows']} rows "
                f"in {g['seconds']:.1f}s" if g else ", gui skipped")
        print(f"ok   {f}: {d.get('files', 0)} source file(s), strict, "
              f"invariants, cli{gtxt}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
