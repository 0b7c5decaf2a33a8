# SPDX-License-Identifier: BSD-2-Clause
"""Scalene's @profile builtin in run mode, and the stack timeline.

@profile: programs written for Scalene use the builtin without defining it;
under `scalene-bpf run` they must run (no NameError) and, as under Scalene,
when any function is decorated only the decorated functions are reported
(their lines and their function entries); without a decorator everything is
reported as before.  The builtin comes from a sitecustomize.py first on the
program's PYTHONPATH, which must chain to the one the interpreter would have
loaded, leave an existing builtins.profile alone, reach children and work
for the user the program runs as under sudo.  It is given only to a program
whose folder has a .py file that decorates with @profile (or with
--profile-builtin): any other starts exactly as it would without us.

Timeline: combined_stacks_timeline is filled from the CPU samples in
Scalene's shape, indexes combined_stacks, and stays bounded on a run with
more stack changes than its cap.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from e2e_helpers import (BIN, clean_env, default_interpreter, file_entry,
                         line_time, markers, profile_run, program,
                         runnable_by, sudo_env, invoke, finish)

DECORATED = program("decorated.py")
# From profile.h: the timeline's cap.
TIMELINE_MAX_EVENTS = 5000


def _copy(src, tmp, name=None, text=None):
    dst = Path(tmp) / (name or os.path.basename(src))
    dst.write_text(text if text is not None else Path(src).read_text())
    return dst


def _functions(profile, path):
    return {row["line"]: row for row in file_entry(profile, path)["functions"]}


def test_profile_decorator(python, tmp_path):
    """One decorated and one undecorated function, equally hot: only the
    decorated one is reported, with its helper's time on its calling line;
    the program runs (the builtin exists) on every interpreter."""
    prog = _copy(DECORATED, tmp_path)
    res = profile_run(python, prog, ["1.5"], tmp=tmp_path, opts=["--cpu-only"],
                      gui=python == default_interpreter())
    assert "NameError" not in res.stderr, res.describe()
    mk = markers(prog)
    facts = res.profile["scalene_bpf"]
    assert facts["profile_decorator"]["functions"] == 1, facts
    assert facts["profile_decorator"]["bad_report_lines"] == 0, facts
    assert facts["profile_decorator"]["builtin_provided"], facts
    assert facts["profile_decorator"]["builtin_why"] == \
        f"{prog} decorates with @profile", facts
    funcs = _functions(res.profile, prog)
    assert set(funcs) == {"decorated"}, funcs.keys()
    assert funcs["decorated"]["lineno"] == mk["decorated_first"]
    loop = line_time(res.profile, prog, mk["decorated_loop"])
    call = line_time(res.profile, prog, mk["decorated_call"])
    assert loop.seconds > 0.2, res.describe()
    # The helper is not decorated: its time lands on the calling line.
    assert call.seconds > 0.05, res.describe()
    for name in ("plain_loop", "helper_loop", "plain_def", "helper_def"):
        t = line_time(res.profile, prog, mk[name])
        assert t.percent == 0, (name, t)
    # The undecorated function's time is not attributed anywhere else, and
    # named as what it is: outside the decorated functions (its file is the
    # program's own).  Files not profiled keep only what ran before the
    # first function was decorated (the interpreter's start-up).
    off = facts["unattributed"]
    assert off["outside_decorated_functions_s"] > 0.2, facts
    assert off["outside_profiled_files_s"] < off["outside_decorated_functions_s"] / 2, facts
    view = subprocess.run([str(BIN), "view", "--cli", str(res.path)], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL,
                          env=clean_env({"COLUMNS": "200"}))
    assert view.returncode == 0, view.stderr
    # (The footer is wrapped at the width: words, not lines.)
    assert "s in functions not decorated with @profile" in " ".join(view.stdout.split()), \
        view.stdout


def test_no_decorator_reports_everything(any_python, tmp_path):
    """Without a decorator nothing changes: both functions are reported."""
    text = Path(DECORATED).read_text().replace("@profile  #", "#")
    prog = _copy(DECORATED, tmp_path, "undecorated.py", text)
    res = profile_run(any_python, prog, ["1.0"], tmp=tmp_path,
                      opts=["--cpu-only"])
    mk = markers(prog)
    dec = res.profile["scalene_bpf"]["profile_decorator"]
    assert dec["functions"] == 0
    assert not dec["builtin_provided"], dec
    assert dec["builtin_why"].startswith(
        f"no .py file under {tmp_path} decorates with @profile"), dec
    funcs = _functions(res.profile, prog)
    assert {"decorated", "plain", "helper"} <= set(funcs), funcs.keys()
    assert line_time(res.profile, prog, mk["plain_loop"]).seconds > 0.1
    assert line_time(res.profile, prog, mk["helper_loop"]).seconds > 0.02


def test_builtin_and_frames_as_without_profiler(any_python, tmp_path):
    """The program sees the builtin, a clean sys.path and its own frames:
    nothing of the hook at the bottom of its stack."""
    prog = tmp_path / "look.py"
    side = tmp_path / "seen.json"
    prog.write_text(
        "import builtins, json, sys, traceback\n"
        "@profile\n"
        "def f():\n"
        "    return [fr.name for fr in traceback.extract_stack()]\n"
        "json.dump({'stack': f(), 'decorated_is_function': callable(f),\n"
        "           'path': sys.path, 'argv': sys.argv,\n"
        "           'profile_module': builtins.profile.__module__},\n"
        "          open(sys.argv[1], 'w'))\n")
    profile_run(any_python, prog, [str(side)], tmp=tmp_path,
                opts=["--cpu-only"])
    seen = json.loads(side.read_text())
    assert seen["stack"] == ["<module>", "f"], seen
    assert seen["argv"] == [str(prog), str(side)], seen
    assert not [p for p in seen["path"] if "scalene-bpf-hook" in p], seen
    assert seen["decorated_is_function"]
    # Nothing is left behind.
    assert not [d for d in os.listdir("/tmp")
                if d.startswith("scalene-bpf-hook.")
                and os.path.getmtime(os.path.join("/tmp", d))
                > os.path.getmtime(prog) - 1], os.listdir("/tmp")


def test_undecorated_program_starts_as_without_profiler(python, tmp_path):
    """No .py file of the program's folder decorates: nothing is put on its
    PYTHONPATH, no sitecustomize of ours runs, its environment and sys.path
    are what they would be without us; --profile-builtin gives it the
    builtin all the same; a program that then fails is told why there was
    none."""
    prog = tmp_path / "plain.py"
    side = tmp_path / "seen.json"
    prog.write_text(
        "import builtins, json, os, sys\n"
        "json.dump({'path': sys.path, 'pythonpath': os.environ.get('PYTHONPATH'),\n"
        "           'site': getattr(sys.modules.get('sitecustomize'), '__file__', None),\n"
        "           'builtin': hasattr(builtins, 'profile')},\n"
        "          open(sys.argv[1], 'w'))\n")
    env = clean_env({})
    env.pop("PYTHONPATH", None)
    alone = subprocess.run([python, str(prog), str(side)], env=env, check=True)
    assert alone.returncode == 0
    bare = json.loads(side.read_text())
    res = profile_run(python, prog, [str(side)], tmp=tmp_path, opts=["--cpu-only"], env=env)
    seen = json.loads(side.read_text())
    assert seen == bare, (seen, bare)
    assert not seen["builtin"] and seen["pythonpath"] is None, seen
    assert not res.profile["scalene_bpf"]["profile_decorator"]["builtin_provided"]
    res = profile_run(python, prog, [str(side)], tmp=tmp_path,
                      opts=["--cpu-only", "--profile-builtin"], env=env)
    seen = json.loads(side.read_text())
    assert seen["builtin"], seen
    dec = res.profile["scalene_bpf"]["profile_decorator"]
    assert dec["builtin_provided"] and dec["builtin_why"] == "--profile-builtin", dec
    # Decorated through a name the look cannot see: NameError, and the hint.
    prog.write_text("deco = profile\n")
    res = invoke(["run", "-o", str(tmp_path / "p.json"), "--cpu-only", "--python", python,
                  str(prog)], cwd=tmp_path, env=env)
    assert res.rc == 1, res.describe()
    assert "NameError" in res.stderr, res.describe()
    assert "run it again with --profile-builtin" in res.stderr, res.describe()


def test_chains_to_sitecustomize_and_keeps_existing_profile(any_python,
                                                            tmp_path):
    """A sitecustomize on the user's PYTHONPATH still runs; a builtin
    profile it sets (line_profiler style) is not replaced."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import builtins\n"
        "def profile(f):\n"
        "    f.marked_by_user = True\n"
        "    return f\n"
        "builtins.profile = profile\n"
        "USER_SITE_RAN = True\n")
    prog = tmp_path / "chain.py"
    side = tmp_path / "seen.json"
    prog.write_text(
        "import json, sys, sitecustomize\n"
        "@profile\n"
        "def f():\n"
        "    pass\n"
        "json.dump({'ran': getattr(sitecustomize, 'USER_SITE_RAN', False),\n"
        "           'marked': getattr(f, 'marked_by_user', False)},\n"
        "          open(sys.argv[1], 'w'))\n")
    env = clean_env({"PYTHONPATH": str(site)})
    res = profile_run(any_python, prog, [str(side)], tmp=tmp_path,
                      opts=["--cpu-only"], env=env)
    seen = json.loads(side.read_text())
    assert seen == {"ran": True, "marked": True}, seen
    # Theirs, not ours: nothing was reported to us.
    assert res.profile["scalene_bpf"]["profile_decorator"]["functions"] == 0


def test_decorated_in_a_child_process(any_python, tmp_path):
    """A Python started by the program inherits the builtin: its decorated
    function is what the profile reports (unless children are not
    followed)."""
    prog = _copy(DECORATED, tmp_path, "child.py")
    parent = tmp_path / "parent.py"
    parent.write_text(
        "import subprocess, sys\n"
        "def spin(n):\n"
        "    return sum(i * i % 7 for i in range(n))\n"
        "spin(300000)\n"
        f"subprocess.run([sys.executable, {str(prog)!r}, '1.0'], check=True)\n")
    res = profile_run(any_python, parent, tmp=tmp_path, opts=["--cpu-only"])
    assert res.profile["scalene_bpf"]["profile_decorator"]["functions"] == 1
    assert set(_functions(res.profile, prog)) == {"decorated"}
    assert str(parent) not in res.profile["files"], list(res.profile["files"])
    # Not followed, the child's decorations do not hide the parent's lines.
    res = profile_run(any_python, parent, tmp=tmp_path,
                      opts=["--cpu-only", "--no-follow"])
    assert res.profile["scalene_bpf"]["profile_decorator"]["functions"] == 0
    assert "spin" in _functions(res.profile, parent)


def test_decorator_under_sudo(user_python, user_dir):
    """Run as the invoking user, the program reads the hook and writes its
    report."""
    user, d = user_dir
    python = user_python[1]
    prog = os.path.join(d, "decorated.py")
    shutil.copy(DECORATED, prog)
    os.chmod(prog, 0o644)
    out = os.path.join(d, "profile.json")
    res = invoke(["run", "-o", out, "--cpu-only", "--python", python, prog,
                  "1.0"], cwd=d, env=sudo_env(user))
    finish(res, out)
    assert "NameError" not in res.stderr, res.describe()
    assert res.profile["scalene_bpf"]["profile_decorator"]["functions"] == 1
    assert set(_functions(res.profile, prog)) == {"decorated"}


# --------------------------------------------------------------------------
# The stack timeline
# --------------------------------------------------------------------------

def _check_timeline(profile):
    tl = profile["combined_stacks_timeline"]
    stacks = profile["combined_stacks"]
    assert tl, "empty combined_stacks_timeline"
    assert len(tl) <= TIMELINE_MAX_EVENTS
    last = 0.0
    for ev in tl:
        # Scalene's CombinedStackTimelineEvent, read by its GUI.
        assert set(ev) == {"t_sec", "stack_index", "count", "thread_id"}, ev
        assert isinstance(ev["stack_index"], int)
        assert 0 <= ev["stack_index"] < len(stacks), ev
        assert isinstance(ev["count"], int) and ev["count"] >= 1, ev
        assert isinstance(ev["thread_id"], int), ev
        assert ev["t_sec"] >= last, "events out of time order"
        last = ev["t_sec"]
    assert tl[0]["t_sec"] == 0
    assert last <= profile["elapsed_time_sec"]
    return tl


def test_timeline(any_python, tmp_path):
    """Filled from the samples: every CPU sample of a stack is in it, the
    main thread under main_thread_id, the hot stacks in the order they ran;
    Scalene's GUI draws it."""
    prog = _copy(DECORATED, tmp_path, "busy.py",
                 Path(DECORATED).read_text().replace("@profile  #", "#"))
    res = profile_run(any_python, prog, ["1.0"], tmp=tmp_path,
                      opts=["--cpu-only"], gui=True)
    p = res.profile
    tl = _check_timeline(p)
    facts = p["scalene_bpf"]
    assert facts["timeline"]["events"] <= TIMELINE_MAX_EVENTS
    assert facts["timeline"]["samples_dropped"] == 0
    # Short run: nothing thinned, so the counts are the stacks' hits.
    assert facts["timeline"]["slot_s"] == 0
    hits = [0] * len(p["combined_stacks"])
    for ev in tl:
        hits[ev["stack_index"]] += ev["count"]
    assert hits == [c for _, c in p["combined_stacks"]]
    main = p["main_thread_id"]
    assert main and sum(ev["count"] for ev in tl if ev["thread_id"] == main) \
        > 0.9 * sum(hits)
    # Both hot functions show up over the run, taking turns.
    leaves = [p["combined_stacks"][ev["stack_index"]][0][-1]["display_name"]
              for ev in tl]
    assert leaves.count("decorated") > 10 and leaves.count("plain") > 10


def test_timeline_bounded(any_python, tmp_path):
    """More stack changes than the cap: thinned, still well formed and
    covering the whole run, every sample still counted."""
    prog = _copy(program("alternate.py"), tmp_path)
    res = profile_run(any_python, prog, ["4"], tmp=tmp_path,
                      opts=["--cpu-only", "--rate", "5000"], gui=True)
    p = res.profile
    tl = _check_timeline(p)
    facts = p["scalene_bpf"]["timeline"]
    assert facts["slot_s"] > 0, facts  # it was thinned
    assert facts["samples_dropped"] == 0, facts
    assert len(tl) <= TIMELINE_MAX_EVENTS
    # Every CPU sample with a stack is in some event.
    assert sum(ev["count"] for ev in tl) == \
        sum(c for _, c in p["combined_stacks"])
    # The events reach the end of the run.
    assert tl[-1]["t_sec"] > 0.7 * p["elapsed_time_sec"], (
        tl[-1], p["elapsed_time_sec"])
    # Our own page shows every event.
    page = tmp_path / "page.html"
    v = subprocess.run([str(BIN), "view", "--html", str(page), str(res.path)],
                       capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL, env=clean_env())
    assert v.returncode == 0, v.stderr
    assert '"timeline_omitted":0' in page.read_text(), "events left out"


# --------------------------------------------------------------------------
# Native frames of combined_stacks
# --------------------------------------------------------------------------

def test_native_frames_carry_address(any_python, tmp_path):
    """A native leaf frame gives the sampled address and its offset from
    the symbol's start, as Scalene's frames do.  Large buffers spend their
    time in OpenSSL's SHA-256 block function, which has no symbol in a
    stripped libcrypto (an address only); small ones in OpenSSL's exported
    EVP functions and malloc, which are named."""
    prog = _copy(program("native_sha.py"), tmp_path, text=(
        "import hashlib, time\n"
        "big, small = b'x' * (16 << 20), b'x' * 64\n"
        "t = time.thread_time()\n"
        "while time.thread_time() - t < 0.5: hashlib.sha256(big).digest()\n"
        "t = time.thread_time()\n"
        "while time.thread_time() - t < 0.5:\n"
        "    for _ in range(1000): hashlib.sha256(small).digest()\n"))
    res = profile_run(any_python, prog, tmp=tmp_path, opts=["--cpu-only"])
    native = [fr for frames, _ in res.profile["combined_stacks"]
              for fr in frames if fr["kind"] == "native"]
    assert native, "no native frame in combined_stacks"
    named = [fr for fr in native if not fr["display_name"].startswith("+0x")]
    assert named, native[:5]
    starts = {}
    for fr in named:
        assert isinstance(fr["ip"], int) and fr["ip"] > 0, fr
        assert isinstance(fr["offset"], int) and 0 <= fr["offset"] < 1 << 24, fr
        # One symbol, one start: ip - offset agrees between its frames.
        key = (fr["filename_or_module"], fr["display_name"])
        starts.setdefault(key, set()).add(fr["ip"] - fr["offset"])
    assert all(len(s) == 1 for s in starts.values()), starts
    for fr in native:
        if fr["display_name"].startswith("+0x"):
            # No symbol: an address, but no offset from a start.
            assert isinstance(fr["ip"], int) and fr["offset"] is None, fr
