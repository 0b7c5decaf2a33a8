# SPDX-License-Identifier: BSD-2-Clause
"""Helpers of the end-to-end suite: finding the interpreters, running
scalene-bpf, checking what it leaves behind, reading profiles.

Every invocation of scalene-bpf goes through invoke(), which afterwards
checks that no BPF program or link of ours is left in the kernel; every
profile goes through check_compat(): Scalene's strict schema, the viewers'
invariants and `scalene view --cli` (tests/compat/scalene_compat.py), the
browser GUI where a test asks for it, and our own `scalene-bpf view --cli`.
"""

import json
import math
import os
import pwd
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
PROGRAMS = HERE / "programs"
# The binary under test: the one `make` builds, unless $SCALENE_BPF names
# another.
BIN = Path(os.environ.get("SCALENE_BPF") or REPO / "scalene-bpf")
# What `make` builds beside it (the test helpers under tests/).
BUILD = REPO / "build"

sys.path.insert(0, str(REPO / "tests" / "compat"))
sys.path.insert(0, str(REPO / "tests"))
import scalene_compat as compat  # noqa: E402
from interpreters import INTERPRETER_IDS, INTERPRETERS, locate  # noqa: E402,F401

# Seconds one scalene-bpf invocation may take before the test fails.  The
# programs run a few seconds at most; the rest is start-up and writing.
RUN_TIMEOUT = 90


# Our BPF programs, by the names the kernel keeps (15 characters at most).
OUR_PROGS = frozenset({"on_cpu_sample", "on_switch", "on_switch_work", "on_switch_task_",
                       "on_sys_exit", "on_fork",
                       "on_exec", "on_exit", "on_malloc", "on_free",
                       "on_memcpy", "on_sampler_init", "on_sampler_exit"})

# The variables through which sudo names the invoking user: scalene-bpf runs
# the program as that user.  The suite runs as root on purpose and sets them
# only where a test asks for it, also when it runs under `sudo make test`.
SUDO_VARS = ("SUDO_UID", "SUDO_GID", "SUDO_USER", "SUDO_COMMAND")


# --------------------------------------------------------------------------
# Interpreters
# --------------------------------------------------------------------------

_interp_cache = {}


def kernel_has_uprobe_multi():
    """Whether this kernel has uprobe_multi links (Linux 6.6): its BTF names
    their link type.  Without them the memory probes are perf-event uprobes,
    as the loader finds by trying."""
    try:
        return b"bpf_uprobe_multi_link" in Path("/sys/kernel/btf/vmlinux").read_bytes()
    except OSError:
        return False


def debian_build(path):
    """Whether the interpreter is one of Debian's builds (static, stripped,
    built with LTO), not pyenv's."""
    return any(path == where for ident, where, _ in INTERPRETERS
               if ident.startswith(("debian", "sid")))


def find_interpreter(ident):
    """Absolute path of the interpreter with that test id, or skip."""
    _, where, install = next(i for i in INTERPRETERS if i[0] == ident)
    if ident not in _interp_cache:
        _interp_cache[ident] = locate(where)
    if _interp_cache[ident] is None:
        pytest.skip(f"interpreter {ident} ({where}) not found or not "
                    f"runnable: install it with `{install}`")
    return _interp_cache[ident]


def default_interpreter():
    """The interpreter for tests of the CLI itself, and the one whose
    profiles also go through the (slow: ~6 s each) browser-GUI check: the
    first present of these."""
    for ident in ("py3.12", "py3.11", "debian3.11-static", "py3.13",
                  "py3.10", "py3.9"):
        try:
            return find_interpreter(ident)
        except pytest.skip.Exception:
            continue
    pytest.skip("no interpreter of " + ", ".join(INTERPRETER_IDS) +
                " is installed (pyenv install 3.12.1)")


# --------------------------------------------------------------------------
# BPF objects left in the kernel
# --------------------------------------------------------------------------

def _bpftool(what):
    # bpftool walks the ids, then opens each: an object freed in between
    # (any process's, on a busy machine) makes it fail.  Try again.
    for _ in range(10):
        p = subprocess.run(["bpftool", what, "list", "-j"],
                           capture_output=True, text=True, timeout=30)
        if p.returncode == 0:
            return json.loads(p.stdout or "[]")
        time.sleep(0.05)
    raise AssertionError(f"bpftool {what} list failed: {p.stderr}{p.stdout}")


def bpf_snapshot():
    """{('prog'|'link', id): description} of the BPF objects of ours."""
    progs = {p["id"]: p.get("name", "") for p in _bpftool("prog")
             if p.get("name") in OUR_PROGS}
    objs = {("prog", i): f"prog {i} {n}" for i, n in progs.items()}
    for link in _bpftool("link"):
        if link.get("prog_id") in progs:
            objs[("link", link["id"])] = (
                f"link {link['id']} -> prog {link['prog_id']} "
                f"{progs[link['prog_id']]} "
                f"({link.get('tp_name', link.get('type'))})")
    return objs


def _holders(kind, ident):
    """Processes with an fd on that BPF prog or link: [(pid, comm)]."""
    key = f"{kind}_id:"
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            for fi in (d / "fdinfo").iterdir():
                try:
                    text = fi.read_text()
                except OSError:
                    continue
                if re.search(rf"^{key}\s+{ident}$", text, re.M):
                    comm = (d / "comm").read_text().strip()
                    out.append((int(d.name), comm))
                    break
        except OSError:
            continue
    return out


def _other_profilers(our_pids):
    """Live processes that this test did not start and that may hold BPF
    objects of our names: another scalene-bpf, a bpftool listing them."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) not in our_pids:
            try:
                comm = (d / "comm").read_text().strip()
                # Another build of ours under another name (a copy named
                # scalene-bpf.base, say) is another profiler too; our own
                # releasing child is judged apart (RELEASER).
                if comm == "bpftool" or (comm.startswith("scalene-bpf")
                                         and comm != RELEASER):
                    out.append(int(d.name))
            except OSError:
                pass
    return out


# The comm of the child that releases the uprobes after a run
# (user/collect/loader.c, hand_off_uprobes).
RELEASER = "scalene-bpf-rel"


def check_no_bpf_left(before, our_pids=()):
    """Fail if a BPF program or link of ours appeared since `before` and
    stays.

    The kernel frees them after the last reference goes, not at once: after
    a tracepoint detach it waits for an RCU grace period, which takes
    seconds on a loaded machine.  So an object that no process holds gets 15
    s to go, and so does one held by scalene-bpf's releasing child (which
    lets the uprobes go after scalene-bpf has exited, ~0.1 s each); one that
    another process still holds (the profiled program, a child that
    inherited a descriptor) is a leak at once.  On a shared machine
    another scalene-bpf (a concurrent session, not one we started) may hold
    objects of the same names: those are not ours to judge, nor are unheld
    ones while it runs (it may be closing them as we look).
    """
    t0 = time.monotonic()
    while True:
        new = {k: v for k, v in bpf_snapshot().items() if k not in before}
        if not new:
            return
        others = _other_profilers(our_pids)
        leaked, pending = [], False
        for (kind, ident), desc in sorted(new.items()):
            holders = _holders(kind, ident)
            mine = [h for h in holders if h[0] not in others]
            if holders and not mine:
                continue
            releasing = [h for h in mine if h[1] == RELEASER]
            if releasing and len(releasing) == len(mine) and \
                    time.monotonic() - t0 < 15:
                pending = True
                continue
            if not holders and others:
                continue
            if not holders and time.monotonic() - t0 < 15:
                pending = True
                continue
            leaked.append(f"{desc} held by {holders or 'no process'}")
        if not pending:
            break
        time.sleep(0.2)
    assert not leaked, ("BPF objects of ours left after scalene-bpf ended "
                        f"({time.monotonic() - t0:.1f} s ago):\n  "
                        + "\n  ".join(leaked))


# --------------------------------------------------------------------------
# Running scalene-bpf
# --------------------------------------------------------------------------

def clean_env(extra=None):
    """The environment for scalene-bpf: ours, without sudo's variables and
    without the test venv's Python settings."""
    env = {k: v for k, v in os.environ.items()
           if k not in SUDO_VARS and k not in ("PYTHONPATH", "PYTHONHOME",
                                               "VIRTUAL_ENV",
                                               "PYTHONSTARTUP")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if extra:
        env.update(extra)
    return env


# Set by tools/vmtest in its guests: the kernel matrix checks what the
# kernel changes.  Scalene's own viewers (its terminal view, its GUI in
# Chromium) check the JSON, which the host suite checks the same, and at
# software emulation's speed they outlast their timeouts; a bound on what
# our own user-space work costs (top's drawing), or on an event loop's idle
# time in total, measures the emulation's clocks.  A run's limit in time
# (invoke's timeout, which catches hangs) is 3 times as long there: the
# loader's start alone, loading and verifying the 5.10 build's BPF, took
# 29-36 s of the 60 that `--pid --memory --duration 2` had (software
# emulation of 5.10, 2026-12-02), where it takes 0.3 s on this host.
IN_KERNEL_MATRIX = os.environ.get("SCALENE_BPF_VMTEST") == "1"


def hang_limit(seconds):
    """The time a run of ours may take before a test calls it hung."""
    return seconds * 3 if IN_KERNEL_MATRIX else seconds


@dataclass
class Result:
    argv: list
    rc: int
    stdout: str
    stderr: str
    wall_s: float
    path: Path = None
    profile: dict = None
    pid: int = 0

    def describe(self):
        return (f"$ {' '.join(map(str, self.argv))}\nexit {self.rc} after "
                f"{self.wall_s:.2f} s\n--- stdout\n{self.stdout[-3000:]}\n"
                f"--- stderr\n{self.stderr[-3000:]}")


def invoke(argv, *, cwd, timeout=RUN_TIMEOUT, input=None, env=None,
           stdout=subprocess.PIPE, stdin=None, during=None):
    """Run scalene-bpf with argv (without the binary), checking afterwards
    that it left no BPF object behind.  during(proc), if given, runs once it
    started (it may read proc.stdout).  Returns a Result (no profile yet)."""
    timeout = hang_limit(timeout)
    before = bpf_snapshot()
    full = [str(BIN)] + [str(a) for a in argv]
    t0 = time.monotonic()
    proc = subprocess.Popen(
        full, cwd=str(cwd), env=env if env is not None else clean_env(),
        stdin=subprocess.PIPE if input is not None else
        (stdin if stdin is not None else subprocess.DEVNULL),
        stdout=stdout, stderr=subprocess.PIPE)
    if during is not None:
        try:
            during(proc)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    try:
        out, err = proc.communicate(
            input=input.encode() if isinstance(input, str) else input,
            timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        # A program it started may hold the pipes still: then what was
        # read of them so far.
        try:
            out, err = proc.communicate(timeout=hang_limit(30))
        except subprocess.TimeoutExpired as e:
            proc.wait()
            err = (e.stderr or b"") + b"\n(a program it started holds its pipes still)"
        pytest.fail(f"scalene-bpf did not finish in {timeout} s:\n$ "
                    f"{' '.join(full)}\n{(err or b'').decode()[-3000:]}")
    res = Result(full, proc.returncode,
                 (out or b"").decode("utf-8", "replace"),
                 (getattr(proc, "stderr_read", b"") + (err or b"")).decode("utf-8", "replace"),
                 time.monotonic() - t0, pid=proc.pid)
    check_no_bpf_left(before, our_pids={proc.pid})
    return res


def wait_following(proc):
    """Waits, in an `invoke` during(), until a system-wide run (given -v)
    says it follows the host's processes: BPF is in place and the scan of
    /proc is done, so that a program started from here on is seen by its
    exec.  A fixed wait is not enough: the loader's start (loading and
    verifying BPF, reading every Python process's interpreter) took 7 s
    under the kernel matrix's software emulation, and a program that started
    and ended in between was seen by neither.  What it read of stderr goes
    into the Result."""
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if b"following" in line and b"Ctrl-C" in line:
            proc.stderr_read = b"".join(seen)
            return
    proc.stderr_read = b"".join(seen)
    raise AssertionError("the run ended before it said it followed any process "
                         "(the line comes with -v):\n"
                         + proc.stderr_read.decode("utf-8", "replace")[-3000:])


def check_compat(path, gui=False):
    """The four compatibility checks of tests/compat (the GUI only when
    asked: it takes seconds; Scalene's viewers not in the kernel matrix)
    and our own viewer."""
    compat.validate_strict(str(path))
    profile = compat.load_profile(str(path))
    compat.check_gui_invariants(profile, name=str(path))
    if not IN_KERNEL_MATRIX:
        compat.view_cli(str(path))
    if gui and not IN_KERNEL_MATRIX:
        if compat.find_chromium() is None:
            pytest.fail("Chromium not found for the GUI check (apt-get "
                        "install chromium, or set SCALENE_COMPAT_CHROMIUM)")
        compat.render_gui(str(path))
    p = subprocess.run([str(BIN), "view", "--cli", str(path)],
                       capture_output=True, text=True, timeout=hang_limit(60),
                       env=clean_env(), stdin=subprocess.DEVNULL)
    assert p.returncode == 0, (f"scalene-bpf view --cli {path} exited "
                               f"{p.returncode}: {p.stderr}")
    assert p.stdout.strip(), f"scalene-bpf view --cli {path} printed nothing"
    return profile


# BPF counters (scalene_bpf.bpf) that mean lost or wrong data: zero in the
# suite's small programs.
LOSS_COUNTERS = ("lost_ringbuf_full", "memory_lost_ringbuf_full", "bad_records",
                 "process_table_full", "process_events_lost")
# A thread with no BPF state yet whose record found this CPU's task-storage
# lock held by another of our programs (a sample's interrupt landing inside
# sched_switch's lookup, or inside a probe's: the GPU test's launch probes
# take it thousands of times a second): that record is walked without the
# frame cache and the state is made at the next one.  The most seen: 6 in
# 2666 samples (0.23 %, the GPU test on Linux 6.1 in the kernel matrix).
# State that is not being made at all would count nearly every sample; 1 %
# keeps four times the most seen below the bound and stays far from that.
TRANSIENT_COUNTERS = {"thread_state_unavailable": 0.01}


def finish(res, out, expect_rc=0, gui=False):
    """Assert the exit status, then load and check the profile at out."""
    assert res.rc == expect_rc, (f"expected exit {expect_rc}\n"
                                 + res.describe())
    assert Path(out).is_file(), "no profile written\n" + res.describe()
    res.path = Path(out)
    res.profile = check_compat(out, gui=gui)
    facts = res.profile.get("scalene_bpf")
    assert isinstance(facts, dict), "no scalene_bpf key in the profile"
    lost = {k: facts.get("bpf", {}).get(k) for k in LOSS_COUNTERS
            if facts.get("bpf", {}).get(k)}
    assert not lost, f"data lost or bad: {lost}\n" + res.describe()
    samples = facts.get("bpf", {}).get("samples") or 0
    for name, share in TRANSIENT_COUNTERS.items():
        got = facts.get("bpf", {}).get(name) or 0
        assert got <= max(2, share * samples), (
            f"{name} = {got} in {samples} samples\n" + res.describe())
    return res


def profile_run(python, program, args=(), *, tmp, opts=(), expect_rc=0,
                input=None, cwd=None, timeout=RUN_TIMEOUT, gui=False,
                env=None, stdout=subprocess.PIPE, out=None):
    """`scalene-bpf run -o OUT [opts] --python PY program args`."""
    out = Path(out or Path(tmp) / "profile.json")
    argv = ["run", "-o", out, *opts, "--python", python, program, *args]
    res = invoke(argv, cwd=cwd or tmp, timeout=timeout, input=input, env=env,
                 stdout=stdout)
    return finish(res, out, expect_rc=expect_rc, gui=gui)


def profile_command(command, *, tmp, opts=(), expect_rc=0, cwd=None,
                    timeout=RUN_TIMEOUT, env=None, out=None):
    """`scalene-bpf run -o OUT [opts] -- command...`."""
    out = Path(out or Path(tmp) / "profile.json")
    argv = ["run", "-o", out, *opts, "--", *command]
    res = invoke(argv, cwd=cwd or tmp, timeout=timeout, env=env)
    return finish(res, out, expect_rc=expect_rc)


def reference_dir():
    """Profiles written by real Scalene (the test venv's), made on first use:
    tests/refprofiles/scalene_refs.py."""
    if str(REPO / "tests" / "refprofiles") not in sys.path:
        sys.path.insert(0, str(REPO / "tests" / "refprofiles"))
    import scalene_refs
    return scalene_refs.reference_dir()


def program(name):
    return str(PROGRAMS / name)


# --------------------------------------------------------------------------
# Reading profiles
# --------------------------------------------------------------------------

def markers(path):
    """{name: line number} of the `# LINE: name` comments in a program."""
    found = {}
    with open(path) as f:
        for n, text in enumerate(f, 1):
            m = re.search(r"#\s*LINE:\s*(\w+)", text)
            if m:
                found[m.group(1)] = n
    return found


def file_entry(profile, path):
    """The profile's entry for a source file (matched on its real path)."""
    want = os.path.realpath(path)
    for name, detail in profile["files"].items():
        if os.path.realpath(name) == want:
            return detail
    facts = profile.get("scalene_bpf", {})
    raise AssertionError(
        f"{path} not in the profile; files: {list(profile['files'])}; "
        f"sampled {facts.get('total_sampled_s')} s, unattributed "
        f"{facts.get('unattributed')}, bpf {facts.get('bpf')}")


def _binomial_quantiles(n, q, p):
    """(lo, hi) for K ~ Binomial(n, q): P(K < lo) <= p and P(K > hi) <= p,
    each as tight as that allows."""
    if q >= 1.0:
        return n, n
    lq, lr = math.log(q), math.log1p(-q)
    pmf = lambda k: math.exp(math.lgamma(n + 1) - math.lgamma(k + 1)  # noqa: E731
                             - math.lgamma(n - k + 1) + k * lq + (n - k) * lr)
    mean, sd = n * q, math.sqrt(n * q * (1 - q))
    # Beyond 40 standard deviations (and 10 counts) the mass is below 1e-300.
    lo, tail = max(0, int(mean - 40 * sd - 10)), 0.0
    while lo < n and tail + pmf(lo) <= p:
        tail += pmf(lo)
        lo += 1
    hi, tail = min(n, int(mean + 40 * sd + 10) + 1), 0.0
    while hi > 0 and tail + pmf(hi) <= p:
        tail += pmf(hi)
        hi -= 1
    return lo, hi


# Above a sampled range: a line's small allocations the truth lumps with its
# blocks (a bytearray's or a list's header), each sampled now and then at
# about a 1 MiB window's weight; two are allowed.
STRAY_MB = 2.0


def sampled_mb_range(blocks, mean=1 << 20, p=1e-6):
    """What a correct allocation sampler may estimate for blocks given as
    [size, count] pairs: (truth, low, high) in MiB.  A block of s bytes is
    sampled with probability q = 1 - exp(-s/mean) and weighs s/q, so the
    estimate is the binomial count of sampled blocks times that weight.
    With q near 1 the misses are few and skewed (4 MiB blocks at a 1 MiB
    mean: Poisson-like, where a normal approximation at 3.5 standard
    deviations fails 1 run in 400), so the range comes from the binomial
    quantiles: a correct estimate falls outside a side with probability
    under p (split among the kinds of blocks)."""
    truth = lo = hi = 0.0
    each = p / max(1, len(blocks))
    for size, n in blocks:
        q = -math.expm1(-size / mean)
        k_lo, k_hi = _binomial_quantiles(n, q, each)
        truth += size * n
        lo += k_lo * size / q
        hi += k_hi * size / q
    return truth / 2**20, lo / 2**20, hi / 2**20


# The chance a correct profile fails one statistical bound (both sides
# together).  The suite judges about a thousand sampled numbers a run, so
# about one run in a thousand fails by chance.
P_FAIL = 1e-6


def samples_behind(profile, seconds):
    """How many CPU samples stand behind `seconds` of on-CPU time in a
    profile: a running thread is sampled at the profile's rate
    (scalene_bpf.sampling_rate_hz), each sample standing for its thread's
    run since its previous one; where fires were missed (a CPU idle between
    a thread's short runs) there are fewer samples than seconds x rate, and
    the count the profile took is used instead (bpf.samples over the
    threads' CPU time)."""
    facts = profile["scalene_bpf"]
    rate = facts["sampling_rate_hz"]
    cpu = sum(t.get("cpu_s", 0) for t in facts.get("threads", []))
    taken = facts.get("bpf", {}).get("samples")
    if cpu > 0 and taken:
        rate = min(rate, taken / cpu)
    return seconds * rate


def share_range(p, n, p_fail=P_FAIL):
    """(lo, hi): where a correct profile's share of n samples falls when the
    truth is p.  Each sample lands on the thing measured with probability
    p, so the count is binomial; lo and hi are its quantiles, each side
    passed with probability at most p_fail / 2.  (Samples evenly spread
    in time vary less than independent ones: the range is on the safe
    side.)"""
    n = max(1, int(round(n)))
    p = min(max(p, 0.0), 1.0)
    if p <= 0.0:
        return 0.0, 0.0
    k_lo, k_hi = _binomial_quantiles(n, p, p_fail / 2)
    return k_lo / n, k_hi / n


def check_share(got, want, n, what, *, whole=1.0, extra=0.0, side="both",
                accuracy=None, ctx="", p_fail=P_FAIL):
    """Asserts that `got`, a share of n samples, is what a correct profile
    gives when the truth is `want`: within share_range() at n, widened by
    `extra` on each side, or by (below, above) if a pair: a systematic
    effect that is not sampling noise, which the caller explains.  `whole`
    is the unit's whole: 1 for a fraction, 100 for a percentage, the total
    for seconds.  side "low" or "high" checks one side only.  Records the
    numbers with `accuracy` and prints them on failure.  Returns (lo,
    hi)."""
    below, above = extra if isinstance(extra, tuple) else (extra, extra)
    lo, hi = share_range(want / whole, n, p_fail)
    lo, hi = lo * whole - below, hi * whole + above
    if side == "low":
        hi = math.inf
    elif side == "high":
        lo = -math.inf
    band = f"{lo:.4g}..{hi:.4g}"
    if accuracy is not None:
        accuracy(what, round(want, 4), round(got, 4), f"{band} (n {n:.0f})")
    assert lo <= got <= hi, (
        f"{what}: {got:.4g}, outside {band}: the binomial range around "
        f"{want:.4g} (of {whole:g}) at n = {n:.0f} samples, p_fail "
        f"{p_fail:g}" + (f", widened by {below:.4g} below, {above:.4g} above"
                         if below or above else "")
        + (f"; {ctx}" if ctx else ""))
    return lo, hi


# Of a line that runs one kind of code only (pure Python, or one C call),
# the share of its samples that are of other kinds all the same: kernel
# entries (timer interrupts, page faults, preemption), a libc helper that
# the interpreter calls (__errno_location), the first sample after a line
# change (it stands for the run since the previous sample, partly the line
# before's).  Taken as the expected share, with the binomial range on top:
# the most measured on a loaded 2-CPU machine, on all seven interpreters,
# was 4 %; of it, user-mode samples of the other kind (native on a
# pure-Python line, Python on a line in a C call) 0.6 %.
PURE_STRAY = 0.04
OTHER_KIND = 0.01


def period_s(profile):
    """The longest sampling period: the timers' periods are drawn anew
    every 20 ms within 25 % of the profile's sampling_period_ns."""
    return 1.25 * profile["scalene_bpf"]["sampling_period_ns"] / 1e9


def unseen_tail_s(profile, p_fail=P_FAIL):
    """The most CPU time a thread that runs in short bursts (blocking in
    between) can spend after its last sample, but with probability p_fail:
    a sample stands for the run since the previous one, so what runs after
    the last is not seen, and the fires that catch such a thread fall at
    random points of its run: the run between two of its samples is
    exponential, one period on average (period_s() at most)."""
    return -math.log(p_fail) * period_s(profile)


@dataclass
class Time:
    """A line's or a function's time, in % of all sampled time and in s."""
    python: float
    native: float
    system: float
    total_sampled_s: float
    extra: dict = field(default_factory=dict)

    @property
    def percent(self):
        return self.python + self.native + self.system

    @property
    def seconds(self):
        return self.percent / 100.0 * self.total_sampled_s

    @property
    def cpu_seconds(self):
        """The line's on-CPU time: its seconds less its blocked time
        (n_blocked_percent), which is part of its system time.  What a
        thread's own CPU clock measures: a line's blocked time that is not
        an idle wait (a page fault that waits for the address space's lock,
        say: 1-10 ms seen on threads that only compute) is the line's time,
        but not CPU time."""
        return (self.percent - self.extra.get("n_blocked_percent", 0)) / 100.0 * self.total_sampled_s


def _time_of(profile, row):
    return Time(row["n_cpu_percent_python"], row["n_cpu_percent_c"],
                row["n_sys_percent"],
                profile["scalene_bpf"]["total_sampled_s"],
                extra=row)


def line_time(profile, path, lineno):
    """A line's time (its row in `lines`)."""
    lines = file_entry(profile, path)["lines"]
    assert 1 <= lineno <= len(lines), f"{path}:{lineno} out of range"
    row = lines[lineno - 1]
    assert row["lineno"] == lineno
    return _time_of(profile, row)


def function_time(profile, path, name):
    """A function's time (its row in `functions`, by qualified name)."""
    rows = file_entry(profile, path)["functions"]
    for row in rows:
        if row["line"] == name:
            return _time_of(profile, row)
    raise AssertionError(f"function {name} not in the profile of {path}: "
                         f"{[r['line'] for r in rows]}")


def hot_lines(profile, limit=8):
    """The busiest lines of the whole profile, for failure messages."""
    rows = []
    for name, detail in profile["files"].items():
        for row in detail["lines"]:
            t = (row["n_cpu_percent_python"] + row["n_cpu_percent_c"]
                 + row["n_sys_percent"])
            if t > 0:
                rows.append((t, f"{os.path.basename(name)}:{row['lineno']} "
                                f"py {row['n_cpu_percent_python']:.1f} "
                                f"c {row['n_cpu_percent_c']:.1f} "
                                f"sys {row['n_sys_percent']:.1f}"))
    rows.sort(reverse=True)
    return "; ".join(r[1] for r in rows[:limit]) or "(no line has time)"


# --------------------------------------------------------------------------
# sudo
# --------------------------------------------------------------------------

TEST_USER = "sbpftest"


def ensure_test_user():
    """An unprivileged user for the sudo tests, made once (idempotent)."""
    try:
        return pwd.getpwnam(TEST_USER)
    except KeyError:
        pass
    if shutil.which("useradd") is None:
        pytest.skip(f"useradd not found: cannot make the test user "
                    f"{TEST_USER} (apt-get install passwd)")
    p = subprocess.run(["useradd", "--system", "--no-create-home",
                        "--shell", "/usr/sbin/nologin", TEST_USER],
                       capture_output=True, text=True)
    # 9: made meanwhile by a concurrent run.
    assert p.returncode in (0, 9), f"useradd {TEST_USER}: {p.stderr}"
    return pwd.getpwnam(TEST_USER)


def sudo_env(user):
    return clean_env({"SUDO_UID": str(user.pw_uid),
                      "SUDO_GID": str(user.pw_gid),
                      "SUDO_USER": user.pw_name,
                      "SUDO_COMMAND": "scalene-bpf"})


def runnable_by(user, python):
    """Whether `user` can run that interpreter (pyenv's live under /root,
    which is 0700 on Debian)."""
    try:
        p = subprocess.run([python, "-c", "pass"], capture_output=True,
                           user=user.pw_uid, group=user.pw_gid,
                           extra_groups=[], cwd="/", timeout=60)
    except PermissionError:
        return False
    return p.returncode == 0


# The hand-built async profile of the view tests: the file of
# minimal_valid.json with async/await lines as Scalene writes them (plus our
# scalene_bpf.async facts and [await] stacks), every await on lines without
# CPU time.
ASYNC_FILE = "/home/user/demo/fetch.py"
ASYNC_TASKS = [f"Task-{i}" for i in range(1, 6)]


def async_profile(with_async=True):
    """minimal_valid.json with an async file; with_async=False: the same
    numbers under "async_profile": false (no await column)."""
    doc = json.loads((reference_dir() / "minimal_valid.json").read_text())
    base = next(iter(doc["files"].values()))["lines"][0]
    zero = {k: (0 if isinstance(v, (int, float)) else v) for k, v in base.items()}
    zero.update(cpu_samples_list=[], memory_samples=[])

    def line(n, text, await_pct=0.0, names=(), mean=0.0, peak=0.0):
        return dict(zero, lineno=n, line=text + "\n",
                    start_region_line=n, end_region_line=n,
                    start_outermost_loop=n, end_outermost_loop=n,
                    n_async_await_percent=await_pct,
                    n_async_concurrency_mean=mean,
                    n_async_concurrency_peak=peak,
                    async_task_names=sorted(names))
    lines = [line(1, "import asyncio"),
             line(2, "async def fetch(q):"),
             line(3, "    await asyncio.sleep(1.5)", 69.6, ASYNC_TASKS, 3.25, 5),
             line(4, "    item = await q.get()", 30.0, ["worker"], 1.0, 1),
             line(5, "    await asyncio.sleep(0)", 0.4, ["Task-1"], 2.0, 2)]
    fn = dict(zero, lineno=2, line="fetch", n_async_await_percent=100.0,
              n_async_concurrency_mean=3.1, n_async_concurrency_peak=5,
              async_task_names=sorted(ASYNC_TASKS + ["worker"]))
    fn.pop("start_region_line", None)
    doc["files"][ASYNC_FILE] = {"functions": [fn], "imports": [], "leaks": {},
                                "lines": lines, "percent_cpu_time": 0.0}
    doc["async_profile"] = with_async

    def frame(name, line_no):
        return {"kind": "py", "display_name": name,
                "filename_or_module": ASYNC_FILE, "line": line_no}
    doc["combined_stacks"] = doc.get("combined_stacks", []) + [
        [[frame("fetch", 3), frame("[await] fetch (Task-3)", 3)], 7],
        [[frame("fetch", 4), frame("[await] fetch (worker)", 4)], 3]]
    doc["scalene_bpf"] = {"async": {"await_s": 2.5, "snapshots": 250,
                                    "tasks_read": 900, "tasks_unreadable": 4}}
    return doc


def named_interpreter(python, tmp_path, name):
    """A link to the interpreter under a name of the test's own: the
    process's command, for --comm filters and for telling processes
    apart in a system-wide run."""
    link = tmp_path / name
    os.symlink(python, link)
    return link


def start_ready(argv, tmp_path):
    """Starts a program that prints "ready" once it is under way."""
    proc = subprocess.Popen([str(a) for a in argv], cwd=str(tmp_path),
                            env=clean_env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.kill()
        raise AssertionError(f"{argv} did not start: {line!r} "
                             f"{proc.stderr.read()}")
    return proc


def read_rounds(path):
    """A program's (time.time(), rounds) lines, as it appends them
    (programs/attach_steady.py)."""
    return [tuple(map(float, line.split()))
            for line in Path(path).read_text().split("\n") if line]


def rounds_at(rows, t):
    """The program's rounds at time t, between its read_rounds() lines."""
    for (a, x), (b, y) in zip(rows, rows[1:]):
        if a <= t <= b:
            return x + (y - x) * (t - a) / (b - a)
    raise AssertionError(f"no rounds at {t}: the program's lines run "
                         f"{rows[0][0]}..{rows[-1][0]}")
