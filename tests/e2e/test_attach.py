# SPDX-License-Identifier: BSD-2-Clause
"""scalene-bpf --pid: attach to a Python process that is already running.

The target must not notice: it keeps running afterwards, unstopped and
unsignalled, and ends with its own exit status."""

import subprocess
import threading
import time

import pytest

from e2e_helpers import (clean_env, finish, hot_lines, invoke, line_time,
                         markers, program, samples_behind, share_range,
                         start_ready)


def _start_target(python, arg, tmp_path):
    return start_ready([python, program("attach_target.py"), arg], tmp_path)


def _state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def test_attach_for_two_seconds(python, tmp_path, accuracy):
    stop = tmp_path / "stop"
    target = _start_target(python, stop, tmp_path)
    out = tmp_path / "profile.json"
    try:
        res = invoke(["--pid", target.pid, "--duration", "2", "-o", out],
                     cwd=tmp_path, timeout=30)
        # Still running, not stopped or traced: "R" or "S", never "T"/"t".
        state = _state(target.pid)
        assert target.poll() is None, "the target ended during the attach"
        assert state in ("R", "S"), f"target state {state}"
        time.sleep(0.3)
        assert target.poll() is None, "the target ended after the attach"
    finally:
        stop.touch()
    try:
        rest, err = target.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        target.kill()
        raise AssertionError("the target did not stop when asked")
    # Exit 0 from its own end: not killed by a signal.
    assert target.returncode == 0, (target.returncode, err)
    assert rest.startswith("done "), rest
    finish(res, out)
    prof = res.profile
    hot = line_time(prof, program("attach_target.py"),
                    markers(program("attach_target.py"))["hot"])
    accuracy("attach: hot line % of the time", 100.0, hot.percent, ">= 85")
    accuracy("attach: elapsed_time_sec", 2.0, prof["elapsed_time_sec"],
             "1.5..3")
    # The target spends all its time on that line (a busy loop): 85% leaves
    # room for the loop's other line and kernel work.
    assert hot.percent >= 85, hot_lines(prof)
    # --duration 2: the profile covers about two seconds.
    assert 1.5 <= prof["elapsed_time_sec"] <= 3.0, prof["elapsed_time_sec"]
    assert prof["program"].endswith("attach_target.py"), prof["program"]
    # Every code object the samples name is alive until the end of the run:
    # each frame was read.
    bpf = prof["scalene_bpf"]["bpf"]
    assert bpf["frames_unreadable"] == 0, bpf


def _reap_in_background(proc):
    """Collect the target as soon as it ends, as a shell would: an exited
    process that nobody waited for is a zombie, and still "exists"."""
    t = threading.Thread(target=proc.wait, daemon=True)
    t.start()
    return t


def test_attach_target_exits_first(python, tmp_path):
    # The target spins 2.5 s after saying "ready" (the attach takes about
    # 1 s to start), then exits by itself; the attach asks for 20 s and must
    # end when the target does.
    target = _start_target(python, "2.5", tmp_path)
    reaper = _reap_in_background(target)
    out = tmp_path / "profile.json"
    try:
        res = invoke(["--pid", target.pid, "--duration", "20", "-o", out],
                     cwd=tmp_path, timeout=30)
    finally:
        reaper.join(timeout=20)
    assert target.returncode == 0
    # Ended with the target, not after the 20 s.
    assert res.wall_s < 10, res.describe()
    finish(res, out)
    hot = line_time(res.profile, program("attach_target.py"),
                    markers(program("attach_target.py"))["hot"])
    assert hot.percent >= 50, hot_lines(res.profile)


def test_attach_target_exits_during_setup(any_python, tmp_path):
    # The target is seen alive, then told to end 0.15 s after scalene-bpf
    # starts: before its BPF programs are attached (that takes 0.4-1 s).
    # Its parent (this test) does not collect it until the attach is over.
    stop = tmp_path / "stop"
    target = _start_target(any_python, stop, tmp_path)
    out = tmp_path / "profile.json"

    def end_target(proc):
        time.sleep(0.15)
        stop.touch()

    try:
        res = invoke(["--pid", target.pid, "--duration", "4", "-o", out],
                     cwd=tmp_path, timeout=30, during=end_target)
    finally:
        stop.touch()
        target.wait(timeout=20)
    # Gone is gone: whether it reports an empty profile or an error, it
    # must not wait for the 4 s.
    assert res.wall_s < 3, res.describe()
    assert res.rc in (0, 1), res.describe()


def test_attach_memory_probe_cost_apart(python, tmp_path, accuracy):
    """--pid --memory, the probes in place all the time (--memory-budget
    100): every allocation traps into a uprobe.  The CPU time of
    those traps is the profiler's: it is counted apart (probe_overhead_s) and
    kept out of the lines, so the allocating line's system share stays near
    what it is without --memory."""
    prog = program("attach_churn.py")
    line = markers(prog)["churn"]
    stop = tmp_path / "stop"
    target = subprocess.Popen([python, prog, str(stop)], cwd=str(tmp_path),
                              env=clean_env(), stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    plain, probed = tmp_path / "plain.json", tmp_path / "probed.json"
    try:
        assert target.stdout.readline().strip() == "ready"
        res_plain = invoke(["--pid", target.pid, "--duration", "2", "-o", plain],
                           cwd=tmp_path, timeout=60)
        res_probed = invoke(["--pid", target.pid, "--memory", "--memory-budget", "100",
                             "--duration", "2",
                             "-o", probed], cwd=tmp_path, timeout=60)
        assert target.poll() is None, "the target ended during the attach"
    finally:
        stop.touch()
    rest, err = target.communicate(timeout=30)
    assert target.returncode == 0, (target.returncode, err)
    p_plain = finish(res_plain, plain).profile
    p_probed = finish(res_probed, probed).profile
    before = line_time(p_plain, prog, line)
    after = line_time(p_probed, prog, line)
    facts = p_probed["scalene_bpf"]
    bpf, mem = facts["bpf"], facts["memory"]
    ctx = (f"without --memory: {hot_lines(p_plain)}; with: {hot_lines(p_probed)}; "
           f"overhead {facts.get('probe_overhead_s')} s, sampled "
           f"{facts['total_sampled_s']} s, hits {mem.get('hits')} at "
           f"{mem.get('ns_per_hit_measured')} ns; bpf {bpf}")
    # No uprobes, nothing to tell apart: no such figure.
    assert "probe_overhead_s" not in p_plain["scalene_bpf"], p_plain["scalene_bpf"]
    overhead = facts["probe_overhead_s"]
    assert overhead > 0 and bpf["probe_samples"] > 0, ctx
    assert bpf["probe_check_ns_per_check"] > 0, ctx
    # The probes fired often enough for their time to matter: at least
    # half the program's own sampled time (measured: 2 to 5 times it).
    assert overhead >= 0.5 * facts["total_sampled_s"], ctx
    # Plausible against the loader's calibration (a hit in an untracked
    # process, timed on its own CPU clock): a tracked hit does a little more
    # (thread state, the countdown, a record now and then); sampled time is
    # a count of 1 ms samples.  Measured 0.8 to 1.1 times the estimate.
    estimate = mem["hits"] * mem["ns_per_hit_measured"] / 1e9
    accuracy("attach --memory: probe overhead s vs hits x ns/hit",
             round(estimate, 2), round(overhead, 2), "x0.4..x2.5")
    assert 0.4 * estimate <= overhead <= 2.5 * estimate, ctx
    # Without the separation the line's system share went from ~1 % to
    # 60-70 %.  With it, what is left is the probe samples the check misses
    # plus the program's own kernel work, which grows with the wall time the
    # probes add (timer interrupts, preemption, its stat() per round).  As
    # a share of the program's time the misses are multiplied by the
    # overhead-to-program ratio (2 to 5 here), so the tolerance is stated in
    # the probes' time: at most 3 % of it may land on the line, plus the
    # noise of the two profiles' few hundred samples each: the binomial
    # range of the difference of two shares (their variances add: one share
    # at n1 n2 / (n1 + n2) samples).  Measured on a busy 2-CPU machine: 0.6
    # to 1.7 % (+2.8 to +6.1 points).
    ratio = overhead / facts["total_sampled_s"]
    missed = max(0.0, after.system - before.system) / ratio
    n1, n2 = (samples_behind(p, sum(t["cpu_s"] for t in p["scalene_bpf"]["threads"]))
              for p in (p_plain, p_probed))
    noise = 100 * share_range(before.system / 100, n1 * n2 / (n1 + n2))[1] - before.system
    accuracy("attach --memory: churn line system % (vs without --memory)",
             round(before.system, 1), round(after.system, 1),
             f"+{noise + 3 * ratio:.1f}")
    accuracy("attach --memory: probes' time left on the churn line, %", 0.0,
             round(missed, 2), f"<= 3 (+{noise:.1f} points of the line)")
    assert after.system <= before.system + noise + 3 * ratio, ctx
