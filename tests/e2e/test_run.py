# SPDX-License-Identifier: BSD-2-Clause
"""`scalene-bpf run` as a wrapper: the program keeps its stdin and stdout,
its exit status becomes ours, and under sudo it runs as the invoking user,
who also owns the profile."""

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from e2e_helpers import (BIN, BUILD, RUN_TIMEOUT, bpf_snapshot, check_compat,
                         check_no_bpf_left, clean_env, file_entry, finish, function_time, hot_lines, invoke, line_time,
                         markers, profile_run, program, runnable_by, sudo_env)

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


def test_sudo_profile_never_shows_a_file_the_user_cannot_read(user_python,
                                                              user_dir):
    """File names in a profile come from the program's memory: a program
    can give its code any file name.  Under sudo the source text is read as
    the user, so a root-only file named that way stays unread; the same
    run as root shows it (the test would catch a reader that never reads)."""
    user, d = user_dir
    python = user_python[1]
    # In the program's directory (profiled files), but root's and 0600.
    secret = Path(d) / "secret.py"
    secret.write_text("".join(f"SECRET_{i} = {i}  # root only\n"
                              for i in range(1, 200)))
    os.chmod(secret, 0o600)
    prog = os.path.join(d, "claims.py")
    with open(prog, "w") as f:
        f.write(
            "import time\n"
            "src = '\\n' * 49 + 'x = 0\\nwhile time.monotonic() < end:\\n"
            "    x += sum(range(100))\\n'\n"
            f"code = compile(src, {str(secret)!r}, 'exec')\n"
            "exec(code, {'time': time, 'end': time.monotonic() + 0.8})\n")
    os.chmod(prog, 0o644)
    for env, readable in ((sudo_env(user), False), (None, True)):
        out = os.path.join(d, "profile.json")
        res = invoke(["run", "-o", out, "--python", python, prog], cwd=d,
                     env=env)
        finish(res, out)
        entry = res.profile["files"].get(str(secret))
        assert entry is not None, list(res.profile["files"])
        texts = "".join(r["line"] for r in entry["lines"])
        busy = [r for r in entry["lines"] if r["lineno"] == 52]
        # sum() is a call into C: native time by Scalene's meaning.
        assert busy and busy[0]["n_cpu_percent_python"] + busy[0]["n_cpu_percent_c"] > 20, \
            entry["lines"][48:53]
        if readable:
            assert "SECRET_52" in texts, texts[:200]
        else:
            assert "SECRET" not in texts, texts[:200]
            assert entry.get("source_unavailable") is True
        os.unlink(out)


def _as_user_with_caps(user, caps, argv, cwd, env=None):
    """Runs argv as `user` holding only the capabilities `caps` (ambient,
    so that they survive the exec), as a service manager would grant them;
    env: variables added to the clean environment."""
    caps_arg = ",".join("+" + c for c in caps)
    full = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}",
            "--init-groups", f"--inh-caps={caps_arg}",
            f"--ambient-caps={caps_arg}", *map(str, argv)]
    before = bpf_snapshot()
    p = subprocess.run(full, cwd=cwd, env=clean_env(env),
                       capture_output=True, text=True, timeout=RUN_TIMEOUT,
                       stdin=subprocess.DEVNULL)
    check_no_bpf_left(before)
    return p


def test_capabilities_without_root(user_python, user_dir):
    """Without root or CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE the run says to
    use sudo, and how.  Those three are enough for CPU profiling
    without root (the profile is the user's), and for memory profiling where
    the kernel has uprobe_multi links (6.6+, as here); perf-event uprobes,
    the older kind (forced with SCALENE_BPF_PERF_UPROBES=1), need
    CAP_SYS_ADMIN too, and the run says so instead of failing obscurely."""
    if shutil.which("setpriv") is None:
        pytest.fail("setpriv not found (apt-get install util-linux)")
    user, d = user_dir
    python = user_python[1]
    # A copy the user can execute, with the sampler where it looks for it.
    bindir = os.path.join(d, "bin")
    os.makedirs(os.path.join(bindir, "build", "sampler"))
    shutil.copy(BIN, os.path.join(bindir, "scalene-bpf"))
    sampler = BUILD / "sampler" / "libscalene-bpf-sampler.so"
    shutil.copy(sampler, os.path.join(bindir, "build", "sampler"))
    for root, dirs, files in os.walk(d):
        for n in dirs + files:
            os.chmod(os.path.join(root, n), 0o755)
    prog = os.path.join(d, "busy.py")
    shutil.copy(program("busy.py"), prog)
    os.chmod(prog, 0o644)
    exe = os.path.join(bindir, "scalene-bpf")
    out = os.path.join(d, "profile.json")
    caps = ["bpf", "perfmon", "sys_ptrace"]

    # Without them: the command that works, this executable by its full path
    # under sudo, before anything is loaded, and the ones missing.
    p = _as_user_with_caps(user, caps[:1], [exe, "run", "-o", out, "--python",
                                            python, prog], d)
    assert p.returncode == 1, p.stderr
    assert f"sudo {exe} run -o {out} --python {python} {prog}\n" in p.stderr, p.stderr
    assert "CAP_PERFMON, CAP_SYS_PTRACE" in p.stderr and "CAP_BPF" not in p.stderr, p.stderr
    assert not os.path.exists(out)

    # CAP_SYS_ADMIN grants what CAP_BPF and CAP_PERFMON do (the kernel
    # takes either): not refused, and the profile is made.
    p = _as_user_with_caps(user, ["sys_admin", "sys_ptrace"],
                           [exe, "run", "--cpu-only", "-o", out, "--python", python, prog], d)
    assert p.returncode == 0, p.stderr
    assert file_entry(check_compat(out), prog)["percent_cpu_time"] > 50
    os.unlink(out)

    p = _as_user_with_caps(user, caps, [exe, "run", "--cpu-only", "-o", out,
                                        "--python", python, prog], d)
    assert p.returncode == 0, p.stderr
    st = os.stat(out)
    assert (st.st_uid, st.st_gid) == (user.pw_uid, user.pw_gid)
    prof = check_compat(out)
    assert file_entry(prof, prog)["percent_cpu_time"] > 50, hot_lines(prof)
    os.unlink(out)

    p = _as_user_with_caps(user, caps, [exe, "run", "-o", out, "--python",
                                        python, prog], d)
    assert p.returncode == 0, p.stderr
    assert check_compat(out)["memory"] is True
    os.unlink(out)

    p = _as_user_with_caps(user, caps, [exe, "run", "-o", out, "--python",
                                        python, prog], d,
                           env={"SCALENE_BPF_PERF_UPROBES": "1"})
    assert p.returncode != 0, p.stderr
    assert "CAP_SYS_ADMIN" in p.stderr and "--cpu-only" in p.stderr, p.stderr
    assert not os.path.exists(out)

    p = _as_user_with_caps(user, caps + ["sys_admin"],
                           [exe, "run", "-o", out, "--python", python, prog], d)
    assert p.returncode == 0, p.stderr
    assert check_compat(out)["memory"] is True


def test_short_program_every_sample_attributed(python, tmp_path):
    """A program of ~20 ms of CPU that ends as soon as its work is done: the
    samples of its work are all in the profile, on its function, although
    its code objects are freed moments after they ran."""
    prog = program("short_run.py")
    side = tmp_path / "spent.txt"
    res = profile_run(python, prog, [side], tmp=tmp_path)
    spent = float(side.read_text())
    facts = res.profile["scalene_bpf"]
    ctx = (f"work took {spent * 1e3:.1f} ms of CPU; unattributed "
           f"{facts['unattributed']}, bpf {facts['bpf']}; hot lines "
           f"{hot_lines(res.profile)}")
    # None of the work's samples is lost: at 997 Hz, 20 ms of CPU is about
    # 20 samples, of which two may fall either side.  (More above is
    # sampling's own spread on a loaded machine, not a loss: the bound there
    # is looser.)
    got = function_time(res.profile, prog, "work").seconds
    assert 0.85 * spent - 0.002 <= got <= 1.5 * spent + 0.003, ctx
    # Started by the interpreter's own file: its code deallocator had the
    # probe before the exec, so no frame is lost to code freed before it.
    bpf = facts["bpf"]
    assert bpf["code_dealloc_probes"]["before_exec"] == 1, ctx
    assert bpf["frames_unreadable_before_probe"] == 0, ctx
    assert bpf["frames_unreadable"] == bpf["frames_unreadable_in_bpf"], ctx


def test_freed_code_objects_are_named(python, tmp_path):
    """Code objects freed moments after they ran (modules' top-level code at
    import, a loop exec'd 30 times, a new code object each time) are named
    all the same: the probe on the deallocator copies a code object that a
    walk read lately as it is freed, before its memory is used again.
    Without the copies, 3-8 frames a run were unreadable (3.12) and the
    loop's time went partly to no line."""
    prog = program("freed_code.py")
    side = tmp_path / "spent.txt"
    res = profile_run(python, prog, [side], tmp=tmp_path)
    spent = float(side.read_text())
    bpf = res.profile["scalene_bpf"]["bpf"]
    ctx = (f"loops took {spent * 1e3:.1f} ms of CPU; bpf {bpf}; hot lines "
           f"{hot_lines(res.profile)}")
    # Every frame whose code object BPF read as it took the sample is named,
    # those freed since from their copies: the interpreter's own file is
    # the command, so the probe that copies them was placed before its exec
    # (after it, a script's interpreter takes 0.02-22 ms to get it, and
    # code freed meanwhile is not copied).
    assert bpf["code_dealloc_probes"]["before_exec"] == 1, ctx
    assert bpf["frames_unreadable_before_probe"] == 0, ctx
    assert bpf["frames_unreadable"] == bpf["frames_unreadable_in_bpf"], ctx
    # What BPF cannot read as it takes a sample (a page of the object being
    # moved or reclaimed just then: a failed read, not a freed object) is a
    # sampling accident, no part of what the copies do: at most 1 % of the
    # walks (a CI run saw 2 frames unreadable in 647 walks, with a failed
    # frame read and a torn frame in the same run, before the kinds were
    # told apart).
    assert bpf["frames_unreadable_in_bpf"] <= 0.01 * bpf["walks"], ctx
    assert bpf["freed_code_copies_unused"] == 0, ctx
    # Copies are made of code that walks read: the exec'd loops at least.
    assert bpf["code_objects_read_as_freed"] > 0, ctx
    assert bpf["code_objects_read_as_freed_lost"] == 0, ctx
    # The loops' samples are on their line, as test_short_program_every_
    # sample_attributed bounds them (about 0.3 s of CPU: 300 samples).
    got = line_time(res.profile, prog, markers(prog)["generated"]).seconds
    assert 0.85 * spent - 0.002 <= got <= 1.5 * spent + 0.003, ctx


def test_hints_name_the_command_as_run(any_python, tmp_path):
    """The hints after a run give the command the user ran (./scalene-bpf
    before `make install`), not a name that may not be installed, and a
    folder given with its slash is named once so."""
    out = tmp_path / "profile.json"
    res = profile_run(any_python, program("behave.py"), [tmp_path / "seen.json", "exit:0"],
                      tmp=tmp_path, opts=["--cpu-only"], out=out)
    assert f"to view it in the terminal: {BIN} view --cli {out}\n" in res.stderr, res.stderr
    out_dir = f"{tmp_path / 'host'}/"
    res = invoke(["--all", "--comm", "sbpf-no-such", "--duration", "1", "-o", out_dir],
                 cwd=tmp_path)
    assert res.rc == 0, res.describe()
    assert f"profiles in {out_dir}\n" in res.stderr, res.stderr
    assert f"to view them: {BIN} view {out_dir}\n" in res.stderr, res.stderr
