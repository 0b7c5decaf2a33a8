# SPDX-License-Identifier: BSD-2-Clause
"""Time goes to the code that ran: the right file and the right lines."""

import json

import pytest

from e2e_helpers import line_time, markers, profile_run, program


def test_code_objects_at_a_reused_address(python, tmp_path, accuracy):
    prog = program("code_reuse.py")
    first, second = program("spin_first.py"), program("spin_second.py")
    side = tmp_path / "reuse.json"
    res = profile_run(python, prog, [first, second, side], tmp=tmp_path)
    info = json.loads(side.read_text())
    if not info["reused"]:
        pytest.skip("the allocator did not put the second code object where "
                    "the first was: nothing to test this time")
    hot = markers(first)["hot"]
    files = {k: round(v["percent_cpu_time"], 1)
             for k, v in res.profile["files"].items()}
    ctx = f"files: {files}; each file ran {info['first_s']:.2f} s / " \
          f"{info['second_s']:.2f} s of CPU"
    a = line_time(res.profile, first, hot)
    b = line_time(res.profile, second, hot)
    accuracy("spin_first.py hot line s", info["first_s"], a.seconds, "25%")
    accuracy("spin_second.py hot line s", info["second_s"], b.seconds, "25%")
    # Each file's loop ran for its own time; 25% is slack for the loop's
    # other lines (the `for _` header).
    assert abs(a.seconds / info["first_s"] - 1) <= 0.25, ctx
    assert abs(b.seconds / info["second_s"] - 1) <= 0.25, ctx
    # Walks kept what they read of code objects from one walk to the next,
    # and the probe on the deallocator told them when the first was freed
    # (without it, the second file's time went to the first's lines).
    bpf = res.profile["scalene_bpf"]["bpf"]
    assert bpf["code_dealloc_probes"] == {"placed": 1, "failed": 0}, bpf
    assert bpf["code_objects_freed"] >= 1, bpf
