# SPDX-License-Identifier: BSD-2-Clause
"""libscalene-bpf-sampler.so loaded into running interpreters (ctypes.PyDLL,
no LD_PRELOAD) and attached with scalene_bpf_sampler_attach(), as
`scalene-bpf --pid N --memory` has its target do; the program plays the
profiler's part (programs/attach.py says what each case checks).  Here: the
program's exit status and the report line the library writes at exit.

The library: $SCALENE_BPF_SAMPLER_SO, else build/sampler/ (make sampler).
Interpreters that are not installed are skipped, by name.
"""
import os
import pathlib
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PROGRAM = HERE / "programs" / "attach.py"
LIB = pathlib.Path(os.environ.get("SCALENE_BPF_SAMPLER_SO",
                                  ROOT / "build" / "sampler" / "libscalene-bpf-sampler.so"))
sys.path.insert(0, str(ROOT / "tests"))
from interpreters import INTERPRETER_IDS, INTERPRETERS, locate  # noqa: E402

_found = {}


def interpreter(ident):
    """The interpreter with that test id (tests/interpreters.py), or skip."""
    _, where, install = next(i for i in INTERPRETERS if i[0] == ident)
    if ident not in _found:
        _found[ident] = locate(where)
    if _found[ident] is None:
        pytest.skip(f"interpreter {ident} ({where}) not found: install it with `{install}`")
    return pathlib.Path(_found[ident])


# The attach bits of the report at exit (None: no attach field).  A fork
# child leaves by os._exit and writes none; its parent exits attached.
EXPECT_ATTACH = {
    "detach": {"attached", "detach-asked", "restored"},
    "beat-lost": {"attached", "beat-lost", "restored"},
    "beat-kept": {"attached", "beat-lost", "restored"},
    "covered": {"attached", "detach-asked", "covered"},
    "fork": {"attached", "watching"},
    "twice": {"attached", "detach-asked", "restored"},
    "blocked": {"attached", "detach-asked", "restored"},
    "preloaded": None,
}


def parse_report(text):
    lines = [l for l in text.splitlines() if l.startswith("scalene-bpf-sampler: ")]
    assert len(lines) == 1, f"expected one report line, got {text!r}"
    fields = dict(kv.split("=", 1) for kv in lines[0].split()[1:])
    return {k: set(filter(None, fields[k].split(","))) if k in fields else None
            for k in ("hooks", "python", "attach")}


@pytest.mark.parametrize("case", list(EXPECT_ATTACH))
@pytest.mark.parametrize("version", INTERPRETER_IDS)
def test_attach(version, case, tmp_path):
    python = interpreter(version)
    if not LIB.exists():
        pytest.fail(f"{LIB} is missing: build it with `make sampler`")
    report = tmp_path / "report"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SCALENE_BPF_", "PYTHON")) and k != "LD_PRELOAD"}
    env.update(SCALENE_BPF_SAMPLER_REPORT=str(report))
    if case == "preloaded":
        env.update(LD_PRELOAD=str(LIB))
    proc = subprocess.run([str(python), str(PROGRAM), str(LIB), case], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok", proc.stdout
    rep = parse_report(report.read_text())
    assert rep["attach"] == EXPECT_ATTACH[case], rep
    if case == "preloaded":
        assert {"found", "ctor", "checked"} <= rep["python"], rep
        assert "late" not in rep["python"]
        return
    # Loaded late: wrapped by attach only, and no libc hook of ours is bound
    # (libc's malloc comes first in every lookup).
    assert {"found", "late"} <= rep["python"], rep
    assert not {"ctor", "checked", "rewrapped"} & rep["python"], rep
    assert "ready" in rep["hooks"] and "malloc-seen" not in rep["hooks"], rep
