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

from e2e_helpers import (INTERPRETER_IDS, OTHER_KIND, PURE_STRAY, check_share,
                         clean_env, default_interpreter, file_entry,
                         find_interpreter, function_time, hot_lines,
                         line_time, markers, period_s, profile_run, program,
                         samples_behind, unseen_tail_s)

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
    check_split(res.profile, prog, json.loads(side.read_text()), accuracy)


def check_split(profile, prog, spent, accuracy, label=""):
    """split.py's three lines against the program's clocks and its design
    (20/30/50), and each one pure Python."""
    m = markers(prog)
    names = ("twenty", "thirty", "fifty")
    times = [line_time(profile, prog, m[n]) for n in names]
    got = shares([t.percent for t in times])
    real = shares([spent[n] for n in names])
    # The shares are of the three lines' samples: about 1000 for the 1 s
    # of CPU, which puts a share's binomial range at 6 to 8 points either
    # side (for p_fail 1e-6; the rounds spread the samples evenly, and the
    # measured spread is about a third of that).  A sample taken just
    # after a line change stands for the run since the previous one, partly
    # the line before's: each line gains about as much from the one before
    # it as it gives to the one after (the rounds cycle through the three),
    # so that needs no term of its own.
    n = samples_behind(profile, sum(t.seconds for t in times))
    ctx = (f"profile {[round(g, 2) for g in got]}, measured by the program "
           f"{[round(r, 2) for r in real]}; an iteration took "
           f"{spent['work_s_per_iter'] * 1e9:.1f} ns in the work, "
           f"{spent['calibrated_s_per_iter'] * 1e9:.1f} ns when calibrated; "
           f"hot lines: {hot_lines(profile)}")
    for name, g, r, nominal in zip(names, got, real, (20, 30, 50)):
        check_share(g, r, n, f"{label}{name} share vs program's thread_time, %",
                    whole=100, accuracy=accuracy, ctx=ctx)
        # Against the design: the same range, widened by how far the
        # program's own clocks were from it (the cost of an iteration
        # drifts with the machine; the rounds spread that over the three
        # lines alike, but not exactly).
        check_share(g, nominal, n, f"{label}{name} share of the 3 lines, %",
                    whole=100, extra=abs(r - nominal), accuracy=accuracy,
                    ctx=ctx)
    # The three lines are pure Python: native and system time are strays.
    for name, t in zip(names, times):
        check_share(t.python / t.percent, 1 - PURE_STRAY,
                    samples_behind(profile, t.seconds),
                    f"{label}{name} python fraction", side="low",
                    accuracy=accuracy, ctx=ctx)


def test_python_line_vs_native_line(python, tmp_path, accuracy):
    prog = program("native_sha.py")
    # Also rendered in the browser GUI (once): native symbols are an extra
    # key the viewers must ignore.
    res = profile_run(python, prog, ["0.4"], tmp=tmp_path,
                      gui=python == default_interpreter())
    m = markers(prog)
    py = line_time(res.profile, prog, m["python"])
    nat = line_time(res.profile, prog, m["native"])
    # Where the other kind's time went, by symbol, should it be too much.
    ctx = (f"hot lines: {hot_lines(res.profile)}; python line's native "
           f"symbols {py.extra.get('native_symbols')}")
    # Each part runs ~0.4 s of CPU: both lines must carry real time (0.1 s
    # is 100 samples, enough for the fractions below to mean something).
    assert py.seconds >= 0.1 and nat.seconds >= 0.1, ctx
    n_py = samples_behind(res.profile, py.seconds)
    n_nat = samples_behind(res.profile, nat.seconds)
    # The loop line runs only bytecode; the hash line spends all but a few
    # microseconds per 16 MiB in OpenSSL (GIL released): each has only
    # strays of other kinds (kernel samples among them), and of the other
    # user-mode kind fewer still; the binomial range at each line's samples
    # on top (~400 each: a native share of the loop line up to ~4 %).  Once,
    # under load, the loop line had 4.84 of its 48.87 points native: ~420
    # samples, ~42 of them native, far outside that range: not sampling
    # noise (the symbols in the message say where it went).
    check_share(py.python / py.percent, 1 - PURE_STRAY, n_py,
                "python line: python fraction", side="low",
                accuracy=accuracy, ctx=ctx)
    check_share(nat.native / nat.percent, 1 - PURE_STRAY, n_nat,
                "native line: native fraction", side="low",
                accuracy=accuracy, ctx=ctx)
    check_share(py.native / py.percent, OTHER_KIND, n_py,
                "python line: native fraction", side="high",
                accuracy=accuracy, ctx=ctx)
    check_share(nat.python / nat.percent, OTHER_KIND, n_nat,
                "native line: python fraction", side="high",
                accuracy=accuracy, ctx=ctx)

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
    n = {k: samples_behind(res.profile, t.seconds) for k, t in lines.items()}
    # Each line's fraction has the binomial range at its own samples (~400)
    # below its expectation.  sorted(): freeing its result list runs at the
    # next instruction (no call: Python time), 4 to 6 % measured, and a
    # timer interrupt or page fault is system.
    check_share(frac["sorted"], 1 - 0.06, n["sorted"], "sorted() line: native fraction",
                side="low", accuracy=accuracy, ctx=ctx)
    check_share(frac["findall"], 1 - PURE_STRAY, n["findall"],
                "re.findall line: native fraction", side="low",
                accuracy=accuracy, ctx=ctx)
    check_share(frac["arith"], 1 - PURE_STRAY, n["arith"],
                "arithmetic line: python fraction", side="low",
                accuracy=accuracy, ctx=ctx)
    check_share(lines["arith"].native / lines["arith"].percent, OTHER_KIND,
                n["arith"], "arithmetic line: native fraction", side="high",
                accuracy=accuracy, ctx=ctx)
    # Calling a Python function runs C code under a call instruction too
    # (making and freeing its frame): that is the interpreter's work.  A few
    # small helpers (reference counting, the thread state) are shared with
    # C calls and stay native, and a stripped static build cannot name its
    # frame functions: up to 7 % native measured (3.9, 3.10).
    check_share(frac["pycall"], 1 - 0.08, n["pycall"],
                "Python-call line: python fraction", side="low",
                accuracy=accuracy, ctx=ctx)

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


def sampled_share(res, seconds):
    """seconds, as a percentage of the time the profile sampled."""
    return 100.0 * seconds / res.profile["scalene_bpf"]["total_sampled_s"]


def check_sleep_half(res, spent, accuracy):
    prog = program("sleep_half.py")
    m = markers(prog)
    busy = line_time(res.profile, prog, m["busy"])
    check = line_time(res.profile, prog, m["check"])
    slp = line_time(res.profile, prog, m["sleep"])
    total = res.profile["scalene_bpf"]["total_sampled_s"]
    expect = sampled_share(res, spent["sleep_s"])
    expect_busy = sampled_share(res, spent["busy_cpu_s"])
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
    check_share(busy.python / busy.percent, 1 - PURE_STRAY,
                samples_behind(res.profile, busy.seconds),
                "busy line python fraction", side="low", ctx=ctx)


def test_function_time_is_the_sum_of_its_lines(sleep_run, accuracy):
    prog = program("sleep_half.py")
    res, spent = sleep_run
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
    # main() is the whole program but its start-up, which is not ours to
    # bound (0.05-0.5 s, more on a loaded host or a cold page cache): what
    # the program measured inside main(), busy CPU and sleep, as a share of
    # the time sampled, within the 3 points check_sleep_half allows each.
    inside = sampled_share(res, spent["busy_cpu_s"] + spent["sleep_s"])
    accuracy("main() % vs its measured busy CPU + sleep", inside,
             main.percent, ">= -6")
    assert main.percent >= inside - 6, (inside, hot_lines(res.profile))


def test_file_percent_is_the_sum_of_its_lines(sleep_run):
    """A file's percent_cpu_time is its sampled time before the split into
    Python, native and system (Scalene's meaning): here half of it is the
    sleep, which is system time."""
    prog = program("sleep_half.py")
    res, spent = sleep_run
    fe = file_entry(res.profile, prog)
    summed = sum(r["n_cpu_percent_python"] + r["n_cpu_percent_c"]
                 + r["n_sys_percent"] for r in fe["lines"])
    assert abs(fe["percent_cpu_time"] - summed) <= 0.5, \
        (fe["percent_cpu_time"], summed)
    # The file's system time is at least the sleep the program measured, as
    # a share of the time sampled (the start-up is in the total too).
    system = sum(r["n_sys_percent"] for r in fe["lines"])
    slept = sampled_share(res, spent["sleep_s"])
    assert system >= slept - 3, (slept, hot_lines(res.profile))


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


def test_parallel_threads(python, tmp_path, accuracy):
    """Two threads with the same work: side by side on a free-threaded build
    (two CPUs: the lines add up to about twice the wall time), handing the
    GIL over every 5 ms on the others.  Each line holds its thread's CPU
    time, as the thread's own clock has it: without the time the hypervisor
    took its CPU away (steal, which was seen to put 10 % on both lines of
    test_two_threads_1_to_3 on a loaded host before it was left out)."""
    prog = program("threads_parallel.py")
    side = tmp_path / "threads.json"
    res = profile_run(python, prog, ["0.5", side], tmp=tmp_path, opts=EXCLUDE_SPIN)
    m = markers(prog)
    info = json.loads(side.read_text())
    lines = {who: line_time(res.profile, prog, m[who]) for who in ("left", "right")}
    ctx = (f"program {info}; lines " +
           ", ".join(f"{w} {t.seconds:.3f} s ({t.cpu_seconds:.3f} on CPU)"
                     for w, t in lines.items()) +
           f"; hot lines: {hot_lines(res.profile)}")
    both = sum(t.cpu_seconds for t in lines.values())
    real = info["left_cpu_s"] + info["right_cpu_s"]
    free_threaded = res.profile["scalene_bpf"]["interpreters"][0]["free_threaded"]
    assert free_threaded == info["free_threaded"], ctx
    accuracy("threads' CPU / wall (program)", 2.0 if free_threaded else 1.0,
             round(real / info["wall_s"], 3), "")
    # The lines' blocked time is what the threads waited for besides the
    # GIL (its waits are parked: with a GIL, half of each thread's time):
    # page faults that waited for the address space's lock, 0-10 ms seen.
    for who, t in lines.items():
        assert t.seconds - t.cpu_seconds <= 0.1 * t.cpu_seconds, (who, ctx)
    tail, period = unseen_tail_s(res.profile), period_s(res.profile)
    for who, t in lines.items():
        whole = info[f"{who}_thread_cpu_s"]
        check_share(t.cpu_seconds, info[f"{who}_cpu_s"], samples_behind(res.profile, whole),
                    f"{who} line CPU s vs thread_time", whole=whole,
                    extra=(tail + 2 * period, 2 * period), accuracy=accuracy, ctx=ctx)
    check_share(lines["left"].cpu_seconds / both, info["left_cpu_s"] / real,
                samples_behind(res.profile, both),
                "left share of the two lines vs threads' thread_time",
                accuracy=accuracy, ctx=ctx)


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
    # Against what each thread measured of itself (time.thread_time around
    # its line): the lines hold each thread's CPU time (its waiting for the
    # GIL is parked time, not line time).  The 1:3 split is the heavy
    # line's share of the two lines' samples (~1200 for 1.2 s of CPU: the
    # binomial range is about 4 points either side of 75 %).
    both = light.cpu_seconds + heavy.cpu_seconds
    n_both = samples_behind(res.profile, both)
    check_share(heavy.cpu_seconds / both, real / (1 + real),
                n_both, "heavy share of the two lines vs threads' thread_time",
                accuracy=accuracy, ctx=ctx)
    # Each line's seconds is its share of its thread's samples (the thread
    # also waits at a barrier between rounds, on another line), times the
    # thread's time, which the weights give but for what the thread's own
    # time lacks (below: the same terms as for threads[].cpu_s, at the end
    # of this test; 0.1 to 6 ms measured) and a period either side of the
    # line's stretches overall (the samples that straddle their ends).
    tail, period = unseen_tail_s(res.profile), period_s(res.profile)
    for who, t in (("light", light), ("heavy", heavy)):
        whole = info[f"{who}_thread_cpu_s"]
        check_share(t.cpu_seconds, info[f"{who}_cpu_s"], samples_behind(res.profile, whole),
                    f"{who} line CPU s vs thread_time", whole=whole,
                    extra=(tail + 2 * period, 2 * period), accuracy=accuracy, ctx=ctx)
    # Not against the design's 3.0: the threads run the same code on one
    # CPU (see the program), but on a loaded machine their own clocks said
    # 2.69 to 3.46 while the profile matched those clocks within 1 %; the
    # program's drift is not the profiler's error.  It must still have done
    # what it is for: the heavy thread clearly the busier.
    assert real >= 2.0, f"the program's own ratio {real:.2f}; {ctx}"
    # Both lines are Python; neither waits on its own line.
    for who, t in (("light", light), ("heavy", heavy)):
        check_share(t.python / t.percent, 1 - PURE_STRAY,
                    samples_behind(res.profile, t.seconds),
                    f"{who} line python fraction", side="low", ctx=ctx)

    threads = res.profile["scalene_bpf"]["threads"]
    by_tid = {t["tid"]: t for t in threads}
    for who in ("light", "heavy", "main"):
        tid = info[f"{who}_tid"]
        assert tid in by_tid, f"{who} thread {tid} not listed: {threads}"
    assert by_tid[info["main_tid"]]["main_thread"] is True, threads
    assert not by_tid[info["light_tid"]]["main_thread"], threads
    assert not by_tid[info["heavy_tid"]]["main_thread"], threads
    # threads[].cpu_s against each thread's whole CPU clock (its line plus
    # the barrier between rounds): the weights add up to its run time, but
    # for its run after its last sample (unseen_tail_s, as in the hand-off
    # test) and a period for its start and for its exit after it read its
    # clock.  Measured on a loaded 2-CPU machine: 0.1 to 6 ms short.
    for who in ("light", "heavy"):
        got = by_tid[info[f"{who}_tid"]]["cpu_s"]
        want = info[f"{who}_thread_cpu_s"]
        lo, hi = want - tail - period, want + 2 * period
        accuracy(f"threads[{who}].cpu_s vs thread_time", want, round(got, 4),
                 f"{lo:.4f}..{hi:.4f}")
        assert lo <= got <= hi, (who, got, want, threads)


def test_handoff_threads_keep_their_cpu_time(python, tmp_path, accuracy):
    """Two threads handing a byte back and forth, free to use both CPUs:
    each CPU idles between the threads' short runs, and a fixed-period
    timer's fires that fall then are missed (the profile held 0.56-1.09x of
    the threads' own clocks before samples were weighed by the run time
    since the thread's previous one).  Each thread's cpu_s against its own
    CPU clock: the weights add up to the thread's run time exactly, but for
    its run after its last sample, which is not seen (unseen_tail_s: the
    fires catch a thread that runs in bursts at random points, so that run
    is exponential, one period on average: 17 ms at most but once in a
    million), and for its start-up, counted by periods until its first
    switch under the profiler (a period either way).  Above the clock: what
    the thread ran after it was read (the program reads both clocks last,
    then writes a string and ends: exit work, tens of microseconds, or the
    address space's teardown if it falls to that thread), a period.  The
    clocks were once read before the results were written: on a slow 2-CPU
    machine (each thread 1.5-1.9 s of CPU for the round trips below), the
    main thread's open() and json.dump() after its read took 4-8 ms and
    failed every interpreter.  Measured since, on that machine: -2.3 to
    +1.5 ms in 39 runs (3.9, 3.12, 3.13t, 3.14, 3.15), and once +3.6 ms
    on 3.15: the address space's teardown, which the profile puts on no
    line (the bound above adds that time, as the profile reports it).  100 000 round trips give each thread 0.25-1.9 s
    of CPU, so that a profile that lost 10 % of a thread's time (as
    fixed-period samples did: 0.50-1.06x) fails."""
    prog = program("handoff.py")
    side = tmp_path / "threads.json"
    res = profile_run(python, prog, ["100000", side], tmp=tmp_path, opts=["--cpu-only"])
    info = json.loads(side.read_text())
    threads = res.profile["scalene_bpf"]["threads"]
    by_tid = {t["tid"]: t for t in threads}
    tail, period = unseen_tail_s(res.profile), period_s(res.profile)
    # The process's end after the clocks were read (os._exit: the kernel
    # tears the address space down in the last thread to let go of it) has
    # no Python frame to put it on: it is in the time the profile counts on
    # no thread state or no readable stack, as the interpreter's start-up
    # (which the clocks do count) is.
    un = res.profile["scalene_bpf"]["unattributed"]
    exit_s = un["threads_without_python_s"] + un["unreadable_stacks_s"]
    for who in ("main", "echo"):
        tid = info[f"{who}_tid"]
        assert tid in by_tid, f"{who} thread {tid} not listed: {threads}"
        got, want = by_tid[tid]["cpu_s"], info[f"{who}_thread_cpu_s"]
        lo, hi = want - tail - period, want + 2 * period + exit_s
        accuracy(f"hand-off: threads[{who}].cpu_s vs thread_time", want, round(got, 4),
                 f"{lo:.4f}..{hi:.4f}")
        assert lo <= got <= hi, (who, got, want, threads)
    # The loops' time is on their own lines (the calls into the kernel:
    # system and native time, besides the blocked time): their CPU time
    # against what each thread measured around its loop, the same way, but
    # for samples whose stack could not be read (they are on no line), and
    # the first sample in a loop, which stands for the thread's run since
    # its previous sample (before the loop: a period or two).
    m = markers(prog)
    facts = res.profile["scalene_bpf"]
    unread = facts["unattributed"]["unreadable_stacks_s"]
    for who, names in (("main", ("ping_loop", "ping_write", "ping")),
                       ("echo", ("echo_loop", "echo"))):
        cpu = sum(line_time(res.profile, prog, m[n]).cpu_seconds for n in names)
        want = info[f"{who}_loop_cpu_s"]
        lo, hi = want - tail - period - unread, want + 2 * period
        accuracy(f"hand-off: {who} loop lines' CPU s vs its clock", want, round(cpu, 4),
                 f"{lo:.4f}..{hi:.4f}")
        assert lo <= cpu <= hi, (who, cpu, want, hot_lines(res.profile))


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
    # 2000 rounds are about 2000 samples of the two lines: the short
    # line's share has a binomial range of about 5 points either side.
    n = samples_behind(res.profile, times["short"].seconds + times["long"].seconds)
    check_share(got[0], real[0], n, "one-period rounds: short line share, %",
                whole=100, accuracy=accuracy, ctx=ctx)
