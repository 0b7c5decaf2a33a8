"""Judges a tools/gpu-check run: verify.py OUTDIR [BUILD...]

Reads, from OUTDIR, for each BUILD (static, shared): profile-BUILD.json
(scalene-bpf run of check.py work), truth-BUILD.json (what check.py asked
the GPU to do) and rc-BUILD (the run's exit status); and the launch timings
launch-{plain,inject,profiled}-N.json with the profiles
launch-profile-N.json.  Prints one line per check, the launch costs, and
"gpu-check: N passed, M failed"; writes the same to OUTDIR/summary.txt and
the checks to OUTDIR/checks.json.  Exits 1 if any check failed.
"""
import json
import os
import re
import statistics
import sys
from pathlib import Path

KERNEL_TOLERANCE = 0.10  # kernel_s within 10 % of the requested time


class Checks:
    def __init__(self):
        self.rows = []
        self.lines = []

    def say(self, text):
        self.lines.append(text)
        print(text, flush=True)

    def check(self, name, ok, detail):
        self.rows.append({"check": name, "ok": bool(ok), "detail": detail})
        self.say(f"{'PASS' if ok else 'FAIL'} {name}: {detail}")
        return ok


def load(path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        return e


def markers(path):
    found = {}
    with open(path) as f:
        for n, text in enumerate(f, 1):
            m = re.search(r"#\s*LINE:\s*(\w+)", text)
            if m:
                found[m.group(1)] = n
    return found


def same_file(a, b):
    return os.path.realpath(a) == os.path.realpath(b)


def close(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


def judge_build(c, out, build):
    tag = f"[{build}]"
    rc = (out / f"rc-{build}").read_text().strip() if (out / f"rc-{build}").exists() else "?"
    prof, truth = load(out / f"profile-{build}.json"), load(out / f"truth-{build}.json")
    if not c.check(f"{tag} run", rc == "0" and isinstance(prof, dict) and isinstance(truth, dict),
                   f"scalene-bpf run exit {rc}; profile: "
                   f"{'read' if isinstance(prof, dict) else prof}; truth: "
                   f"{'read' if isinstance(truth, dict) else truth} (log: run-{build}.log)"):
        return
    c.say(f"{tag} device {truth['device']} (sm {truth['sm']}), driver CUDA "
          f"{truth['driver_cuda']}, runtime {truth['runtime_cuda']}, device flags "
          f"{truth['device_flags']:#x}")
    gpu = prof.get("scalene_bpf", {}).get("gpu", {})
    procs = gpu.get("processes", [])
    c.check(f"{tag} library", gpu.get("library") and Path(gpu["library"]).is_file(),
            f"CUDA_INJECTION64_PATH={gpu.get('library')} (off: {gpu.get('off', '-')})")
    c.check(f"{tag} profile gpu", prof.get("gpu") is True and prof.get("gpu_device") == "GPU",
            f"gpu {prof.get('gpu')}, gpu_device {prof.get('gpu_device')!r}")
    status = [(p.get("status"), p.get("final")) for p in procs]
    c.check(f"{tag} library status", len(procs) == 1 and procs[0].get("status") in
            ("collecting", "exited"),
            f"processes {status} (collecting or exited expected, one process)")
    if procs:
        p = procs[0]
        c.say(f"{tag} library state: " + ", ".join(
            f"{k} {p.get(k)}" for k in ("cupti_version", "clock", "api_callbacks",
                                        "api_callbacks_refused", "calls", "records",
                                        "dropped_unfinished", "dropped_invalid",
                                        "lost_by_cupti", "buffers_refused")))
        c.check(f"{tag} nothing lost in the library",
                not any(p.get(k) for k in ("dropped_unfinished", "dropped_invalid",
                                           "lost_by_cupti", "buffers_refused")),
                "dropped_unfinished/dropped_invalid/lost_by_cupti/buffers_refused all 0")
    c.check(f"{tag} records joined", gpu.get("records", 0) > 0 and
            gpu.get("records_unmatched") == 0 and gpu.get("lost_ringbuf_full") == 0 and
            gpu.get("calls_without_stack") == 0,
            f"records {gpu.get('records')}, records_unmatched {gpu.get('records_unmatched')}, "
            f"records_outside_profiled_files {gpu.get('records_outside_profiled_files')}, "
            f"lost_ringbuf_full {gpu.get('lost_ringbuf_full')}, calls_without_stack "
            f"{gpu.get('calls_without_stack')}")

    prog = truth["program"]
    at = markers(prog)
    by_line = {r["line"]: r for r in gpu.get("lines", []) if same_file(r["file"], prog)}
    rows = {}
    for name, detail in prof.get("files", {}).items():
        if same_file(name, prog):
            rows = {r["lineno"]: r for r in detail.get("lines", [])}
    for mark, want in truth["marks"].items():
        line = at[mark]
        where = f"{tag} {mark} (line {line})"
        if "n_gpu_percent_min" in want:
            pct = rows.get(line, {}).get("n_gpu_percent")
            c.check(f"{where} n_gpu_percent", pct is not None and pct >= want["n_gpu_percent_min"],
                    f"{pct} (>= {want['n_gpu_percent_min']}; the line waited "
                    f"{truth.get('sync_wait_s', 0):.3f} s)")
            continue
        got = by_line.get(line)
        if not c.check(f"{where} in gpu.lines", got is not None,
                       "present" if got else "no entry in scalene_bpf.gpu.lines"):
            continue
        c.check(f"{where} calls", got["calls"] == want["calls"],
                f"{got['calls']} (expected {want['calls']})")
        if "kernels" in want:
            c.check(f"{where} kernels", got["kernels"] == want["kernels"],
                    f"{got['kernels']} (expected {want['kernels']})")
        if "kernel_s" in want:
            err = abs(got["kernel_s"] - want["kernel_s"]) / want["kernel_s"]
            c.check(f"{where} kernel_s", err <= KERNEL_TOLERANCE,
                    f"{got['kernel_s']:.6f} s (requested {want['kernel_s']:.6f} s, "
                    f"off by {100 * err:.2f} %)")
        if want.get("kernels"):
            # The kernels' names, read from the target and demangled.
            names = [k["name"] for k in got.get("kernels_by_name", [])]
            c.check(f"{where} kernel names",
                    bool(names) and all(n.startswith("gt_") for n in names),
                    f"{names} (expected gt_busy_kernel(...) or gt_tiny_kernel())")
        for key in ("copies", "memsets"):
            if key in want:
                c.check(f"{where} {key}", got[key] == want[key],
                        f"{got[key]} (expected {want[key]})")
        if "copy_mb" in want:
            exp = {d: want["copy_mb"].get(d, 0.0) for d in got["copy_mb"]}
            c.check(f"{where} copy_mb",
                    all(close(got["copy_mb"][d], exp[d]) for d in exp),
                    f"{got['copy_mb']} (expected {exp})")
        for key in ("alloc_mb", "free_mb", "memset_mb"):
            if key in want:
                c.check(f"{where} {key}", close(got[key], want[key]),
                        f"{got[key]} (expected {want[key]})")
    c.say(f"{tag} tiny: {truth['marks']['tiny']['kernels']} empty kernels issued at "
          f"{truth['tiny_issue_ns_per_launch']:.0f} ns per launch in the profiled run")


def judge_launches(c, out):
    runs = {}
    for kind in ("plain", "inject", "profiled"):
        for f in sorted(out.glob(f"launch-{kind}-*.json")):
            d = load(f)
            if isinstance(d, dict):
                runs.setdefault(kind, []).append(d)
    want = int((out / "launch-runs").read_text()) if (out / "launch-runs").exists() else 0
    for kind in ("plain", "inject", "profiled"):
        got = len(runs.get(kind, []))
        c.check(f"[launches] {kind} runs", want and got == want,
                f"{got} of {want} runs wrote their timings")
    med = {}
    for kind, ds in runs.items():
        # The first round of each run loads the module: left out.
        issue = [x for d in ds for x in d["issue_ns_per_launch"][1:]]
        total = [x for d in ds for x in d["total_ns_per_launch"][1:]]
        if issue:
            med[kind] = (statistics.median(issue), statistics.median(total), len(issue),
                         ds[0]["m"])
    names = {"plain": "without the profiler (CUDA_INJECTION64_PATH unset)",
             "inject": "GPU library injected, no BPF attached",
             "profiled": "under scalene-bpf run"}
    for kind in ("plain", "inject", "profiled"):
        if kind in med:
            i, t, n, m = med[kind]
            c.say(f"[launches] {names[kind]}: {i:.0f} ns per launch to issue, {t:.0f} ns "
                  f"per launch until done (median of {n} rounds of {m})")
    if "plain" in med and "profiled" in med:
        c.say(f"[launches] cost per launch: {med['profiled'][0] - med['plain'][0]:.0f} ns "
              f"under the profiler"
              + (f", {med['inject'][0] - med['plain'][0]:.0f} ns of it with the library "
                 f"alone" if "inject" in med else ""))
    for f in sorted(out.glob("launch-profile-*.json")):
        prof = load(f)
        n = f.stem.rsplit("-", 1)[1]
        timing = load(out / f"launch-profiled-{n}.json")
        if not isinstance(prof, dict) or not isinstance(timing, dict):
            c.check(f"[launches] profile {n}", False, f"{f.name} or its timings unreadable")
            continue
        gpu = prof.get("scalene_bpf", {}).get("gpu", {})
        expect = timing["m"] * len(timing["issue_ns_per_launch"])
        c.check(f"[launches] profile {n} joined", gpu.get("kernels") == expect and
                gpu.get("records_unmatched") == 0 and gpu.get("lost_ringbuf_full") == 0,
                f"kernels {gpu.get('kernels')} (launched {expect}), records_unmatched "
                f"{gpu.get('records_unmatched')}, lost_ringbuf_full "
                f"{gpu.get('lost_ringbuf_full')}, calls {gpu.get('calls')}")


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    out = Path(sys.argv[1])
    c = Checks()
    for build in sys.argv[2:] or ("static", "shared"):
        judge_build(c, out, build)
    judge_launches(c, out)
    failed = sum(not r["ok"] for r in c.rows)
    c.say(f"gpu-check: {len(c.rows) - failed} passed, {failed} failed")
    (out / "summary.txt").write_text("\n".join(c.lines) + "\n")
    (out / "checks.json").write_text(json.dumps(c.rows, indent=1))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
