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
import scalene_compat as compat  # noqa: E402

# Seconds one scalene-bpf invocation may take before the test fails.  The
# programs run a few seconds at most; the rest is start-up and writing.
RUN_TIMEOUT = 90

# (test id, how to find it, how to install it)
INTERPRETERS = [
    ("py3.9", "pyenv:3.9.18", "pyenv install 3.9.18"),
    ("py3.10", "pyenv:3.10.13", "pyenv install 3.10.13"),
    ("py3.11", "pyenv:3.11.7", "pyenv install 3.11.7"),
    ("py3.12", "pyenv:3.12.1", "pyenv install 3.12.1"),
    ("py3.13", "pyenv:3.13.0", "pyenv install 3.13.0"),
    ("debian3.11-static", "/usr/bin/python3.11",
     "apt-get install python3.11 (Debian's build, statically linked)"),
    ("sid3.14-static", "/opt/python3.14-sid/usr/bin/python3.14",
     "tools/python-sid 3.14 (Debian unstable's build, statically linked)"),
]
INTERPRETER_IDS = [i[0] for i in INTERPRETERS]

# Our BPF programs, by the names the kernel keeps (15 characters at most).
OUR_PROGS = frozenset({"on_cpu_sample", "on_switch", "on_switch_work", "on_sys_exit", "on_fork",
                       "on_exec", "on_exit", "on_malloc", "on_free",
                       "on_memcpy", "on_sampler_init", "on_sampler_exit"})

# The variables through which sudo names the invoking user: scalene-bpf runs
# the program as that user.  The suite runs as root on purpose and sets them
# only where a test asks for it, also when it runs under `sudo make test`.
SUDO_VARS = ("SUDO_UID", "SUDO_GID", "SUDO_USER", "SUDO_COMMAND")


# --------------------------------------------------------------------------
# Interpreters
# --------------------------------------------------------------------------

def _pyenv_prefix(version):
    try:
        p = subprocess.run(["pyenv", "prefix", version], capture_output=True,
                           text=True, timeout=30)
        if p.returncode == 0 and p.stdout.strip():
            return Path(p.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired):
        pass
    # pyenv may be missing from PATH (sudo resets it): its default place.
    root = Path(os.environ.get("PYENV_ROOT") or
                Path(os.path.expanduser("~")) / ".pyenv")
    cand = root / "versions" / version
    return cand if cand.is_dir() else None


_interp_cache = {}


def debian_build(path):
    """Whether the interpreter is one of Debian's builds (static, stripped,
    built with LTO), not pyenv's."""
    return any(path == where for ident, where, _ in INTERPRETERS
               if ident.startswith(("debian", "sid")))


def find_interpreter(ident):
    """Absolute path of the interpreter with that test id, or skip."""
    _, where, install = next(i for i in INTERPRETERS if i[0] == ident)
    if ident not in _interp_cache:
        _interp_cache[ident] = _locate(where)
    if _interp_cache[ident] is None:
        pytest.skip(f"interpreter {ident} ({where}) not found or not "
                    f"runnable: install it with `{install}`")
    return _interp_cache[ident]


def _locate(where):
    path = None
    if where.startswith("pyenv:"):
        prefix = _pyenv_prefix(where[6:])
        if prefix is not None:
            path = prefix / "bin" / "python3"
    else:
        path = Path(where)
    ok = path is not None and path.is_file() and os.access(path, os.X_OK)
    if ok:
        try:
            subprocess.run([str(path), "-c", "pass"], check=True,
                           capture_output=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            ok = False
    return str(path) if ok else None


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
        out, err = proc.communicate()
        pytest.fail(f"scalene-bpf did not finish in {timeout} s:\n$ "
                    f"{' '.join(full)}\n{(err or b'').decode()[-3000:]}")
    res = Result(full, proc.returncode,
                 (out or b"").decode("utf-8", "replace"),
                 err.decode("utf-8", "replace"), time.monotonic() - t0,
                 pid=proc.pid)
    check_no_bpf_left(before, our_pids={proc.pid})
    return res


def check_compat(path, gui=False):
    """The four compatibility checks of tests/compat (the GUI only when
    asked: it takes seconds) and our own viewer."""
    compat.validate_strict(str(path))
    profile = compat.load_profile(str(path))
    compat.check_gui_invariants(profile, name=str(path))
    compat.view_cli(str(path))
    if gui:
        if compat.find_chromium() is None:
            pytest.fail("Chromium not found for the GUI check (apt-get "
                        "install chromium, or set SCALENE_COMPAT_CHROMIUM)")
        compat.render_gui(str(path))
    p = subprocess.run([str(BIN), "view", "--cli", str(path)],
                       capture_output=True, text=True, timeout=60,
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
# lock held by another of our programs (a sample's NMI landing inside
# sched_switch's lookup): that record is walked without the frame cache and
# the state is made at the next one.  Rare by nature; many would mean the
# state is not being made at all.
TRANSIENT_COUNTERS = {"thread_state_unavailable": 0.002}


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
