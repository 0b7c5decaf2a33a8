# SPDX-License-Identifier: BSD-2-Clause
"""The compatibility checker, tested against profiles written by real Scalene
(the test venv's, made on first use: tests/refprofiles/scalene_refs.py).

Every reference profile must pass all four checks, and each mutated copy of
one (one defect each) must be rejected by the checks that the format notes
say catch that defect -- which proves that the checker can fail.

Run: build/venv/bin/python -m pytest tests/compat -q
SCALENE_COMPAT_NO_GUI=1 skips the headless-Chromium check.
"""

import copy
import glob
import json
import os
import re
import sys

import pytest

import scalene_compat as sc

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "refprofiles"))
import scalene_refs  # noqa: E402

REF_DIR = str(scalene_refs.reference_dir())
NO_GUI = os.environ.get("SCALENE_COMPAT_NO_GUI", "") not in ("", "0")

REFS = sorted(glob.glob(os.path.join(REF_DIR, "*.json")))
MUTATION_BASE = os.path.join(REF_DIR, "scalene_ref_mem.json")


def _need_gui():
    if NO_GUI:
        pytest.skip("SCALENE_COMPAT_NO_GUI is set")


def test_reference_profiles_present():
    names = {os.path.basename(p) for p in REFS}
    assert {"scalene_ref_cpu.json", "scalene_ref_mem.json",
            "scalene_ref_async.json", "minimal_valid.json"} <= names, names


def test_scalene_version_is_the_pinned_one():
    req = os.path.join(REPO, "tests", "requirements.txt")
    with open(req) as f:
        m = re.search(r"^scalene==(\S+)", f.read(), re.M)
    assert m, "tests/requirements.txt does not pin scalene"
    assert sc.scalene_version() == m.group(1), (
        f"installed Scalene {sc.scalene_version()} is not the pinned "
        f"{m.group(1)}: rebuild the test venv")


# ---------------------------------------------------------------- references

@pytest.mark.parametrize("path", REFS, ids=os.path.basename)
def test_reference_strict(path):
    sc.validate_strict(path)


@pytest.mark.parametrize("path", REFS, ids=os.path.basename)
def test_reference_invariants(path):
    sc.check_gui_invariants(sc.load_profile(path), name=path)


@pytest.mark.parametrize("path", REFS, ids=os.path.basename)
def test_reference_cli(path):
    out = sc.view_cli(path)
    prof = sc.load_profile(path)
    for fname in prof["files"]:
        # Rich may fold a long path; its last component is always shown.
        assert os.path.basename(fname) in out, out[-2000:]


@pytest.mark.parametrize("path", REFS, ids=os.path.basename)
def test_reference_gui(path):
    _need_gui()
    d = sc.render_gui(path)
    prof = sc.load_profile(path)
    assert d["tables"] >= 1
    # One table row per source line at least for the largest file.
    most = max((len(f["lines"]) for f in prof["files"].values()), default=0)
    assert d["rows"] >= most, d
    print(f"render_gui {os.path.basename(path)}: {d['seconds']:.2f} s")


# ----------------------------------------------------------------- mutations

def _file(d):
    return next(iter(d["files"].values()))


def _busy_line(d):
    """Index of a line inside a loop that has memory samples."""
    for i, ln in enumerate(_file(d)["lines"]):
        if ln["memory_samples"] and ln["n_mallocs"] > 0:
            return i
    raise AssertionError("base profile has no allocating line")


def m_sparse_lines(d):
    # What --reduced-profile writes: only the lines with activity.
    f = _file(d)
    f["lines"] = [ln for ln in f["lines"]
                  if ln["n_cpu_percent_python"] + ln["n_cpu_percent_c"]
                  + ln["n_sys_percent"] > 0 or ln["n_malloc_mb"] > 0]


def m_missing_memory_samples(d):
    del _file(d)["lines"][_busy_line(d)]["memory_samples"]


def m_missing_functions(d):
    del _file(d)["functions"]


def m_n_mallocs_float(d):
    ln = _file(d)["lines"][_busy_line(d)]
    ln["n_mallocs"] = float(ln["n_mallocs"])  # json writes 625.0


def m_footprint_string(d):
    d["max_footprint_mb"] = str(d["max_footprint_mb"])


def m_end_region_past_end(d):
    lines = _file(d)["lines"]
    lines[-1]["end_region_line"] = len(lines) + 1


def m_nan_percent(d):
    _file(d)["lines"][_busy_line(d)]["n_cpu_percent_c"] = float("nan")


def m_infinity_growth(d):
    d["growth_rate"] = float("inf")  # no bound in the model


def m_cpu_sum_110(d):
    ln = _file(d)["lines"][0]
    ln.update(n_cpu_percent_python=50.0, n_cpu_percent_c=40.0,
              n_sys_percent=20.0)


def m_gpu_as_int(d):
    d["gpu"] = 0


def m_script_close(d):
    _file(d)["lines"][0]["line"] = "x = '</script>'\n"


def m_not_utf8(d):
    return json.dumps(d, indent=4).encode("utf-8").replace(
        b'"line": "', b'"line": "\xe9', 1)


# name -> (mutation, checks that must reject it, text in the GUI failure)
MUTATIONS = {
    "sparse_lines": (m_sparse_lines, {"invariants", "gui"}, "TypeError"),
    "missing_memory_samples": (m_missing_memory_samples,
                               {"strict", "invariants", "gui"}, "TypeError"),
    "missing_functions": (m_missing_functions,
                          {"strict", "invariants", "gui"}, "TypeError"),
    "n_mallocs_1.0": (m_n_mallocs_float, {"strict", "invariants"}, None),
    "max_footprint_mb_string": (m_footprint_string,
                                {"strict", "invariants", "cli", "gui"},
                                "toFixed"),
    "end_region_line_past_end": (m_end_region_past_end,
                                 {"invariants", "gui"}, "TypeError"),
    "nan": (m_nan_percent, {"strict", "invariants"}, None),
    "infinity": (m_infinity_growth, {"invariants"}, None),
    "cpu_sum_110": (m_cpu_sum_110, {"strict", "invariants"}, None),
    "gpu_0": (m_gpu_as_int, {"strict", "invariants"}, None),
    "script_close_tag": (m_script_close, {"invariants"}, None),
    "not_utf8": (m_not_utf8, {"strict", "invariants"}, None),
}


def _run_check(name, path):
    if name == "strict":
        sc.validate_strict(path)
    elif name == "invariants":
        sc.check_gui_invariants(sc.load_profile(path), name=path)
    elif name == "cli":
        sc.view_cli(path)
    elif name == "gui":
        sc.render_gui(path)
    else:  # pragma: no cover
        raise ValueError(name)


@pytest.fixture(scope="module")
def base_profile():
    with open(MUTATION_BASE, encoding="utf-8") as f:
        return json.load(f)


def test_mutation_base_passes_after_rewrite(base_profile, tmp_path):
    # Re-serialising alone must not break anything: the defects below are
    # the mutations' doing.
    p = tmp_path / "rewritten.json"
    p.write_text(json.dumps(base_profile, indent=4), encoding="utf-8")
    sc.validate_strict(str(p))
    sc.check_gui_invariants(sc.load_profile(str(p)))


@pytest.mark.parametrize("case", sorted(MUTATIONS))
def test_mutation_is_rejected(case, base_profile, tmp_path):
    mutate, must_fail, gui_text = MUTATIONS[case]
    d = copy.deepcopy(base_profile)
    raw = mutate(d)
    p = tmp_path / f"{case}.json"
    if raw is None:
        raw = json.dumps(d, indent=4).encode("utf-8")
    p.write_bytes(raw)
    checks = sorted(must_fail)
    if NO_GUI:
        checks = [c for c in checks if c != "gui"]
    assert checks
    for check in checks:
        with pytest.raises(AssertionError) as ei:
            _run_check(check, str(p))
        if check == "gui" and gui_text:
            assert gui_text in str(ei.value), str(ei.value)[:2000]


def test_check_all_reports_every_failed_check(base_profile, tmp_path):
    d = copy.deepcopy(base_profile)
    m_footprint_string(d)
    p = tmp_path / "footprint.json"
    p.write_text(json.dumps(d, indent=4), encoding="utf-8")
    with pytest.raises(sc.CompatError) as ei:
        sc.check_all(str(p), gui=False)
    assert set(ei.value.details["failed"]) == {"strict", "invariants", "cli"}


def test_cli_entry_point(tmp_path):
    import subprocess
    import sys
    good = os.path.join(REF_DIR, "minimal_valid.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{}", encoding="utf-8")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          "scalene_compat.py")
    p = subprocess.run([sys.executable, script, "--no-gui", good, str(bad)],
                       capture_output=True, text=True, timeout=300)
    lines = p.stdout.splitlines()
    assert p.returncode == 1, p.stdout + p.stderr
    assert len(lines) == 2, p.stdout
    assert lines[0].startswith("ok ") and lines[1].startswith("FAIL "), lines
