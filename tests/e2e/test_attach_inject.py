# SPDX-License-Identifier: BSD-2-Clause
"""--pid --memory: the allocation sampler that `run` preloads is loaded
into the running process instead (user/session/meminject.h): 3.14+ run the
script that loads it as code sent from outside (PEP 768), 3.9-3.13 from a
call put into the interpreter's queue of pending calls.  Its hooks are taken
out at the end.

The target must be left as it was: its allocators are its own again after
the profiler leaves, by its word or, killed, by its silence."""

import glob
import os
import resource
import shutil
import subprocess
import time

import pytest

from e2e_helpers import (clean_env, find_interpreter, finish, invoke, program,
                         read_rounds, rounds_at, runnable_by, sudo_env)
from test_memory import describe, line_row

PROG = program("attach_inject.py")


# Pending calls (3.9-3.13: the oldest, the two layouts of the queue, a
# static build), and remote execution (3.14+).
INJECTABLE = ("py3.9", "debian3.11-static", "py3.12", "py3.13", "sid3.14-static",
              "sid3.15-static")


def _method(ident):
    return "remote_exec" if ident.startswith("sid") else "pending_call"


@pytest.fixture(params=INJECTABLE)
def inject_python(request):
    """An interpreter the sampler can be put into, and the way in."""
    return find_interpreter(request.param), _method(request.param)


@pytest.fixture(params=("py3.9", "py3.13", "sid3.14-static"))
def some_inject_python(request):
    """Fewer of them, for the longer tests: each way in, each queue."""
    return find_interpreter(request.param), _method(request.param)


def _spawn(argv, cwd, env=None, user=None):
    """The target, its output piped; it says "ready" when it is."""
    as_user = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []} if user else {}
    return subprocess.Popen([str(a) for a in argv], cwd=str(cwd), env=env or clean_env(),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **as_user)


def _start(python, tmp_path, env=None, user=None, prog=PROG):
    stop, side = tmp_path / "stop", tmp_path / "rounds.txt"
    target = _spawn([python, prog, stop, side], tmp_path, env=env, user=user)
    assert target.stdout.readline().strip() == "ready"
    return target, stop, side


def _end(target, stop):
    """Stops the target; its last line's words ("done", rounds, whether its
    allocators are those it started with)."""
    stop.touch()
    rest, err = target.communicate(timeout=30)
    assert target.returncode == 0, (target.returncode, rest, err)
    words = rest.split()
    assert words[:1] == ["done"] and len(words) == 3, (rest, err)
    return words


def _our_dirs(pid):
    return glob.glob(f"/tmp/scalene-bpf-attach.{pid}.*")


def test_attach_memory_injected(inject_python, tmp_path, accuracy):
    """The lines' bytes (4:1), all through Python's allocator, with frees:
    a footprint; the allocators given back at the end, nothing left in
    /tmp; the sampler's own thread is not in the profile."""
    python, method = inject_python
    target, stop, _ = _start(python, tmp_path)
    out = tmp_path / "profile.json"
    try:
        res = invoke(["--pid", target.pid, "--memory", "--duration", "3", "-o", out],
                     cwd=tmp_path, timeout=60)
        assert target.poll() is None, "the target ended during the attach"
    finally:
        words = _end(target, stop)
    assert words[2] == "same", f"the target's allocators changed: {words}\n{res.describe()}"
    finish(res, out)
    p = res.profile
    mem = p["scalene_bpf"]["memory"]
    att = mem["attach"]
    ctx = f"{describe(p, PROG)}; attach {att}"
    assert att["method"] == method and att["attached"] is True, ctx
    assert att["detach"] == "restored", ctx
    # How soon the script answers depends on the machine (ms here, 1.6 s
    # in an emulated guest): only that it did, and stayed until the end.
    accuracy("attach --memory injected: answer after the request, s", 0.0,
             round(att["answer_s"], 3), ">= 0")
    assert att["answer_s"] >= 0 and att["attached_s"] > 0, ctx
    assert not _our_dirs(res.pid), _our_dirs(res.pid)
    assert mem["mode"] == "sampler" and mem["sampler_loaded"] == 1, ctx
    big, small = line_row(p, PROG, "big"), line_row(p, PROG, "small")
    # 4 MiB blocks are sampled at 1 - e^-4 of them, 1 MiB at 1 - e^-1, each
    # weighed up by the same factor: hundreds of samples a line in 3 s.
    assert small["n_malloc_mb"] > 0, ctx
    ratio = big["n_malloc_mb"] / small["n_malloc_mb"]
    accuracy("attach --memory injected: big:small", 4.0, round(ratio, 2), "3..5")
    assert 3.0 <= ratio <= 5.0, f"4:1 lines measured {ratio:.2f}; {ctx}"
    # bytearray's buffer comes from Python's allocator: all Python.
    assert big["n_python_fraction"] >= 0.99 and small["n_python_fraction"] >= 0.99, ctx
    # Frees are seen: each block is freed when the next one replaces it.
    assert p["max_footprint_mb"] > 0, ctx
    assert "not_measured" in att and "native" in att["not_measured"], att
    # The sampler's watcher thread (sleeping) is left out: had it been
    # counted, its 3 s would be "on no line" and halve the lines' shares.
    assert "scalene-bpf-mem" not in str(p["scalene_bpf"]["threads"]), p["scalene_bpf"]["threads"]
    assert p["files"][PROG]["percent_cpu_time"] > 90, ctx


def test_attach_memory_injected_again(some_inject_python, tmp_path):
    """A profiler that comes back to the same process: the copy loaded the
    first time is attached again (one copy mapped), and given back again;
    each profile counts the bytes of its own attach, not the copy's total."""
    target, stop, side = _start(some_inject_python[0], tmp_path)
    outs = [tmp_path / "first.json", tmp_path / "again.json"]
    try:
        runs = [invoke(["--pid", target.pid, "--memory", "--duration", "1", "-o", out],
                       cwd=tmp_path, timeout=60) for out in outs]
        with open(f"/proc/{target.pid}/maps") as f:
            copies = {line.split()[-2] if line.rstrip().endswith("(deleted)")
                      else line.split()[-1] for line in f if "scalene-bpf-attach." in line}
        assert target.poll() is None, "the target ended during the attaches"
    finally:
        words = _end(target, stop)
    assert words[2] == "same", words
    assert len(copies) == 1, copies
    for res, out in zip(runs, outs):
        finish(res, out)
        att = res.profile["scalene_bpf"]["memory"]["attach"]
        assert att["attached"] is True and att["detach"] == "restored", att
        assert line_row(res.profile, PROG, "small")["n_malloc_mb"] > 0, describe(res.profile, PROG)
        # 100 MiB a round (20 of 4 + 1 MiB), exact in the sampler's count;
        # the program's rounds over the attach (answer to detach: within
        # the profile's span, a round is ~25 ms of it).
        rows = read_rounds(side)
        t0 = res.profile["start_time_absolute"]
        t1 = t0 + res.profile["elapsed_time_sec"]
        want = (rounds_at(rows, t1) - rounds_at(rows, t0)) * 100
        assert 0.6 * want <= att["python_mb"] <= 1.2 * want, (att, want)


def test_attach_memory_injected_profiler_killed(some_inject_python, tmp_path):
    """The profiler killed (SIGKILL) while the sampler is in: the sampler's
    thread hears no heartbeat for 3 s and has the interpreter put the
    allocators back; the target runs on at its pace and ends with its own
    allocators, and nothing of ours is left in its /tmp."""
    target, stop, side = _start(some_inject_python[0], tmp_path)
    out = tmp_path / "profile.json"
    killed = []

    def kill(proc):
        time.sleep(3.0)
        proc.kill()
        killed.append(time.time())

    try:
        time.sleep(1.0)  # its pace before, from its own lines
        attached = time.time()
        res = invoke(["--pid", target.pid, "--memory", "--duration", "20", "-o", out],
                     cwd=tmp_path, timeout=30, during=kill)
        assert target.poll() is None, "the target ended with the profiler"
        # The beat's 3 s, the watcher's 0.1 s, the pending call's next
        # eval-breaker check (a round: tens of ms).
        time.sleep(4.5)
        assert target.poll() is None, "the target ended after the profiler"
    finally:
        words = _end(target, stop)
    assert not out.exists(), "a profile from a killed profiler"
    assert words[2] == "same", f"the allocators were not given back: {words}"
    assert not _our_dirs(res.pid), _our_dirs(res.pid)
    rows = read_rounds(side)

    def pace(t0, t1):
        return (rounds_at(rows, t1) - rounds_at(rows, t0)) / (t1 - t0)

    before, after = pace(attached - 0.8, attached), pace(killed[0] + 0.5, killed[0] + 4.0)
    assert after >= 0.5 * before, f"rounds a second: {before:.0f} before, {after:.0f} after"


def test_attach_memory_injection_refused(tmp_path):
    """A 3.14 whose remote execution is off (PYTHON_DISABLE_REMOTE_DEBUG):
    by default its allocators are probed instead, and said; asked to inject,
    the profiler says why it cannot and fails."""
    python = find_interpreter("sid3.14-static")
    env = clean_env({"PYTHON_DISABLE_REMOTE_DEBUG": "1"})
    target, stop, _ = _start(python, tmp_path, env=env)
    out = tmp_path / "profile.json"
    try:
        res = invoke(["--pid", target.pid, "--memory", "--duration", "1", "-o", out],
                     cwd=tmp_path, timeout=60)
        refused = invoke(["--pid", target.pid, "--memory", "--memory-method", "inject",
                          "--duration", "1", "-o", tmp_path / "no.json"],
                         cwd=tmp_path, timeout=60)
    finally:
        words = _end(target, stop)
    assert words[2] == "same", words
    finish(res, out)
    assert "does not allow code sent from outside" in res.stderr, res.stderr
    assert "probed instead" in res.stderr, res.stderr
    mem = res.profile["scalene_bpf"]["memory"]
    assert mem["mode"] == "uprobes" and "attach" not in mem, mem
    assert refused.rc == 1, refused.describe()
    assert "does not allow code sent from outside" in refused.stderr, refused.stderr
    assert not (tmp_path / "no.json").exists()


def test_attach_memory_injection_free_threaded(tmp_path):
    """A free-threaded 3.13 has neither way in: --memory-method inject says
    so and fails, auto probes the allocators instead; the target is
    untouched."""
    python = find_interpreter("ft3.13-static")
    target, stop, _ = _start(python, tmp_path)
    out = tmp_path / "profile.json"
    try:
        res = invoke(["--pid", target.pid, "--memory", "--memory-method", "inject",
                      "--duration", "1", "-o", tmp_path / "p.json"], cwd=tmp_path, timeout=60)
        auto = invoke(["--pid", target.pid, "--memory", "--duration", "1", "-o", out],
                      cwd=tmp_path, timeout=60)
    finally:
        words = _end(target, stop)
    assert words[2] == "same", words
    assert res.rc == 1, res.describe()
    assert "free-threaded" in res.stderr and "3.14+ can" in res.stderr, res.stderr
    assert os.path.exists(tmp_path / "p.json") is False
    finish(auto, out)
    assert "probed instead" in auto.stderr, auto.stderr
    assert auto.profile["scalene_bpf"]["memory"]["mode"] == "uprobes"


@pytest.mark.parametrize("ident", ("py3.9", "debian3.11-static", "py3.13"))
def test_attach_memory_injection_main_thread_blocked(ident, tmp_path):
    """The main thread blocked in C for the whole attach, another running
    Python.  3.9-3.11 make a pending call in the main thread only: it is
    never taken, and at the end it is taken back out of the queue; when the
    main thread runs Python again nothing of ours runs (no sampler thread,
    allocators its own, nothing printed).  3.12+ make it in any thread: the
    other thread loads the sampler, and at the end, the main thread being
    blocked, the sampler's own thread takes the GIL to put the allocators
    back."""
    python = find_interpreter(ident)
    stop = tmp_path / "stop"
    code = ("import ctypes, os, sys, threading, time\n"
            "def work():\n"
            "    while not os.path.exists(sys.argv[1]):\n"
            "        bytearray(1 << 20); time.sleep(0.001)\n"
            "threading.Thread(target=work, daemon=True).start()\n"
            "get = ctypes.pythonapi.PyMem_GetAllocator\n"
            "get.restype = None\n"
            "def alloc():\n"
            "    a = (ctypes.c_void_p * 5)()\n"
            "    get(2, a)\n"
            "    return list(a)\n"
            "before = alloc()\n"
            "print('ready', flush=True)\n"
            "time.sleep(5)\n"
            "for _ in range(2000): sum(range(100))\n"
            "time.sleep(0.5)\n"
            "comms = [open('/proc/self/task/%s/comm' % t).read().strip()\n"
            "         for t in os.listdir('/proc/self/task')]\n"
            "open(sys.argv[1], 'w').close()\n"
            "print('done', 'scalene-bpf-mem' in comms, alloc() == before, flush=True)\n")
    target = _spawn([python, "-c", code, stop], tmp_path)
    out = tmp_path / "profile.json"
    try:
        assert target.stdout.readline().strip() == "ready"
        res = invoke(["--pid", target.pid, "--memory", "--duration", "2", "-o", out],
                     cwd=tmp_path, timeout=60)
    finally:
        rest, err = target.communicate(timeout=30)
    assert target.returncode == 0 and rest.split() == ["done", "False", "True"], (rest, err)
    assert err == "", err
    finish(res, out)
    att = res.profile["scalene_bpf"]["memory"]["attach"]
    assert att["method"] == "pending_call", att
    if ident == "py3.13":
        assert att["attached"] is True and att["detach"] == "restored", att
    else:
        assert att["attached"] is False and "taken back" in att["why_not"], att
    assert not _our_dirs(res.pid), _our_dirs(res.pid)


def test_attach_memory_injected_under_sudo(user_dir):
    """A target of an unprivileged user, the profiler under sudo: the
    script runs as that user and can read what it loads and write its
    answer, nothing else there; the profile belongs to the user."""
    user, d = user_dir
    python = find_interpreter("sid3.14-static")
    if not runnable_by(user, python):
        pytest.skip(f"{user.pw_name} cannot run {python}")
    prog = os.path.join(d, "attach_inject.py")
    shutil.copy(PROG, prog)
    os.chmod(prog, 0o644)
    target, stop, _ = _start(python, d, user=user, prog=prog)
    out = os.path.join(d, "profile.json")
    try:
        res = invoke(["--pid", target.pid, "--memory", "--duration", "2", "-o", out],
                     cwd=d, timeout=60, env=sudo_env(user))
    finally:
        words = _end(target, stop)
    assert words[2] == "same", words
    finish(res, out)
    st = os.stat(out)
    assert (st.st_uid, st.st_gid) == (user.pw_uid, user.pw_gid)
    att = res.profile["scalene_bpf"]["memory"]["attach"]
    assert att["attached"] is True and att["detach"] == "restored", att
    assert not _our_dirs(res.pid), _our_dirs(res.pid)


def test_attach_memory_injection_script_fails(tmp_path):
    """The script fails in the process (here: no ctypes): the profile says
    why and holds the CPU profile; the profiler does not spin for the rest
    of the run; the process runs on."""
    python = find_interpreter("sid3.14-static")
    stop = tmp_path / "stop"
    code = ("import os, sys, time\n"
            "sys.modules['ctypes'] = None\n"
            "print('ready', flush=True)\n"
            "while not os.path.exists(sys.argv[1]):\n"
            "    sum(range(10000)); time.sleep(0.001)\n"
            "print('done', flush=True)\n")
    target = _spawn([python, "-c", code, stop], tmp_path)
    out = tmp_path / "profile.json"
    try:
        assert target.stdout.readline().strip() == "ready"
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        res = invoke(["--pid", target.pid, "--memory", "--duration", "3", "-o", out],
                     cwd=tmp_path, timeout=60)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    finally:
        stop.touch()
        rest, err = target.communicate(timeout=30)
    assert target.returncode == 0 and rest.strip() == "done", (rest, err)
    # Nothing of ours was printed in the process.
    assert "scalene" not in err.lower() and "Traceback" not in err, err
    finish(res, out)
    att = res.profile["scalene_bpf"]["memory"]["attach"]
    assert att["attached"] is False and att["detach"] == "never attached", att
    assert "ModuleNotFoundError" in att["why_not"] and "ctypes" in att["why_not"], att
    assert "was not profiled for memory" in res.stderr, res.stderr
    # A profiler that waited on its answer with no pause would use the 3 s.
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert cpu < 1.5, f"the profiler used {cpu:.2f} s of CPU in a 3 s run"
    assert not _our_dirs(res.pid), _our_dirs(res.pid)
