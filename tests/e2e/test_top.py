# SPDX-License-Identifier: BSD-2-Clause
"""scalene-bpf top: the live view, driven through a real terminal (tmux).

Each test starts its own tmux server (a private socket) whose one pane runs
a small script: scalene-bpf top, then the exit status, `stty -a` and a line
read back, so that after top has gone the test sees whether the terminal is
sane again (canonical mode, echo, signals, the normal screen, a visible
cursor)."""

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from e2e_helpers import (BIN, IN_KERNEL_MATRIX, bpf_snapshot, check_no_bpf_left,
                         clean_env, invoke, markers, program)

TMUX = shutil.which("tmux")
needs_tmux = pytest.mark.skipif(TMUX is None,
                                reason="tmux not installed (tools/ci-deps)")

HOT = markers(program("attach_target.py"))["hot"]
ABORT_HOT = markers(program("abort_target.py"))["hot"]


class Pane:
    """One tmux session running `scalene-bpf ARGS` in a width x height
    terminal."""

    def __init__(self, tmp, args, width=120, height=40, env=None):
        self.tmp = Path(tmp)
        self.sock = str(self.tmp / "tmux.sock")
        self.width, self.height = width, height
        self.stty = self.tmp / "stty.txt"
        script = self.tmp / "pane.sh"
        cmd = " ".join(_sh_quote(str(a)) for a in [BIN, *args])
        script.write_text(
            f"cd {_sh_quote(str(self.tmp))}\n"
            f"{cmd}\n"
            f"echo \"EXIT=$?\"\n"
            f"stty -a > {_sh_quote(str(self.stty))}\n"
            "IFS= read -r line\n"
            "echo \"GOT:$line\"\n"
            "sleep 60\n")
        self.before = bpf_snapshot()
        self._tmux("-f", "/dev/null", "new-session", "-d", "-s", "top",
                   "-x", str(width), "-y", str(height), f"sh {script}",
                   env=env if env is not None else clean_env())

    def _tmux(self, *args, env=None):
        return subprocess.run([TMUX, "-S", self.sock, *args],
                              capture_output=True, text=True, timeout=20,
                              env=env if env is not None else clean_env(),
                              check=True).stdout

    def screen(self):
        return self._tmux("capture-pane", "-p", "-t", "top")

    def keys(self, *keys):
        self._tmux("send-keys", "-t", "top", *keys)

    def resize(self, width, height):
        self._tmux("resize-window", "-t", "top", "-x", str(width), "-y",
                   str(height))

    def screen_escapes(self):
        """The screen with its colours and attributes as escapes."""
        return self._tmux("capture-pane", "-e", "-p", "-t", "top")

    def display(self, fmt):
        return self._tmux("display-message", "-p", "-t", "top", fmt).strip()

    def wait_for(self, pattern, timeout=10.0):
        """The screen once pattern (a regex) is on it."""
        end = time.monotonic() + timeout
        while True:
            s = self.screen()
            if re.search(pattern, s, re.M):
                return s
            if time.monotonic() > end:
                raise AssertionError(f"{pattern!r} not on the screen after "
                                     f"{timeout} s:\n{s}")
            time.sleep(0.1)

    def top_pid(self):
        """scalene-bpf's PID: the child of the pane's shell."""
        shell = self.display("#{pane_pid}")
        kids = subprocess.run(["pgrep", "-P", shell], capture_output=True,
                              text=True).stdout.split()
        assert kids, "scalene-bpf is not running in the pane"
        return int(kids[0])

    def exit_status(self, timeout=20.0):
        s = self.wait_for(r"^EXIT=\d+", timeout)
        return int(re.search(r"^EXIT=(\d+)", s, re.M).group(1))

    def check_sane(self):
        """The terminal as the shell had it: normal screen, visible cursor,
        cooked mode with echo and signals, and a typed line echoed."""
        deadline = time.monotonic() + 10
        while not self.stty.exists() or not self.stty.read_text():
            assert time.monotonic() < deadline, "stty -a did not run"
            time.sleep(0.1)
        flags = set(self.stty.read_text().split())
        for want in ("icanon", "echo", "isig", "icrnl", "opost"):
            assert want in flags and "-" + want not in flags, (
                want, self.stty.read_text())
        assert self.display("#{alternate_on}") == "0", "still on the " \
            "alternate screen"
        assert self.display("#{cursor_flag}") == "1", "the cursor is hidden"
        self.keys("typed back", "Enter")
        s = self.wait_for(r"^GOT:typed back$")
        # Echoed by the terminal as typed, then printed by the shell.
        assert re.search(r"^typed back$", s, re.M), s

    def close(self):
        try:
            pid = self.top_pid()
        except (AssertionError, subprocess.CalledProcessError):
            pid = None
        if pid and Path(f"/proc/{pid}/comm").read_text().strip() == \
                "scalene-bpf":
            os.kill(pid, signal.SIGKILL)
        subprocess.run([TMUX, "-S", self.sock, "kill-server"],
                       capture_output=True, timeout=20)

    def check_no_bpf_left(self):
        check_no_bpf_left(self.before)


def _sh_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def _rows(screen):
    """The item rows of a frame: the lines after the column titles."""
    lines = screen.splitlines()
    for i, line in enumerate(lines):
        if "TOT%" in line:
            return [x for x in lines[i + 1:] if x.strip()]
    raise AssertionError("no column titles on the screen:\n" + screen)


@pytest.fixture
def pane_factory(tmp_path):
    panes = []

    def make(*a, **kw):
        p = Pane(tmp_path, *a, **kw)
        panes.append(p)
        return p
    yield make
    for p in panes:
        p.close()


@needs_tmux
def test_top_run_hot_line_sort_and_quit(any_python, tmp_path, pane_factory):
    out = tmp_path / "top.json"
    stop = tmp_path / "stop"
    pane = pane_factory(["top", "-o", out, "run", "--python", any_python,
                         program("attach_target.py"), stop])
    hot = rf"attach_target\.py:{HOT}\b"
    # Start-up (BPF loading) is not the view's to count: the 3 s run from
    # the first frame.
    pane.wait_for(r"^scalene-bpf top", timeout=30)
    # The hot line first within 3 s (the first frames may hold a few
    # samples, where start-up lines tie with it).
    s = pane.wait_for(r"TOT%\*[^\n]*\n[^\n]*" + hot, timeout=3)
    assert "sort: total" in s and "TOT%*" in s, s
    assert re.search(hot, _rows(s)[0]), "the hot line is not first:\n" + s
    # Its function, beside it on a wide terminal.
    assert re.search(hot + r"\s+main\b", s), s
    pane.keys("s")
    s = pane.wait_for(r"sort: python")
    assert "PY%*" in s and "TOT%*" not in s, s
    pane.keys("s")
    pane.wait_for(r"sort: native")
    pane.keys("f")
    s = pane.wait_for(r"view: functions")
    assert re.search(r"^\s.*\bmain\s+\S*attach_target\.py:\d+", s, re.M), s
    pane.keys("l")
    pane.wait_for(r"view: lines")
    # Paused: the frame stays as it is while the profile goes on.
    pane.keys("Space")
    s = pane.wait_for(r"PAUSED")
    elapsed = re.search(r"^elapsed \S+", s, re.M).group(0)
    time.sleep(1.5)
    assert re.search(r"^elapsed \S+", pane.screen(), re.M).group(0) == elapsed
    pane.keys("Space")
    s = pane.wait_for(r"view: lines  sort: native\s*$")
    assert re.search(r"^elapsed \S+", s, re.M).group(0) != elapsed, s
    pane.keys("q")
    # q stops the program as Ctrl-C would: Python's status for SIGINT.
    assert pane.exit_status() == 130
    pane.check_sane()
    # The last view stays on the normal screen, then the kept output.
    s = pane.screen()
    assert re.search(hot, s) and "KeyboardInterrupt" in s, s
    assert "profile saved to" in s, s
    doc = json.loads(out.read_text())
    entry = [v for k, v in doc["files"].items()
             if k.endswith("attach_target.py")]
    assert entry, list(doc["files"])
    hot_row = [ln for ln in entry[0]["lines"] if ln["lineno"] == HOT][0]
    assert hot_row["n_cpu_percent_python"] > 50, hot_row
    pane.check_no_bpf_left()


@needs_tmux
@pytest.mark.parametrize("width", [40, 200])
def test_top_narrow_and_wide(any_python, tmp_path, pane_factory, width):
    stop = tmp_path / "stop"
    pane = pane_factory(["top", "run", "--python", any_python,
                         program("attach_target.py"), stop],
                        width=width, height=24)
    pane.wait_for(r"^scalene-bpf top", timeout=30)
    s = pane.wait_for(rf"attach_target\.py:{HOT}\b", timeout=3)
    lines = s.splitlines()
    assert len(lines) <= 24
    assert all(len(x) <= width for x in lines), s
    # Every header row on a row of its own: nothing wrapped.
    assert lines[0].startswith("scalene-bpf top"), s
    assert lines[1].startswith("elapsed "), s
    assert lines[2].startswith("python "), s
    assert "TOT%*" in s and "q quit" in s, s
    if width == 200:
        assert re.search(rf"attach_target\.py:{HOT}\s+main\b", s), s
        assert "SYS%" in s and "TIME s" in s, s
    pane.keys("s")
    s = pane.wait_for(r"sort: python")
    # The sort's column stays however narrow.
    assert "PY%*" in s, s
    if width == 200:
        # Made narrow (SIGWINCH): the frame is laid out again.
        pane.resize(50, 24)
        s = pane.wait_for(r"TOT%.*PY%\*")
        assert "TIME s" not in s, s
        assert all(len(x) <= 50 for x in s.splitlines()), s
        assert s.splitlines()[1].startswith("elapsed "), s
    stop.touch()
    s = pane.wait_for(r"exited with status 0", timeout=10)
    pane.keys("q")
    assert pane.exit_status() == 0
    pane.check_sane()
    # Without -o nothing is written.
    assert not (tmp_path / "scalene-profile.json").exists()
    pane.check_no_bpf_left()


@needs_tmux
@pytest.mark.parametrize("no_color", ["", "1"])
def test_top_colour_only_without_no_color(any_python, tmp_path, pane_factory,
                                          no_color):
    pane = pane_factory(["top", "run", "--python", any_python,
                         program("attach_target.py"), tmp_path / "stop"],
                        env=clean_env({"NO_COLOR": no_color,
                                       "TERM": "xterm-256color"}))
    pane.wait_for(rf"attach_target\.py:{HOT}\b", timeout=30)
    s = pane.screen_escapes()
    if no_color:
        assert "\x1b[" not in s, s
    else:
        # Python's time in blue, the titles in reverse video.
        assert "\x1b[34m" in s and "\x1b[7m" in s, s
    pane.keys("q")
    assert pane.exit_status() == 130
    pane.check_sane()


@needs_tmux
def test_top_ctrl_c_restores_the_terminal(any_python, tmp_path,
                                          pane_factory):
    pane = pane_factory(["top", "run", "--python", any_python,
                         program("attach_target.py"), tmp_path / "stop"])
    pane.wait_for(rf"attach_target\.py:{HOT}\b", timeout=30)
    pane.keys("C-c")
    assert pane.exit_status() == 130
    pane.check_sane()
    pane.check_no_bpf_left()


@needs_tmux
def test_top_target_crash_restores_the_terminal(any_python, tmp_path,
                                                pane_factory):
    out = tmp_path / "crash.json"
    pane = pane_factory(["top", "-o", out, "run", "--python", any_python,
                         program("abort_target.py"), "1.5"])
    # The final view stays, saying how the program ended, until q.
    s = pane.wait_for(r"killed by Abort.*q to quit", timeout=30)
    assert re.search(rf"abort_target\.py:{ABORT_HOT}\b", s), s
    time.sleep(0.5)
    assert "EXIT=" not in pane.screen()
    pane.keys("q")
    assert pane.exit_status() == 128 + signal.SIGABRT
    pane.check_sane()
    json.loads(out.read_text())
    pane.check_no_bpf_left()


@needs_tmux
def test_top_sigterm_restores_the_terminal(any_python, tmp_path,
                                          pane_factory):
    stop = tmp_path / "stop"
    pane = pane_factory(["top", "run", "--python", any_python,
                         program("attach_target.py"), stop])
    pane.wait_for(rf"attach_target\.py:{HOT}\b", timeout=30)
    os.kill(pane.top_pid(), signal.SIGTERM)
    # Passed on to the program, which ends by it; top does not wait for q.
    assert pane.exit_status() == 128 + signal.SIGTERM
    pane.check_sane()
    pane.check_no_bpf_left()


@needs_tmux
def test_top_error_restores_the_terminal(tmp_path, pane_factory):
    pane = pane_factory(["top", "run", tmp_path / "missing.py"])
    assert pane.exit_status() == 1
    # Said once the terminal is back, not lost on the alternate screen.
    assert "missing.py: no such file" in pane.screen()
    pane.check_sane()


@needs_tmux
def test_top_fatal_signal_restores_the_terminal(any_python, tmp_path,
                                                pane_factory):
    """scalene-bpf itself dying of a fatal signal (as a crash would) still
    gives the terminal back."""
    stop = tmp_path / "stop"
    pane = pane_factory(["top", "run", "--python", any_python,
                         program("attach_target.py"), stop])
    try:
        pane.wait_for(rf"attach_target\.py:{HOT}\b", timeout=30)
        os.kill(pane.top_pid(), signal.SIGSEGV)
        assert pane.exit_status() == 128 + signal.SIGSEGV
        pane.check_sane()
    finally:
        # The program outlives it: told to end.
        stop.touch()
    pane.check_no_bpf_left()


@needs_tmux
def test_top_all_processes_and_pid_filter(any_python, tmp_path,
                                          pane_factory):
    stop = tmp_path / "stop"
    targets = []
    try:
        for _ in range(2):
            p = subprocess.Popen([any_python, program("attach_target.py"),
                                  str(stop)], cwd=tmp_path, env=clean_env(),
                                 stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, text=True)
            assert p.stdout.readline().strip() == "ready"
            targets.append(p)
        a, b = (p.pid for p in targets)
        out = tmp_path / "profiles"
        pane = pane_factory(["top", "--all", "--pid", f"{a},{b}", "-o", out])
        s = pane.wait_for(rf"attach_target\.py:{HOT}\b", timeout=30)
        pane.keys("p")
        s = pane.wait_for(r"view: processes")
        s = pane.wait_for(rf"^\s+{a}\s.*\n(.*\n)*\s+{b}\s|^\s+{b}\s.*\n(.*\n)*"
                          rf"\s+{a}\s", timeout=5)
        assert "COMMAND" in s and "CPU%" in s, s
        pane.keys("/")
        pane.wait_for(r"PID to show")
        pane.keys(str(b), "Enter")
        s = pane.wait_for(rf"filter: pid {b}")
        rows = _rows(s)
        assert len(rows) == 1 and rows[0].split()[0] == str(b), s
        pane.keys("l")
        s = pane.wait_for(r"view: lines")
        # One process: no PID column.
        assert "PID" not in s.split("TOT%")[0].splitlines()[-1], s
        # Its hot line, within 3 s as for any process (this can be a second
        # into the run, and --all hands samples over every 250 ms).
        s = pane.wait_for(rf"filter: pid {b}(.*\n)*.*attach_target\.py:{HOT}\b", timeout=3)
        pane.keys("q")
        assert pane.exit_status() == 0
        pane.check_sane()
        assert (out / "index.json").is_file()
    finally:
        stop.touch()
        for p in targets:
            p.wait(timeout=20)
    pane.check_no_bpf_left()


def test_top_all_without_o_leaves_nothing(any_python, tmp_path):
    """--all without -o: the host's profiles of the processes that end go
    to a temporary folder, removed at the end."""
    before = set(Path("/tmp").glob("scalene-bpf-top-*"))
    target = subprocess.Popen([any_python, program("attach_target.py"),
                               "1.0"], cwd=tmp_path, env=clean_env(),
                              stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert target.stdout.readline().strip() == "ready"
        res = invoke(["top", "--all", "--pid", target.pid, "--duration",
                      "3", "--refresh", "0.5"], cwd=tmp_path)
    finally:
        target.wait(timeout=20)
    assert res.rc == 0, res.describe()
    frames = res.stdout.split("scalene-bpf top")
    assert any(re.search(rf"attach_target\.py:{HOT}\b", f)
               for f in frames), res.stdout
    assert "processes: 0 running, 1 ended" in frames[-1], res.stdout
    assert "--duration reached" in frames[-1], res.stdout
    assert set(Path("/tmp").glob("scalene-bpf-top-*")) == before
    assert not list(tmp_path.iterdir())


def test_top_plain_frames_without_a_terminal(any_python, tmp_path):
    res = invoke(["top", "--refresh", "0.5", "run", "--python", any_python,
                  program("attach_target.py"), "2.5"],
                 cwd=tmp_path, env=clean_env({"NO_COLOR": "1",
                                              "TERM": "xterm"}))
    assert res.rc == 0, res.describe()
    assert "\x1b" not in res.stdout, "escape codes in a plain frame"
    frames = res.stdout.count("scalene-bpf top")
    assert frames >= 3, res.stdout
    assert re.search(rf"attach_target\.py:{HOT}\b", res.stdout), res.stdout
    last = res.stdout.rsplit("scalene-bpf top", 1)[1]
    assert "the program exited with status 0" in last, res.stdout
    assert "q to quit" not in res.stdout and "space pause" not in res.stdout
    # The program's own output is left where it goes.
    assert "done" in res.stdout
    assert not (tmp_path / "scalene-profile.json").exists()


def test_top_memory(any_python, tmp_path):
    """top --memory: the MEM MB column, the net MB allocated per line."""
    prog = program("mem_known.py")
    lines = markers(prog)
    go, stop = tmp_path / "go", tmp_path / "stop"
    go.touch()
    stop.touch()
    res = invoke(["top", "--memory", "--refresh", "0.5", "run", "--python",
                  any_python, prog, go, stop],
                 cwd=tmp_path, env=clean_env({"NO_COLOR": "1",
                                              "TERM": "xterm"}))
    assert res.rc == 0, res.describe()
    last = res.stdout.rsplit("scalene-bpf top", 1)[1]
    assert "MEM MB" in last, res.stdout
    # 100 blocks of 4 MiB, each kept until the next: each a net sample of
    # its own (over Scalene's window), about 400 MiB in all.
    row = re.search(rf"^.*mem_known\.py:{lines['big']}\b.*$", last, re.M)
    assert row, last
    mb = [float(x) for x in re.findall(r"\b\d+\.\d\b", row.group(0))]
    assert any(200 <= x <= 600 for x in mb), row.group(0)


def test_top_pid_once(any_python, tmp_path):
    stop = tmp_path / "stop"
    target = subprocess.Popen([any_python, program("attach_target.py"),
                               str(stop)], cwd=tmp_path, env=clean_env(),
                              stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert target.stdout.readline().strip() == "ready"
        out = tmp_path / "pid.json"
        res = invoke(["top", "--once", "--pid", target.pid, "--duration",
                      "2", "-v", "-o", out], cwd=tmp_path)
        assert res.rc == 0, res.describe()
        last = res.stdout.rsplit("scalene-bpf top", 1)[1]
        assert f"process {target.pid}:" in last and \
            "--duration reached" in last, res.stdout
        assert re.search(rf"attach_target\.py:{HOT}\b", last), res.stdout
        json.loads(out.read_text())
        # -v: what drawing cost, measured.
        m = re.search(r"top drew (\d+) frames, ([\d.]+) ms of CPU each",
                      res.stderr)
        assert m and int(m.group(1)) >= 2, res.stderr
        # (Under the kernel matrix's emulation, the cost is emulation's.)
        assert IN_KERNEL_MATRIX or float(m.group(2)) < 10, res.stderr
        assert target.poll() is None, "the target did not survive"
    finally:
        stop.touch()
        target.wait(timeout=20)


@pytest.mark.parametrize("argv, message", [
    (["top"], "give a program"),
    (["run", "--once", "x.py"], "options of top"),
    (["top", "--refresh", "0", "x.py"], "not a valid value"),
])
def test_top_bad_usage(tmp_path, argv, message):
    res = invoke(argv, cwd=tmp_path, timeout=20)
    assert res.rc == 2 and message in res.stderr, res.describe()
