# SPDX-License-Identifier: BSD-2-Clause
"""Bad input: each case exits non-zero with one line on stderr that names
the problem, writes no profile, and leaves no BPF object loaded (invoke()
checks that last part for every call)."""

import os
import re
import subprocess
import tempfile

from e2e_helpers import clean_env, invoke, program, sudo_env


def _free_pid():
    with open("/proc/sys/kernel/pid_max") as f:
        pid = int(f.read()) - 1
    while os.path.exists(f"/proc/{pid}"):
        pid -= 1
    return pid


def _fails_cleanly(res, out, *patterns):
    lines = res.stderr.strip().splitlines()
    assert res.rc != 0, "exit status 0\n" + res.describe()
    assert len(lines) == 1, "not one line on stderr\n" + res.describe()
    for pat in patterns:
        assert re.search(pat, lines[0]), (
            f"message does not say {pat!r}\n" + res.describe())
    assert not os.path.exists(out), "a profile was written\n" + res.describe()
    # Nothing of ours on stdout either: it belongs to the program.
    assert res.stdout == "", res.describe()


def test_pid_that_does_not_exist(tmp_path):
    pid = _free_pid()
    out = tmp_path / "p.json"
    res = invoke(["--pid", pid, "--duration", "1", "-o", out], cwd=tmp_path)
    _fails_cleanly(res, out, str(pid), r"(?i)no (such )?process")


def test_pid_that_is_not_python(tmp_path):
    sleeper = subprocess.Popen(["sleep", "30"], env=clean_env())
    out = tmp_path / "p.json"
    try:
        res = invoke(["--pid", sleeper.pid, "--duration", "1", "-o", out],
                     cwd=tmp_path)
        # It was neither stopped nor killed.
        assert sleeper.poll() is None
    finally:
        sleeper.kill()
        sleeper.wait()
    _fails_cleanly(res, out, str(sleeper.pid), r"(?i)not a python")


def test_unknown_option(any_python, tmp_path):
    out = tmp_path / "p.json"
    res = invoke(["run", "--no-such-option", "-o", out, "--python",
                  any_python, program("busy.py")], cwd=tmp_path)
    _fails_cleanly(res, out, r"--no-such-option")


def test_missing_script(any_python, tmp_path):
    out = tmp_path / "p.json"
    res = invoke(["run", "-o", out, "--python", any_python,
                  "no_such_script.py"], cwd=tmp_path)
    _fails_cleanly(res, out, r"no_such_script\.py", r"(?i)no such file")


def test_interpreter_where_the_script_goes(any_python, tmp_path):
    """`run /path/to/python prog.py` would have python3 read an ELF file as
    source; the message says to put a command after --."""
    out = tmp_path / "p.json"
    res = invoke(["run", "-o", out, any_python, program("busy.py")], cwd=tmp_path)
    _fails_cleanly(res, out, re.escape(str(any_python)), r"not a Python script",
                   r"after --")


def test_missing_interpreter(tmp_path):
    out = tmp_path / "p.json"
    res = invoke(["run", "-o", out, "--python", "/nonexistent",
                  program("busy.py")], cwd=tmp_path)
    _fails_cleanly(res, out, r"/nonexistent", r"(?i)not found")


def _marker_program(d):
    """A program that only leaves a file behind, to tell whether it ran."""
    prog = os.path.join(d, "leave_marker.py")
    with open(prog, "w") as f:
        f.write("import sys\nopen(sys.argv[1], 'w').close()\n")
    os.chmod(prog, 0o644)
    return prog


def test_output_directory_does_not_exist(any_python, tmp_path):
    out = tmp_path / "no" / "such" / "dir" / "p.json"
    marker = tmp_path / "ran"
    res = invoke(["run", "-o", out, "--python", any_python,
                  _marker_program(tmp_path), marker], cwd=tmp_path)
    _fails_cleanly(res, out, re.escape(str(out)), r"(?i)no such file")
    # The path is checked before the program starts: a long run is not
    # wasted on a profile that cannot be written.
    assert not marker.exists(), "the program ran anyway"


def test_output_not_writable_by_the_sudo_user(user_python):
    """Under sudo the profile is written as the user: a file in a directory
    only root may write to is refused, before the program runs."""
    user, python = user_python
    d = tempfile.mkdtemp(prefix="sbpf-e2e-root-")
    udir = tempfile.mkdtemp(prefix="sbpf-e2e-user-")
    try:
        os.chmod(d, 0o755)  # root's, readable by all, writable by root only
        os.chmod(udir, 0o755)
        os.chown(udir, user.pw_uid, user.pw_gid)
        out = os.path.join(d, "p.json")
        marker = os.path.join(udir, "ran")
        res = invoke(["run", "-o", out, "--python", python,
                      _marker_program(udir), marker], cwd=udir,
                     env=sudo_env(user))
        _fails_cleanly(res, out, re.escape(out), r"(?i)permission denied")
        assert not os.path.exists(marker), "the program ran anyway"
    finally:
        subprocess.run(["rm", "-rf", d, udir])
