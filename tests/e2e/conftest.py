# SPDX-License-Identifier: BSD-2-Clause
"""Shared machinery of the end-to-end suite.

Every test profiles a real Python program with ./scalene-bpf, as root, and
checks the JSON it writes: the numbers against what the program is known to
do, and the format with tests/compat/scalene_compat.py (Scalene's own strict
schema, the viewers' invariants, `scalene view --cli`) plus our own
`scalene-bpf view --cli`.  After every invocation of scalene-bpf no BPF
program or link of ours may be left in the kernel.

Interpreters: pyenv's 3.9 to 3.13, Debian's statically linked
/usr/bin/python3.11, and Debian unstable's 3.14 and 3.15, also static
(tools/python-sid).  A missing one makes its tests SKIP with a message that
says how to install it.

Options:
  --accuracy-report FILE   write the measured-vs-expected numbers of every
                           accuracy check as tab-separated lines ("-": print
                           them at the end of the run)
"""

import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from e2e_helpers import (BIN, INTERPRETER_IDS, SUDO_VARS, default_interpreter,
                         ensure_test_user, find_interpreter, runnable_by)


# --------------------------------------------------------------------------
# Session-wide requirements
# --------------------------------------------------------------------------

def pytest_addoption(parser):
    parser.addoption("--accuracy-report", default=None, metavar="FILE",
                     help="write measured-vs-expected numbers (TSV; '-' "
                          "prints them in the summary)")


def pytest_configure(config):
    config._sbpf_accuracy = []
    # The suite's environment is tools/run-tests' (make test, make e2e): run
    # straight under sudo, scalene-bpf would run the programs and write the
    # profiles as the user who ran sudo, into the suite's root-only folders.
    inherited = [k for k in SUDO_VARS if k in os.environ]
    if inherited:
        pytest.exit(f"{', '.join(inherited)} set: run the end-to-end tests with "
                    "`sudo make e2e` (K=expr selects them), which clears them "
                    "(tests/e2e/README.md)", returncode=4)


@pytest.fixture(scope="session", autouse=True)
def _requirements():
    if not BIN.is_file() or not os.access(BIN, os.X_OK):
        pytest.fail(f"{BIN} not found or not executable: run make first",
                    pytrace=False)
    if os.geteuid() != 0:
        pytest.skip("the end-to-end tests need root (BPF): run them with "
                    "sudo")
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        pytest.skip("the kernel has no BTF (/sys/kernel/btf/vmlinux): "
                    "scalene-bpf cannot load here")
    if shutil.which("bpftool") is None:
        pytest.fail("bpftool not found: the leak checks need it "
                    "(apt-get install bpftool)", pytrace=False)


@pytest.fixture(params=INTERPRETER_IDS)
def python(request):
    """Path of one interpreter under test (skips when it is missing)."""
    return find_interpreter(request.param)


@pytest.fixture
def any_python():
    """One interpreter that is present, for tests of the CLI itself."""
    return default_interpreter()


@pytest.fixture
def user_python():
    """(test user, an interpreter that user can run): pyenv's live under
    /root, which is private, so this is usually Debian's python3.11."""
    user = ensure_test_user()
    for ident in ("debian3.11-static",) + tuple(INTERPRETER_IDS):
        try:
            path = find_interpreter(ident)
        except pytest.skip.Exception:
            continue
        if runnable_by(user, path):
            return user, path
    pytest.skip(f"no interpreter that {user.pw_name} can run: apt-get "
                "install python3.11")


@pytest.fixture
def user_dir():
    """(test user, a directory that user owns outside root's private ones),
    removed afterwards."""
    user = ensure_test_user()
    d = Path(tempfile.mkdtemp(prefix="sbpf-e2e-"))
    os.chmod(d, 0o755)
    os.chown(d, user.pw_uid, user.pw_gid)
    yield user, d
    shutil.rmtree(d, ignore_errors=True)


# --------------------------------------------------------------------------
# Accuracy notes
# --------------------------------------------------------------------------

@pytest.fixture
def accuracy(request):
    """record(quantity, expected, measured, tolerance): keeps the number for
    the report (--accuracy-report), whether or not the assert holds."""
    if not hasattr(request.config, "_sbpf_accuracy"):
        request.config._sbpf_accuracy = []
    rows = request.config._sbpf_accuracy
    test = request.node.originalname or request.node.name
    m = re.search(r"\[(.*)\]$", request.node.name)
    params = m.group(1) if m else ""

    def record(quantity, expected, measured, tolerance=""):
        rows.append((test, params, quantity, expected, measured, tolerance))
    return record


def _fmt(v):
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    # The option exists when this conftest was loaded at start-up (pytest
    # tests/e2e); not when pytest found it later (pytest tests).
    dest = config.getoption("--accuracy-report", default=None)
    rows = getattr(config, "_sbpf_accuracy", [])
    if not dest or not rows:
        return
    lines = ["test\tparams\tquantity\texpected\tmeasured\ttolerance"]
    lines += ["\t".join(_fmt(c) for c in r) for r in rows]
    if dest == "-":
        terminalreporter.section("accuracy: expected vs measured")
        for ln in lines:
            terminalreporter.write_line(ln)
    else:
        with open(dest, "w") as f:
            f.write("\n".join(lines) + "\n")
        terminalreporter.write_line(f"accuracy report written to {dest}")
