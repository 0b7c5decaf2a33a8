# SPDX-License-Identifier: BSD-2-Clause
"""`scalene-bpf run` as a wrapper: the program keeps its stdin and stdout,
its exit status becomes ours, and under sudo it runs as the invoking user,
who also owns the profile."""

import json
import os
import shutil
import signal
import tempfile
import time

import pytest

from e2e_helpers import (RUN_TIMEOUT, ensure_test_user, finish, hot_lines,
                         invoke, line_time, markers, profile_run, program,
                         runnable_by, sudo_env)

def _bpf_fds(fds):
    """The program's descriptors that are BPF objects or perf events."""
    return {fd: what for fd, what in fds.items()
            if what.startswith("anon_inode:") and
            ("bpf" in what or "perf_event" in what)}


def test_stdin_stdout_and_exit_status(any_python, tmp_path):
    """How the program is wired is the same for every interpreter: one is
    enough."""
    python = any_python
    side = tmp_path / "seen.json"
    out_file = tmp_path / "stdout.txt"
    with open(out_file, "wb") as stdout:
        res = invoke(["run", "-o", tmp_path / "profile.json", "--python",
                      python, program("behave.py"), side, "exit:3"],
                     cwd=tmp_path, input="hello there\n", stdout=stdout)
    finish(res, tmp_path / "profile.json", expect_rc=3)
    seen = json.loads(side.read_text())
    # stdin reached the program.
    assert seen["stdin"] == "hello there\n", seen
    # stdout is the program's own: the very file we gave, not a pipe in
    # between, and nothing of ours is in it.
    st = os.stat(out_file)
    assert (seen["stdout_dev"], seen["stdout_ino"]) == (st.st_dev, st.st_ino)
    assert out_file.read_text() == "program read 12 bytes: HELLO THERE\n"
    # Our messages go to stderr.
    assert "profile" in res.stderr
    # No BPF object or perf event of ours reached the program.
    assert not _bpf_fds(seen["fds"]), seen["fds"]
    # The program is the one named and ran as root (no sudo variables).
    assert seen["uid"] == 0
    assert res.profile["program"] == program("behave.py")
    assert res.profile["args"][-1] == "exit:3", res.profile["args"]


def test_killed_by_sigterm_gives_143(any_python, tmp_path):
    """The program kills itself with SIGTERM: the shell convention 128+15,
    and the profile of what ran is still written."""
    res = profile_run(any_python, program("behave.py"),
                      [tmp_path / "seen.json", "signal:SIGTERM"],
                      tmp=tmp_path, expect_rc=143, input="")
    assert res.profile["program"] == program("behave.py")


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_signal_to_scalene_bpf_is_passed_on(any_python, sig, tmp_path):
    """`kill scalene-bpf` (not the program) while the program waits: the
    program gets the signal, ends of it, and its profile is written; our
    exit status is the program's (128 + signal number)."""
    signum = getattr(signal, sig)
    out = tmp_path / "profile.json"

    def send(proc):
        line = proc.stdout.readline()
        assert line == b"ready\n", line
        time.sleep(0.2)  # into the sleep
        proc.send_signal(signum)

    res = invoke(["run", "-o", out, "--python", any_python,
                  program("wait_signal.py"), "30"], cwd=tmp_path,
                 timeout=60, during=send)
    finish(res, out, expect_rc=128 + signum)
    # It ended at the signal, not after its 30 s.
    assert res.wall_s < 20, res.describe()
    # The wait is on the profile, as system time.
    wait = line_time(res.profile, program("wait_signal.py"),
                     markers(program("wait_signal.py"))["wait"])
    assert wait.system > 0, hot_lines(res.profile)


def test_program_that_exits_at_once(python, tmp_path):
    """A program that does nothing still gives a valid profile (exit 0)."""
    prog = tmp_path / "nothing.py"
    prog.write_text("pass\n")
    res = profile_run(python, prog, tmp=tmp_path)
    assert res.profile["program"] == str(prog)
    assert res.profile["elapsed_time_sec"] < 5


# --------------------------------------------------------------------------
# sudo
# --------------------------------------------------------------------------

@pytest.fixture
def user_dir():
    """A directory the test user owns, outside root's private ones."""
    user = ensure_test_user()
    d = tempfile.mkdtemp(prefix="sbpf-e2e-")
    os.chmod(d, 0o755)
    os.chown(d, user.pw_uid, user.pw_gid)
    yield user, d
    shutil.rmtree(d, ignore_errors=True)


def test_sudo_runs_the_program_as_the_user(user_python, user_dir):
    user, d = user_dir
    python = user_python[1]
    prog = os.path.join(d, "behave.py")
    shutil.copy(program("behave.py"), prog)
    os.chmod(prog, 0o644)
    side = os.path.join(d, "seen.json")
    out = os.path.join(d, "profile.json")
    res = invoke(["run", "-o", out, "--python", python, prog, side, "exit:0"],
                 cwd=d, env=sudo_env(user), input="")
    finish(res, out)
    with open(side) as f:
        seen = json.load(f)
    # The program ran as the user, with the user's groups, not root's.
    assert seen["uid"] == seen["euid"] == user.pw_uid, seen
    assert seen["gid"] == user.pw_gid, seen
    assert 0 not in seen["groups"], seen
    assert set(seen["groups"]) == set(os.getgrouplist(user.pw_name,
                                                      user.pw_gid)), seen
    assert not _bpf_fds(seen["fds"]), seen["fds"]
    # The files the program made and the profile belong to the user.
    for path in (side, out):
        st = os.stat(path)
        assert (st.st_uid, st.st_gid) == (user.pw_uid, user.pw_gid), path
    # And it was profiled: its own file is in the profile.
    assert res.profile["program"] == prog


def test_sudo_interpreter_the_user_cannot_run(any_python, user_dir):
    """An interpreter the user may not execute: a clear error, no profile."""
    user, d = user_dir
    if runnable_by(user, any_python):
        pytest.skip(f"{user.pw_name} can run {any_python}: nothing to test")
    prog = os.path.join(d, "nothing.py")
    with open(prog, "w") as f:
        f.write("pass\n")
    os.chmod(prog, 0o644)
    out = os.path.join(d, "profile.json")
    res = invoke(["run", "-o", out, "--python", any_python, prog], cwd=d,
                 env=sudo_env(user), timeout=RUN_TIMEOUT)
    assert res.rc != 0, res.describe()
    msg = res.stderr.strip().splitlines()
    assert len(msg) == 1 and any_python in msg[0], res.describe()
    assert "denied" in msg[0].lower(), res.describe()
    assert not os.path.exists(out)
