# SPDX-License-Identifier: BSD-2-Clause
"""`python -c CODE`: the code is the program's own, in the file CPython
names "<string>", and its text is the command line's.  Profiled with run
and found by --pid, it is reported with its lines, not left out as a file
with no source."""

from e2e_helpers import (check_compat, file_entry, finish, hot_lines, invoke,
                         profile_command, start_ready)

COMMAND_FILE = "<string>"

# The hot line is the fourth: its text is checked against the profile's.
RUN_CODE = """\
import sys
x = 0
for i in range(int(sys.argv[1])):
    x += i * i % 7
print(x)
"""

ATTACH_CODE = """\
import os, sys
print("ready", flush=True)
x = 0
while not os.path.exists(sys.argv[1]):
    for i in range(20000):
        x += i * i % 7
"""


def _command_lines(profile, code, hot_lineno):
    """The file of the command: its lines are the code's, and the hot line
    has most of the file's time."""
    entry = file_entry(profile, COMMAND_FILE)
    texts = [row["line"].rstrip("\n") for row in entry["lines"]]
    assert texts[:len(code.splitlines())] == code.splitlines(), texts
    rows = entry["lines"]
    times = [r["n_cpu_percent_python"] + r["n_cpu_percent_c"] + r["n_sys_percent"]
             for r in rows]
    hot = times[hot_lineno - 1]
    # The loop's body runs nearly all of the time; the loop's own line
    # (range's next, the test) is the rest.
    assert hot == max(times) and hot >= 0.5 * sum(times), hot_lines(profile)


def test_run_command(python, tmp_path):
    res = profile_command([python, "-c", RUN_CODE, "3000000"], tmp=tmp_path,
                          opts=["--cpu-only"])
    _command_lines(res.profile, RUN_CODE, 4)


def test_attach_command(any_python, tmp_path):
    stop = tmp_path / "stop"
    target = start_ready([any_python, "-c", ATTACH_CODE, stop], tmp_path)
    out = tmp_path / "profile.json"
    try:
        res = invoke(["--pid", target.pid, "--duration", "2", "--cpu-only", "-o", out],
                     cwd=tmp_path, timeout=30)
    finally:
        stop.touch()
        target.wait(timeout=20)
    finish(res, out)
    assert target.returncode == 0
    _command_lines(res.profile, ATTACH_CODE, 6)
    # Scalene's own page opens a profile with a file named so.
    check_compat(out, gui=True)
