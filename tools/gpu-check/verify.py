"""Judges a tools/gpu-check run: verify.py OUTDIR [BUILD...]

Reads, from OUTDIR, for each BUILD (static, shared): probes-BUILD.jsonl,
truth-nobpf-BUILD.json and rc-nobpf-BUILD (check.py work with the GPU
library and probelog.c, no BPF: what the library's probes were given); unless
OUTDIR/nobpf-only exists (no BPF on that machine), profile-BUILD.json
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


def judge_line(c, where, got, want):
    """One marked line's GPU work, as scalene_bpf.gpu.lines has it (or as
    the probe log adds up to the same fields), against what it asked for."""
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
        # The kernels' names, read from the target (demangled in a profile).
        names = [k["name"] for k in got.get("kernels_by_name", [])]
        c.check(f"{where} kernel names", bool(names) and all("gt_" in n for n in names),
                f"{names[:3]} (expected gt_busy_kernel or gt_tiny_kernel)")
    for key in ("copies", "memsets"):
        if key in want:
            c.check(f"{where} {key}", got[key] == want[key], f"{got[key]} (expected {want[key]})")
    if "copy_mb" in want:
        exp = {d: want["copy_mb"].get(d, 0.0) for d in got["copy_mb"]}
        c.check(f"{where} copy_mb", all(close(got["copy_mb"][d], exp[d]) for d in exp),
                f"{got['copy_mb']} (expected {exp})")
    for key in ("alloc_mb", "free_mb", "memset_mb"):
        if key in want:
            c.check(f"{where} {key}", close(got[key], want[key]),
                    f"{got[key]} (expected {want[key]})")


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
        judge_line(c, where, got, want)
    c.say(f"{tag} tiny: {truth['marks']['tiny']['kernels']} empty kernels issued at "
          f"{truth['tiny_issue_ns_per_launch']:.0f} ns per launch in the profiled run")


# gpu.h: enum gpu_rec_kind, enum gpu_status, enum gpu_copy_kind.
REC_KERNEL, REC_MEMCPY, REC_MEMSET, REC_ALLOC, REC_FREE = 1, 2, 3, 4, 5
S_ACTIVE, S_EXITED = 1, 4
COPY_KIND = {1: "htod", 2: "dtoh", 8: "dtod"}
MIB = 1 << 20


def probe_log(path):
    events = []
    try:
        with open(path) as f:
            for n, text in enumerate(f, 1):
                try:
                    events.append(json.loads(text))
                except ValueError as e:
                    return f"{path.name} line {n}: {e}"
    except OSError as e:
        return e
    return events


def judge_probes(c, out, build):
    """The GPU library without BPF: the probe calls probelog.c logged while
    check.py work ran, each API call given to the marked line that was
    running then and each record to its call by correlation id, as the
    loader does, against what check.py asked."""
    tag = f"[{build}, no BPF]"
    rc = (out / f"rc-nobpf-{build}").read_text().strip() \
        if (out / f"rc-nobpf-{build}").exists() else "?"
    events, truth = probe_log(out / f"probes-{build}.jsonl"), load(out / f"truth-nobpf-{build}.json")
    if not c.check(f"{tag} run", rc == "0" and isinstance(events, list) and
                   isinstance(truth, dict),
                   f"check.py work exit {rc}; probe log: "
                   f"{len(events) if isinstance(events, list) else events} events; truth: "
                   f"{'read' if isinstance(truth, dict) else truth} (log: run-nobpf-{build}.log)"):
        return
    inits = [e for e in events if e["ev"] == "init"]
    exits = [e for e in events if e["ev"] == "exit"]
    active = [e for e in inits if (e.get("state") or {}).get("status") == S_ACTIVE]
    c.check(f"{tag} library active", len(active) == 1,
            f"init probes {[(e.get('state') or {}).get('status') for e in inits]} "
            f"(one with status {S_ACTIVE}, collecting, expected)")
    st = (exits[-1].get("state") or {}) if exits else {}
    c.check(f"{tag} final flush", bool(exits) and st.get("status") == S_EXITED,
            f"exit probe state status {st.get('status')} (expected {S_EXITED}: flushed at exit)")
    c.say(f"{tag} library state at exit: " + ", ".join(
        f"{k} {st.get(k)}" for k in ("cupti_version", "cupti_from", "clock", "api_callbacks",
                                      "api_failed", "api_calls", "records", "incomplete",
                                      "invalid", "lost", "buffers_refused",
                                      "buffers_malformed")))
    c.check(f"{tag} nothing lost in the library",
            st and not any(st.get(k) for k in ("incomplete", "invalid", "lost",
                                               "buffers_refused", "buffers_malformed")),
            "incomplete/invalid/lost/buffers_refused/buffers_malformed all 0")
    c.check(f"{tag} monotonic clock", st.get("clock") == 1,
            f"clock {st.get('clock')} (1: records in CLOCK_MONOTONIC, as the samples)")
    alias = {e["inner"]: e["outer"] for e in events if e["ev"] == "alias"}
    calls = {e["corr"]: e for e in events if e["ev"] == "api"}
    recs = [e for e in events if e["ev"] == "rec"]

    def call_of(corr):
        seen = set()
        while corr in alias and corr not in seen:
            seen.add(corr)
            corr = alias[corr]
        return calls.get(corr)

    unmatched = [r for r in recs if not call_of(r["corr"])]
    c.check(f"{tag} records joined", recs and not unmatched,
            f"{len(recs)} records, {len(unmatched)} without a probed call "
            f"(kinds {sorted({r['kind'] for r in unmatched})})")
    win = truth["windows"]

    def mark_of(call):
        for mark, (t0, t1) in win.items():
            if t0 <= call["t"] <= t1:
                return mark
        return None

    per = {}
    for call in calls.values():
        m = mark_of(call)
        if m:
            per.setdefault(m, {"calls": 0, "recs": []})["calls"] += 1
    for r in recs:
        call = call_of(r["corr"])
        m = mark_of(call) if call else None
        if m:
            per[m]["recs"].append(r)
    for mark, want in truth["marks"].items():
        if "calls" not in want:
            continue  # GPU % of a waiting line: the profile's (BPF) check
        judge_line(c, f"{tag} {mark}", line_from_log(per.get(mark)), want)


def line_from_log(per_mark):
    """A marked line's calls and records from the probe log, added up into
    the fields scalene_bpf.gpu.lines gives a line."""
    calls, recs = (per_mark["calls"], per_mark["recs"]) if per_mark else (0, [])
    kernels = [r for r in recs if r["kind"] == REC_KERNEL]
    copy_mb = {d: 0.0 for d in ("htod", "dtoh", "dtod", "other")}
    for r in recs:
        if r["kind"] == REC_MEMCPY:
            d = COPY_KIND.get(r["copy_kind"], "other")
            copy_mb[d if d in copy_mb else "other"] += r["bytes"] / MIB
    mb = {kind: sum(r["bytes"] for r in recs if r["kind"] == kind) / MIB
          for kind in (REC_MEMSET, REC_ALLOC, REC_FREE)}
    return {"calls": calls, "kernels": len(kernels),
            "kernel_s": sum(r["end"] - r["start"] for r in kernels) / 1e9,
            "kernels_by_name": [{"name": n} for n in sorted({r["name"] or "" for r in kernels})],
            "copies": sum(r["kind"] == REC_MEMCPY for r in recs),
            "memsets": sum(r["kind"] == REC_MEMSET for r in recs), "copy_mb": copy_mb,
            "memset_mb": mb[REC_MEMSET], "alloc_mb": mb[REC_ALLOC], "free_mb": mb[REC_FREE]}


def judge_torch(c, out, case):
    """A PyTorch case of torch_check.py: the program ran to its end (or to
    the end it chose), the profile was written, and each marked line has at
    least the kernels its work must launch, with their names readable."""
    tag = f"[torch {case}]"
    rc = (out / f"rc-torch-{case}").read_text().strip() \
        if (out / f"rc-torch-{case}").exists() else "?"
    prof, truth = load(out / f"profile-torch-{case}.json"), load(out / f"truth-torch-{case}.json")
    ok_rc = ("0", "143") if case == "sigterm" else ("0",)
    if not c.check(f"{tag} run", rc in ok_rc and isinstance(prof, dict) and isinstance(truth, dict),
                   f"scalene-bpf run exit {rc} (expected {' or '.join(ok_rc)}); profile: "
                   f"{'read' if isinstance(prof, dict) else prof}; truth: "
                   f"{'read' if isinstance(truth, dict) else truth} (log: run-torch-{case}.log)"):
        return
    gpu = prof.get("scalene_bpf", {}).get("gpu", {})
    procs = gpu.get("processes", [])
    c.say(f"{tag} library: " + "; ".join(
        f"pid {p.get('pid')} {p.get('status')} (cupti {p.get('cupti_found')}, calls "
        f"{p.get('calls')}, records {p.get('records')}, lost_by_cupti {p.get('lost_by_cupti')}"
        + (f", stopped after {p['stopped_after_s']} s" if "stopped_after_s" in p else "") + ")"
        for p in procs))
    c.say(f"{tag} totals: calls {gpu.get('calls')}, kernels {gpu.get('kernels')}, kernel_s "
          f"{gpu.get('kernel_s')}, calls_on_main_thread_line {gpu.get('calls_on_main_thread_line')}, "
          f"calls_on_no_line {gpu.get('calls_on_no_line')}, records_unmatched "
          f"{gpu.get('records_unmatched')}, kernel_s_outside_profiled_files "
          f"{gpu.get('kernel_s_outside_profiled_files')}, settle_waited_max_s "
          f"{gpu.get('settle_waited_max_s')}")
    prog = truth["program"]
    at = markers(prog)
    by_line = {r["line"]: r for r in gpu.get("lines", []) if same_file(r["file"], prog)}
    total = gpu.get("kernel_s") or 0.0
    on_lines = sum(r.get("kernel_s", 0.0) for r in by_line.values())
    for mark, want in truth["expect"].items():
        got = by_line.get(at[mark], {})
        lost = case == "profiler" and mark == "after_profiler" and \
            any(str(p.get("status", "")).startswith("stopped mid-run") for p in procs)
        if lost:
            c.check(f"{tag} {mark}", True, "torch.profiler's teardown took CUPTI away: the "
                    "profile says so (status stopped mid-run, stopped_after_s)")
            continue
        if "kernels_min" in want:
            c.check(f"{tag} {mark} kernels", got.get("kernels", 0) >= want["kernels_min"],
                    f"{got.get('kernels', 0)} on line {at[mark]} (at least "
                    f"{want['kernels_min']}), kernel_s {got.get('kernel_s', 0.0):.4f}")
        for key in ("alloc_mb", "free_mb"):
            if f"{key}_min" in want:
                c.check(f"{tag} {mark} {key}", got.get(key, 0.0) >= want[f"{key}_min"],
                        f"{got.get(key, 0.0)} on line {at[mark]} (at least "
                        f"{want[f'{key}_min']}; host_{key} {got.get(f'host_{key}', 0.0)})")
        names = [k["name"] for k in got.get("kernels_by_name", [])]
        if want.get("long_names"):
            c.check(f"{tag} {mark} kernel names", bool(names) and all(len(n) > 8 for n in names),
                    f"{names[:3]}")
    if case == "train":
        c.check(f"{tag} backward's kernels on its line", gpu.get("calls_on_main_thread_line", 0) > 0,
                f"calls_on_main_thread_line {gpu.get('calls_on_main_thread_line')} (autograd's "
                f"launches, credited to the line that waits for them)")
        c.check(f"{tag} kernel time on program lines", total and on_lines >= 0.9 * total,
                f"{on_lines:.3f} of {total:.3f} s on torch_check.py's lines (at least 90 %)")
    if case == "profiler":
        c.say(f"{tag} torch.profiler recorded {truth.get('torch_profiler_events')} events, "
              f"{truth.get('torch_profiler_cuda_events')} of them CUDA (0: it could not subscribe "
              f"to CUPTI while the profiler had; docs/gpu.md)")


def judge_cupti_missing(c, out):
    """check.py work with the bundle's CUDA libraries off the search path and
    CUDA_HOME pointing nowhere: the program runs, and the profile says which
    CUPTI was used, or that none was found."""
    rc = (out / "rc-nocupti").read_text().strip() if (out / "rc-nocupti").exists() else "?"
    prof = load(out / "profile-nocupti.json")
    if not c.check("[cupti off the path] run", rc == "0" and isinstance(prof, dict),
                   f"scalene-bpf run exit {rc}; profile "
                   f"{'read' if isinstance(prof, dict) else prof} (log: run-nocupti.log)"):
        return
    procs = prof.get("scalene_bpf", {}).get("gpu", {}).get("processes", [])
    said = [(p.get("status"), p.get("cupti_found")) for p in procs]
    c.check("[cupti off the path] said", len(procs) == 1 and (
        str(procs[0].get("status", "")).startswith("no CUPTI found") or
        procs[0].get("cupti_found")),
        f"{said} (no CUPTI found, or where the CUPTI used was found)")


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
    builds = sys.argv[2:] or ("static", "shared")
    for build in builds:
        if (out / f"rc-nobpf-{build}").exists():
            judge_probes(c, out, build)
    if not (out / "nobpf-only").exists():
        for build in builds:
            judge_build(c, out, build)
        if (out / "rc-nocupti").exists():
            judge_cupti_missing(c, out)
        for f in sorted(out.glob("rc-torch-*")):
            judge_torch(c, out, f.name[len("rc-torch-"):])
        judge_launches(c, out)
    failed = sum(not r["ok"] for r in c.rows)
    c.say(f"gpu-check: {len(c.rows) - failed} passed, {failed} failed")
    (out / "summary.txt").write_text("\n".join(c.lines) + "\n")
    (out / "checks.json").write_text(json.dumps(c.rows, indent=1))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
