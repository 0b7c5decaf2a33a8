# SPDX-License-Identifier: BSD-2-Clause
"""Programs whose time per line is known: the profile must say the same.

Reference values come from two places, and both are asserted: the design
of the program (the iteration counts, the sleep length) and what the program
measured of itself while it ran (time.thread_time around each line).  The
programs size their work in CPU time and spread it in short rounds, so that
a machine shared with other work (an iteration's cost drifts with it) still
gives the designed split.
"""

import json
import os
import re
import subprocess

import pytest

from e2e_helpers import (INTERPRETER_IDS, clean_env, default_interpreter, file_entry,
                         find_interpreter, function_time, hot_lines,
                         line_time, markers, profile_run, program)

# Pure-Python helper that split.py and threads_ratio.py share: left out of
# the report so its time lands on the calling line (Scalene's rule for
# files it does not report).
EXCLUDE_SPIN = ("--profile-exclude", "spin_helper")


def shares(values):
    total = sum(values)
    assert total > 0, f"no time at all on the lines: {values}"
    return [100.0 * v / total for v in values]


def test_split_20_30_50(python, tmp_path, accuracy):
    prog = program("split.py")
    side = tmp_path / "spent.json"
    res = profile_run(python, prog, ["1.0", side], tmp=tmp_path,
                      opts=EXCLUDE_SPIN)
    m = markers(prog)
    names = ("twenty", "thirty", "fifty")
    times = [line_time(res.profile, prog, m[n]) for n in names]
    got = shares([t.percent for t in times])
    spent = json.loads(side.read_text())
    real = shares([spent[n] for n in names])
    ctx = (f"profile {[round(g, 2) for g in got]}, measured by the program "
           f"{[round(r, 2) for r in real]}; an iteration took "
           f"{spent['work_s_per_iter'] * 1e9:.1f} ns in the work, "
           f"{spent['calibrated_s_per_iter'] * 1e9:.1f} ns when calibrated; "
           f"hot lines: {hot_lines(res.profile)}")
    for name, g, r, nominal in zip(names, got, real, (20, 30, 50)):
        accuracy(f"{name} share of the 3 lines, %", nominal, g, "2.5")
        accuracy(f"{name} share vs program's thread_time, %", r, g, "2.5")
        # 2.5 points: about 1 s of CPU is ~1000 samples at 997 Hz, so the
        # sampling error on a share is well under 1 point; the rest is
        # attribution at line boundaries (a sample taken as a call returns).
        assert abs(g - r) <= 2.5, (
            f"{name}: {g:.2f}% vs {r:.2f}% measured; {ctx}")
        # 2.5 points against the design: the same code runs for every line
        # and the rounds spread the machine's drift over all three alike.
        assert abs(g - nominal) <= 2.5, (
            f"{name}: {g:.2f}% vs {nominal}%; {ctx}")
    # The three lines are pure Python: native and system time are noise.
    for name, t in zip(names, times):
        frac = t.python / t.percent
        accuracy(f"{name} python fraction", 1.0, frac, ">= 0.95")
        assert frac >= 0.95, f"{name}: only {frac:.1%} Python; {ctx}"


def test_python_line_vs_native_line(python, tmp_path, accuracy):
    prog = program("native_sha.py")
    # Also rendered in the browser GUI (once): native symbols are an extra
    # key the viewers must ignore.
    res = profile_run(python, prog, ["0.4"], tmp=tmp_path,
                      gui=python == default_interpreter())
    m = markers(prog)
    py = line_time(res.profile, prog, m["python"])
    nat = line_time(res.profile, prog, m["native"])
    ctx = f"hot lines: {hot_lines(res.profile)}"
    py_frac = py.python / py.percent if py.percent else 0
    nat_frac = nat.native / nat.percent if nat.percent else 0
    accuracy("python line: python fraction", 1.0, py_frac, ">= 0.90")
    accuracy("native line: native fraction", 1.0, nat_frac, ">= 0.90")
    # Each part runs ~0.4 s of CPU: both lines must carry real time (0.1 s
    # is 100 samples, plenty for the fractions below).
    assert py.seconds >= 0.1 and nat.seconds >= 0.1, ctx
    # 0.90: the loop line runs only bytecode; the hash line spends all but a
    # few microseconds per 16 MiB in OpenSSL (GIL released).  The rest
    # allows for samples in the kernel (timer interrupts, a page fault).
    assert py_frac >= 0.90, f"python line only {py_frac:.1%} Python; {ctx}"
    assert nat_frac >= 0.90, f"native line only {nat_frac:.1%} native; {ctx}"
    assert py.native / py.percent <= 0.05, ctx
    assert nat.python / nat.percent <= 0.05, ctx

    syms = nat.extra.get("native_symbols")
    assert syms, f"no native_symbols on the hash line: {nat.extra}"
    for s in syms:
        assert set(s) >= {"symbol", "module", "percent"}, s
    crypto = [s for s in syms if re.search(r"libcrypto|libssl|hashlib",
                                           s["module"])]
    named = [s for s in crypto if re.search(r"sha", s["symbol"], re.I)]
    offsets = [s for s in crypto if s["symbol"].startswith("+0x")]
    crypto_pct = sum(s["percent"] for s in crypto)
    accuracy("native line: % in libcrypto symbols / native %", 100.0,
             100.0 * crypto_pct / nat.native, ">= 80")
    accuracy("native line: symbols", "a SHA function",
             ", ".join(sorted({s["symbol"] for s in crypto}))[:120], "")
    # The hashing runs in OpenSSL's libcrypto: its entries must carry most of
    # the line's native time (80%: memcpy or a page fault may take a little).
    assert crypto_pct >= 0.8 * nat.native, f"native symbols: {syms}"
    if not named:
        # OpenSSL's SHA-256 block functions are local symbols: without
        # .symtab (Debian strips it) nothing can name them.  Then, and only
        # then, addresses in libcrypto must carry most of the time; the
        # exported functions around the hash (EVP_*) may show up too.
        # Only libcrypto's own: a sample in _hashlib's wrapper code (which
        # has a .symtab and no SHA function) says nothing about naming it.
        libs = {s["module"] for s in crypto if "libcrypto" in s["module"]}
        for lib in libs:
            assert not _has_symtab(lib), (
                f"{lib} has a .symtab, yet no SHA function was named: {syms}")
        off_pct = sum(s["percent"] for s in offsets)
        assert off_pct >= 0.5 * nat.native, (
            f"the hash time is neither named nor in unnamed libcrypto code: "
            f"{syms}")


def test_calls_into_the_interpreter_are_native(python, tmp_path, accuracy):
    """C code compiled into the interpreter (sorted, _sre), run by a call
    instruction, is native time, as in Scalene; interpreting bytecode, and
    entering and leaving a Python function, is Python time, also in a static
    build where both live in one binary."""
    prog = program("native_builtins.py")
    res = profile_run(python, prog, ["0.4"], tmp=tmp_path)
    m = markers(prog)
    lines = {n: line_time(res.profile, prog, m[n])
             for n in ("sorted", "findall", "arith", "pycall")}
    ctx = f"hot lines: {hot_lines(res.profile)}"
    for n, t in lines.items():
        # ~0.4 s of CPU each: 100 samples at least.
        assert t.seconds >= 0.1, f"{n}: {t.seconds:.2f} s; {ctx}"
    frac = {n: (t.native if n in ("sorted", "findall") else t.python) / t.percent
            for n, t in lines.items()}
    accuracy("sorted() line: native fraction", 1.0, frac["sorted"], ">= 0.90")
    accuracy("re.findall line: native fraction", 1.0, frac["findall"],
             ">= 0.90")
    accuracy("arithmetic line: python fraction", 1.0, frac["arith"], ">= 0.95")
    # 0.90: freeing sorted()'s result list runs at the next instruction (no
    # call: Python time), and a timer interrupt or page fault is system.
    assert frac["sorted"] >= 0.90, f"sorted: {frac['sorted']:.1%} native; {ctx}"
    assert frac["findall"] >= 0.90, (
        f"findall: {frac['findall']:.1%} native; {ctx}")
    assert frac["arith"] >= 0.95, f"arith: {frac['arith']:.1%} Python; {ctx}"
    assert lines["arith"].native / lines["arith"].percent <= 0.03, ctx
    # Calling a Python function runs C code under a call instruction too
    # (making and freeing its frame): that is the interpreter's work.  0.85:
    # a few small helpers (reference counting, the thread state) are shared
    # with C calls and stay native, and a stripped static build cannot name
    # its frame functions.
    accuracy("Python-call line: python fraction", 1.0, frac["pycall"],
             ">= 0.85")
    assert frac["pycall"] >= 0.85, (
        f"pycall: {frac['pycall']:.1%} Python; {ctx}")

    # The native time is the interpreter's own C functions: named where the
    # interpreter has a .symtab, addresses in it otherwise.
    want = {"sorted": r"sort|float|merge|list|binarysort|count_run",
            "findall": r"sre"}
    for n, pat in want.items():
        t = lines[n]
        syms = t.extra.get("native_symbols") or []
        interp = [s for s in syms if re.search(r"python3", s["module"])]
        pct = sum(s["percent"] for s in interp)
        accuracy(f"{n} line: % in the interpreter's symbols / native %", 100.0,
                 100.0 * pct / t.native, ">= 70")
        assert pct >= 0.7 * t.native, f"{n}: native symbols {syms}"
        if all(_has_symtab(mod) for mod in {s["module"] for s in interp}):
            named = sum(s["percent"] for s in interp
                        if re.search(pat, s["symbol"], re.I))
            assert named >= 0.5 * t.native, f"{n}: native symbols {syms}"


def _has_symtab(lib):
    p = subprocess.run(["readelf", "-S", "-W", str(lib)], capture_output=True,
                       text=True)
    return " .symtab " in p.stdout


@pytest.fixture(scope="module", params=INTERPRETER_IDS)
def sleep_run(request, tmp_path_factory):
    """sleep_half.py profiled once per interpreter, for two tests:
    (profile run, what the program measured)."""
    python = find_interpreter(request.param)
    tmp = tmp_path_factory.mktemp("sleep_half")
    side = tmp / "spent.json"
    res = profile_run(python, program("sleep_half.py"), ["0.6", side],
                      tmp=tmp)
    res.python = python
    return res, json.loads(side.read_text())


def kernel_has_task_work():
    """Whether this kernel lets BPF queue task work (Linux 6.18+), where
    off-CPU records are made at the switch-in instead of at every system call
    exit: the kfunc's name in the kernel's BTF."""
    with open("/sys/kernel/btf/vmlinux", "rb") as f:
        return b"\0bpf_task_work_schedule_resume_impl\0" in f.read()


def test_sleep_is_half_the_time(sleep_run, accuracy):
    res, spent = sleep_run
    hook = "task_work" if kernel_has_task_work() else "sys_exit"
    assert res.profile["scalene_bpf"]["bpf"]["offcpu_hook"] == hook
    check_sleep_half(res, spent, accuracy)


def test_sleep_at_syscall_exit(tmp_path, accuracy):
    """The same, with off-CPU records made at system call exit (the way of
    kernels without task work for BPF), on the default interpreter."""
    python = default_interpreter()
    side = tmp_path / "spent.json"
    res = profile_run(python, program("sleep_half.py"), ["0.6", side],
                      tmp=tmp_path,
                      env=clean_env({"SCALENE_BPF_SYSCALL_EXIT": "1"}))
    assert res.profile["scalene_bpf"]["bpf"]["offcpu_hook"] == "sys_exit"
    check_sleep_half(res, json.loads(side.read_text()), accuracy)


def check_sleep_half(res, spent, accuracy):
    prog = program("sleep_half.py")
    m = markers(prog)
    busy = line_time(res.profile, prog, m["busy"])
    check = line_time(res.profile, prog, m["check"])
    slp = line_time(res.profile, prog, m["sleep"])
    total = res.profile["scalene_bpf"]["total_sampled_s"]
    expect = 100.0 * spent["sleep_s"] / total
    expect_busy = 100.0 * spent["busy_cpu_s"] / total
    ctx = (f"sleep {spent['sleep_s']:.3f} s, busy {spent['busy_cpu_s']:.3f} "
           f"s CPU ({spent['busy_s']:.3f} s wall) of {total:.3f} s sampled; "
           f"hot lines: {hot_lines(res.profile)}")
    accuracy("sleep line n_sys_percent vs measured sleep", expect,
             slp.system, "3")
    busy_pct = busy.percent + check.percent
    half = 100.0 * slp.system / max(slp.system + busy_pct, 1e-9)
    accuracy("sleep share of sleep + busy lines, % (design)", 50.0, half,
             "46..54")
    accuracy("busy lines % vs measured busy CPU", expect_busy, busy_pct,
             "3")
    # 3 points: the sleep is one blocked interval, measured from the
    # kernel's switch timestamps, so it is nearly exact.
    assert abs(slp.system - expect) <= 3, ctx
    # Half: both halves last 0.6 s by design.  Compared with the busy half,
    # not with the whole run: the start-up (interpreter initialisation,
    # imports) is part of the total, 0.05-0.15 s here but 0.2 s and more
    # where the interpreter's files are not in the page cache yet.
    assert 46 <= half <= 54, ctx
    # Asleep is neither Python nor native.
    assert slp.python + slp.native <= 1.0, ctx
    # The busy loop (its two lines): its CPU time, within 3 points.
    assert abs(busy_pct - expect_busy) <= 3, ctx
    # Its inner line is pure Python (the clock's system calls are on the
    # `check` line).
    assert busy.python >= 0.9 * busy.percent, ctx


def test_function_time_is_the_sum_of_its_lines(sleep_run, accuracy):
    prog = program("sleep_half.py")
    res, _ = sleep_run
    main = function_time(res.profile, prog, "main")
    rows = [r for r in file_entry(res.profile, prog)["lines"]
            if r["start_function_line"] == main.extra["lineno"]]
    assert rows, "no line knows it is in main()"
    summed = sum(r["n_cpu_percent_python"] + r["n_cpu_percent_c"]
                 + r["n_sys_percent"] for r in rows)
    accuracy("main() % vs sum of its lines", summed, main.percent, "0.5")
    # The same samples, added up in another order: only rounding differs.
    assert abs(main.percent - summed) <= 0.5, (main.percent, summed)
    assert abs(main.system - sum(r["n_sys_percent"] for r in rows)) <= 0.5
    # main() is the whole program but its start-up: most of the time.
    assert main.percent >= 80, hot_lines(res.profile)


def test_file_percent_is_the_sum_of_its_lines(sleep_run):
    """A file's percent_cpu_time is its sampled time before the split into
    Python, native and system (Scalene's meaning): here half of it is the
    sleep, which is system time."""
    prog = program("sleep_half.py")
    res, _ = sleep_run
    fe = file_entry(res.profile, prog)
    summed = sum(r["n_cpu_percent_python"] + r["n_cpu_percent_c"]
                 + r["n_sys_percent"] for r in fe["lines"])
    assert abs(fe["percent_cpu_time"] - summed) <= 0.5, \
        (fe["percent_cpu_time"], summed)
    system = sum(r["n_sys_percent"] for r in fe["lines"])
    assert system >= 40, hot_lines(res.profile)


def test_interpreter_facts(sleep_run, request):
    """scalene_bpf.interpreters names the interpreter that ran: its full
    version, its path, whether it is statically linked."""
    res, _ = sleep_run
    ident = request.node.callspec.params["sleep_run"]
    p = subprocess.run([res.python, "-c", "import platform, sys; print("
                        "platform.python_version(), sys.executable)"],
                       capture_output=True, text=True, check=True)
    version = p.stdout.split()[0]
    interps = res.profile["scalene_bpf"]["interpreters"]
    assert len(interps) == 1, interps
    it = interps[0]
    static = ident.endswith("static")
    assert it["static"] is static, interps
    # The path of the code that runs Python: the executable when static,
    # else libpython (pyenv builds with --enable-shared).
    if static:
        assert os.path.realpath(it["path"]) == os.path.realpath(res.python)
    else:
        assert "libpython" in os.path.basename(it["path"]), interps
    assert it["version"] == version, f"{it['version']} for {version}"


def test_two_threads_1_to_3(python, tmp_path, accuracy):
    prog = program("threads_ratio.py")
    side = tmp_path / "threads.json"
    res = profile_run(python, prog, ["0.3", side], tmp=tmp_path,
                      opts=EXCLUDE_SPIN, gui=python == default_interpreter())
    m = markers(prog)
    light = line_time(res.profile, prog, m["light"])
    heavy = line_time(res.profile, prog, m["heavy"])
    info = json.loads(side.read_text())
    ratio = heavy.percent / light.percent if light.percent else float("inf")
    real = info["heavy_cpu_s"] / info["light_cpu_s"]
    ctx = (f"light {light.seconds:.3f} s (thread says "
           f"{info['light_cpu_s']:.3f}), heavy {heavy.seconds:.3f} s "
           f"({info['heavy_cpu_s']:.3f}); hot lines: {hot_lines(res.profile)}")
    accuracy("heavy/light line time (design)", 3.0, ratio, "")
    accuracy("heavy/light vs threads' thread_time", real, ratio, "10%")
    accuracy("light line s vs thread_time", info["light_cpu_s"],
             light.seconds, "10%")
    accuracy("heavy line s vs thread_time", info["heavy_cpu_s"],
             heavy.seconds, "10%")
    # 10% against what each thread measured of itself (time.thread_time
    # around its line), on the ratio and on each line's seconds: about 1.2 s
    # of CPU in all is ~1200 samples, and the lines hold each thread's CPU
    # time (its waiting for the GIL is parked time, not line time).
    assert abs(ratio / real - 1) <= 0.10, (
        f"ratio {ratio:.2f} vs {real:.2f}; {ctx}")
    assert abs(light.seconds / info["light_cpu_s"] - 1) <= 0.10, ctx
    assert abs(heavy.seconds / info["heavy_cpu_s"] - 1) <= 0.10, ctx
    # Not against the design's 3.0: the threads run the same code on one
    # CPU (see the program), but on a loaded machine their own clocks said
    # 2.69 to 3.46 while the profile matched those clocks within 1 %; the
    # program's drift is not the profiler's error.  It must still have done
    # what it is for: the heavy thread clearly the busier.
    assert real >= 2.0, f"the program's own ratio {real:.2f}; {ctx}"
    # Both lines are Python; neither waits on its own line.
    for t in (light, heavy):
        assert t.python >= 0.9 * t.percent, ctx

    threads = res.profile["scalene_bpf"]["threads"]
    by_tid = {t["tid"]: t for t in threads}
    for who in ("light", "heavy", "main"):
        tid = info[f"{who}_tid"]
        assert tid in by_tid, f"{who} thread {tid} not listed: {threads}"
    assert by_tid[info["main_tid"]]["main_thread"] is True, threads
    assert not by_tid[info["light_tid"]]["main_thread"], threads
    assert not by_tid[info["heavy_tid"]]["main_thread"], threads
    # threads[].cpu_s against each thread's whole CPU clock (its line plus
    # the barrier between rounds): 10%, as for the lines.
    for who in ("light", "heavy"):
        got = by_tid[info[f"{who}_tid"]]["cpu_s"]
        want = info[f"{who}_thread_cpu_s"]
        accuracy(f"threads[{who}].cpu_s vs thread_time", want, got, "10%")
        assert abs(got / want - 1) <= 0.10, (who, got, want, threads)


def test_handoff_threads_keep_their_cpu_time(python, tmp_path, accuracy):
    """Two threads handing a byte back and forth, free to use both CPUs:
    each CPU idles between the threads' short runs, and a fixed-period
    timer's fires that fall then are missed (the profile held 0.56-1.09x of
    the threads' own clocks before samples were weighed by the run time
    since the thread's previous one).  Each thread's cpu_s against its own
    CPU clock: 5 % and 20 ms (its run before its first switch under the
    profiler counts by periods, its run after its last sample is not seen)."""
    prog = program("handoff.py")
    side = tmp_path / "threads.json"
    res = profile_run(python, prog, ["40000", side], tmp=tmp_path, opts=["--cpu-only"])
    info = json.loads(side.read_text())
    threads = res.profile["scalene_bpf"]["threads"]
    by_tid = {t["tid"]: t for t in threads}
    for who in ("main", "echo"):
        tid = info[f"{who}_tid"]
        assert tid in by_tid, f"{who} thread {tid} not listed: {threads}"
        got, want = by_tid[tid]["cpu_s"], info[f"{who}_thread_cpu_s"]
        accuracy(f"hand-off: threads[{who}].cpu_s vs thread_time", want, round(got, 3),
                 "5% + 20 ms")
        assert abs(got - want) <= 0.05 * want + 0.020, (who, got, want, threads)
    # The time is on the threads' own lines (the calls into the kernel:
    # system and native time of the two lines, besides the blocked time).
    m = markers(prog)
    for who, name in (("main", "ping"), ("echo", "echo")):
        t = line_time(res.profile, prog, m[name])
        assert t.seconds >= 0.5 * info[f"{who}_thread_cpu_s"], (name, t, hot_lines(res.profile))


def test_rounds_of_one_period_do_not_alias(python, tmp_path, accuracy):
    """A program whose rounds are exactly one sampling period long, 30:70
    between two lines: with a fixed period every fire falls at the same
    point of the round and one line takes nearly all (98.9 % and 0 % were
    measured); the timers' periods are drawn anew every 20 ms, so each line
    gets its share, against the CPU time the thread measured on each."""
    prog = program("alias_rounds.py")
    side = tmp_path / "spent.json"
    res = profile_run(python, prog, ["2000", side], tmp=tmp_path, opts=["--cpu-only"])
    m = markers(prog)
    spent = json.loads(side.read_text())
    times = {n: line_time(res.profile, prog, m[n]) for n in ("short", "long")}
    got = shares([times["short"].percent, times["long"].percent])
    real = shares([spent["short"], spent["long"]])
    ctx = f"profile {got}, the thread's clock {real}; hot lines: {hot_lines(res.profile)}"
    accuracy("one-period rounds: short line share, %", real[0], round(got[0], 2), "5")
    # 5 points: 2000 rounds are about 2000 samples, a share's sampling
    # error about 1 point.
    assert abs(got[0] - real[0]) <= 5, ctx
