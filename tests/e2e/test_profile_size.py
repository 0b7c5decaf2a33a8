# SPDX-License-Identifier: BSD-2-Clause
"""A program with thousands of distinct stacks gets a bounded profile: the
heaviest stacks whole, the others merged into their outermost frames, every
sample's weight still there, the merge counted in scalene_bpf.stack_bounds,
and Scalene's viewer and checks still take it."""

import json
import shutil

from e2e_helpers import profile_run, program

# user/report/output.c: STACKS_WHOLE, STACKS_MERGED, STACK_FRAMES.
WHOLE, MERGED, FRAMES = 200, 1000, 10000
# What the stack sections may take, serialised compactly: the frame budget
# at a generous 400 bytes a frame (both sections together).
STACK_BYTES = FRAMES * 400


def _frames(entry):
    return len(entry[0])


def test_many_distinct_stacks_bounded(any_python, tmp_path):
    prog = tmp_path / "many_stacks.py"
    shutil.copy(program("many_stacks.py"), prog)
    res = profile_run(any_python, str(prog), ["5"], tmp=tmp_path)
    prof = res.profile
    bounds = prof["scalene_bpf"]["stack_bounds"]["cpu"]
    combined, stacks = prof["combined_stacks"], prof["stacks"]
    # Enough distinct stacks that written whole they would pass the budget.
    assert bounds["distinct"] > WHOLE, bounds
    assert len(stacks) == len(combined)
    # The bounds hold.
    assert bounds["written_whole"] <= WHOLE
    assert len(combined) - bounds["written_whole"] <= MERGED
    assert sum(_frames(e) for e in combined) <= FRAMES, bounds
    size = len(json.dumps([combined, stacks], separators=(",", ":")))
    assert size <= STACK_BYTES, f"stack sections {size} bytes"
    # Nothing dropped silently: what was merged is counted, and the weights
    # written add up to the weights kept.
    assert bounds["merged_stacks"] > 0
    assert bounds["written_whole"] + bounds["merged_stacks"] == bounds["distinct"]
    assert bounds["merged_entries"] == len(combined) - bounds["written_whole"]
    assert bounds["merge_depth"] >= 0
    total = sum(e[1] for e in combined)
    assert total == bounds["total_weight"]
    assert sum(s[1]["count"] for s in stacks) == total
    merged = combined[bounds["written_whole"]:]
    whole_w = sum(e[1] for e in combined[:bounds["written_whole"]])
    assert total - whole_w == bounds["merged_weight"]
    # The heaviest first, and each merged entry that was cut says so.
    counts = [e[1] for e in combined[:bounds["written_whole"]]]
    assert counts == sorted(counts, reverse=True)
    markers = [e for e in merged
               if e[0] and e[0][-1]["display_name"] in ("[deeper frames merged]",
                                                        "[stacks merged]")]
    # An entry standing for several distinct stacks must have cut them (they
    # share only their outer frames); when each merged stack got an entry
    # of its own (fewer distinct stacks: a loaded machine sampled less),
    # nothing was cut and no marker is due.
    if bounds["merged_stacks"] > bounds["merged_entries"]:
        assert markers, "no merged entry carries the marker frame"
    for e in markers:
        # The cut's frames, the marker, and a truncation marker at most.
        assert len(e[0]) <= bounds["merge_depth"] + 2
    # The timeline points into the written stacks, merged ones included.
    tl = prof["combined_stacks_timeline"]
    assert tl, "empty combined_stacks_timeline"
    assert all(0 <= ev["stack_index"] < len(combined) for ev in tl)
    assert any(ev["stack_index"] >= bounds["written_whole"] for ev in tl)
