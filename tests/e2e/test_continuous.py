# SPDX-License-Identifier: BSD-2-Clause
"""scalene-bpf --all --continuous: a profile per process per interval, in one
folder an interval (DIR/intervals/NNNNNN-TIME/) with its own index.json, the
run's index.json adding the intervals up; with --otlp-endpoint, each
interval's profiles sent as one OpenTelemetry profiles request to a receiver
on 127.0.0.1 that decodes them with the OpenTelemetry project's own classes.

The programs run under a name of their own (a link to the interpreter), so
that --comm picks them out of whatever else runs on the machine."""

import collections
import http.server
import json
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.parse

from e2e_helpers import (check_compat, clean_env, default_interpreter, invoke,
                         named_interpreter, period_s, program, unseen_tail_s,
                         wait_following)
from test_view_export import (otlp_request_class, pprof_message,  # noqa: F401 (a fixture)
                               read_pprof)

BUSY = program("busy.py")


def _folders(out_dir):
    return sorted(p for p in (out_dir / "intervals").iterdir() if p.is_dir())


def _run(tmp_path, argv_long, argv_short, opts):
    """Runs --all --continuous (opts) while a long and a short program run
    side by side; stops it 0.3 s after both ended.  The two programs' pids."""
    out_dir = tmp_path / "out"
    ran = {}

    def during(proc):
        wait_following(proc)
        progs = [subprocess.Popen([str(a) for a in argv], cwd=str(tmp_path), env=clean_env(),
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
                 for argv in (argv_long, argv_short)]
        ran["pids"] = [p.pid for p in progs]
        ran["rc"] = [p.communicate(timeout=240) and p.returncode for p in progs]
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)

    res = invoke(["--all", "-v", "--continuous", *opts, "--duration", "300", "-o", out_dir],
                 cwd=tmp_path, timeout=300, during=during)
    assert res.rc == 0, res.describe()
    assert ran["rc"] == [0, 0], ran
    return out_dir, ran["pids"], res


def test_intervals_add_up(tmp_path, accuracy, pprof_message):  # noqa: F811
    """A busy program (3 s of CPU) and a short one (0.4 s) under --interval 1:
    the intervals follow one another with no gap; each has its index and,
    for each process that ran in it, a Scalene profile and its pprof; the
    process's numbers over its intervals add up to those of the run's index
    (nothing counted twice, nothing lost at a cut) and to its own CPU clock
    (as a single profile's would: but for its run after its last sample and
    its start-up, by periods); the short one ends in the interval it exits
    in, said there."""
    python = default_interpreter()
    link = named_interpreter(python, tmp_path, "sbpf-cont")
    truth_long, truth_short = tmp_path / "long.json", tmp_path / "short.json"
    out_dir, (pid_long, pid_short), res = _run(
        tmp_path, [link, BUSY, "3.0", truth_long], [link, BUSY, "0.4", truth_short],
        ["--interval", "1", "--comm", "sbpf-cont"])
    index = json.loads((out_dir / "index.json").read_text())
    folders = _folders(out_dir)
    cont = index["continuous"]
    assert cont["interval_s"] == 1 and cont["folders_removed"] == 0, cont
    assert cont["intervals"] == len(folders) >= 4, (cont, folders)
    assert cont["bytes_kept"] == sum(f.stat().st_size for d in folders for f in d.iterdir())

    pieces = {pid_long: [], pid_short: []}
    end_prev = None
    for n, d in enumerate(folders, 1):
        sub = json.loads((d / "index.json").read_text())
        assert sub["interval"] == n and d.name.startswith(f"{n:06d}-"), (d, sub["interval"])
        start, length = sub["start_time_absolute"], sub["elapsed_time_sec"]
        # Back to back: the next starts where this one ended (the cut's
        # own work between the two clock reads, well under a millisecond).
        if end_prev is not None:
            assert abs(start - end_prev) < 0.005, (n, start, end_prev)
        end_prev = start + length
        # Each a second, but for the cut coming late (the loader's poll)
        # and the last, cut short by the stop.
        assert length < 1.2 or n == len(folders), (n, length)
        for e in sub["processes"]:
            if e["pid"] not in pieces:
                continue
            if e["profile"] is None:
                # Ended in this interval with no sample after the cut.
                assert e.get("ended") and e["samples"] == 0 and e["not_profiled"], e
                pieces[e["pid"]].append((n, e, None))
                continue
            prof = check_compat(d / e["profile"])
            assert prof["elapsed_time_sec"] <= length + 1e-3, (n, prof["elapsed_time_sec"])
            pb = (d / e["profile"]).with_suffix("").with_suffix(".pb.gz")
            if not prof["combined_stacks"] and not prof["memory_stacks"]:
                # Only samples with no Python frame (its start-up, at the
                # end of an interval): no stack, no pprof.
                assert not pb.exists(), pb
                pieces[e["pid"]].append((n, e, prof))
                continue
            pp, stacks, strings, _ = read_pprof(pb.read_bytes(), pprof_message)
            # The interval's CPU stacks: their sampled time is the
            # profile's, but for samples with no stack (no Python frame,
            # or a stack not read).
            types = [strings[v.type] for v in pp.sample_type]
            assert stacks and "time" in types, (pb, types)
            time_ns = sum(v[types.index("time")] for v in stacks.values())
            facts = prof["scalene_bpf"]
            un = facts["unattributed"]
            want_ns = 1e9 * (facts["total_sampled_s"] - un["threads_without_python_s"]
                             - un["unreadable_stacks_s"])
            assert abs(time_ns - want_ns) <= 1e-3 * want_ns + len(stacks), (pb, time_ns, want_ns)
            pieces[e["pid"]].append((n, e, prof))

    for pid, truth in ((pid_long, truth_long), (pid_short, truth_short)):
        [whole] = [p for p in index["processes"] if p["pid"] == pid]
        got = pieces[pid]
        assert whole["profile"] is None, whole
        assert whole["interval_profiles"] == sum(p is not None for _, _, p in got), whole
        for key in ("cpu_s", "python_s", "native_s", "system_s", "samples"):
            total = sum(e[key] for _, e, _ in got)
            assert abs(total - whole[key]) <= 1e-6 * max(1.0, whole[key]), (key, total, whole)
        # In consecutive intervals, each but the last still running.
        numbers = [n for n, _, _ in got]
        assert numbers == list(range(numbers[0], numbers[0] + len(numbers))), numbers
        assert [e.get("ended") for _, e, _ in got] == [None] * (len(got) - 1) + ["exit"], got
        assert whole["exited"] and whole["exit_code"] == 0, whole
        # Against the program's own clock (its loop's CPU time, the most of
        # its run): a profile misses at most its run after the last sample
        # (unseen_tail_s) and counts its start-up and exit beside the loop
        # (interpreter start: 20-60 ms here).
        own = json.loads(truth.read_text())["cpu_s"]
        prof = got[0][2]
        lo = own - unseen_tail_s(prof) - period_s(prof)
        hi = own + 0.25
        accuracy(f"--continuous: process {pid}'s CPU over {len(got)} intervals vs its loop",
                 own, round(whole["cpu_s"], 4), f"{lo:.3f}..{hi:.3f}")
        assert lo <= whole["cpu_s"] <= hi, (whole, own)
    assert len(pieces[pid_long]) >= 3, pieces[pid_long]


def test_oldest_intervals_go_past_max_disk(tmp_path):
    """--max-disk 0.05 (50 kB) with half-second intervals while a program
    computes for 2.5 s: the oldest folders go first, each removal said in
    the log and counted in the index; what is kept is the last folders, in
    order, within the bound (or the last one alone)."""
    python = default_interpreter()
    link = named_interpreter(python, tmp_path, "sbpf-rot")
    out_dir, _, res = _run(tmp_path, [link, BUSY, "2.5"], [link, BUSY, "0.1"],
                           ["--interval", "0.5", "--max-disk", "0.05", "--comm", "sbpf-rot"])
    cont = json.loads((out_dir / "index.json").read_text())["continuous"]
    folders = _folders(out_dir)
    removed = [line for line in res.stderr.splitlines() if "took more than --max-disk" in line]
    assert cont["folders_removed"] >= 1 and len(removed) == cont["folders_removed"], \
        (cont, res.stderr[-2000:])
    assert cont["folders_kept"] == len(folders)
    assert cont["intervals"] == cont["folders_kept"] + cont["folders_removed"], cont
    numbers = [int(d.name.split("-")[0]) for d in folders]
    assert numbers == list(range(cont["intervals"] - len(folders) + 1, cont["intervals"] + 1))
    kept = sum(f.stat().st_size for d in folders for f in d.iterdir())
    assert kept == cont["bytes_kept"], (kept, cont)
    assert kept <= 50_000 or len(folders) == 1, (kept, folders)


def test_memory_hits_per_interval(tmp_path):
    """--memory: each interval counts the allocation-probe hits of its own
    time, in its index and in the profile's memory facts; over the
    intervals they add up to the run's count for the process."""
    python = default_interpreter()
    link = named_interpreter(python, tmp_path, "sbpf-mem")
    out_dir, (pid, _), _ = _run(tmp_path, [link, BUSY, "1.0"], [link, BUSY, "0.1"],
                                ["--interval", "0.5", "--memory", "--comm", "sbpf-mem"])
    [whole] = [p for p in json.loads((out_dir / "index.json").read_text())["processes"]
               if p["pid"] == pid]
    hits = []
    for d in _folders(out_dir):
        for e in json.loads((d / "index.json").read_text())["processes"]:
            if e["pid"] != pid:
                continue
            hits.append(e["memory_probe_hits"])
            if e["profile"]:
                mem = json.loads((d / e["profile"]).read_text())["scalene_bpf"]["memory"]
                assert mem["hits"] == e["memory_probe_hits"], (d, mem, e)
    assert len(hits) >= 2 and all(h is not None and h >= 0 for h in hits), hits
    assert whole["memory_probe_hits"] > 0 and sum(hits) == whole["memory_probe_hits"], \
        (hits, whole["memory_probe_hits"])


class _Receiver:
    """An OTLP/HTTP receiver on 127.0.0.1: keeps each request (path,
    headers, body) and answers `status` with an empty response."""

    def __init__(self, status=200):
        self.requests = []
        self.status = status
        recv = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                recv.requests.append((self.path, dict(self.headers), body))
                self.send_response(recv.status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def _attrs(resource):
    return {a.key: getattr(a.value, a.value.WhichOneof("value"))
            for a in resource.attributes}


def test_ended_processes_folded(tmp_path):
    """1300 children forked one after another (each exits at once), under
    --interval 1: the run's index lists 1000 ended processes and folds the
    others into ended_processes_folded (a count and the sums of their
    numbers, with a warning), so that a run of days keeps its memory and
    its index's size.  Those with nothing to show go first: the parent and
    the busy program stay listed; listed and folded, every child is counted
    once."""
    link = named_interpreter(default_interpreter(), tmp_path, "sbpf-fold")
    n = 1300
    out_dir, pids, _ = _run(tmp_path, [link, program("fault_forks.py"), str(n)],
                            [link, BUSY, "0.3"], ["--interval", "1", "--comm", "sbpf-fold"])
    index = json.loads((out_dir / "index.json").read_text())
    folded = index["ended_processes_folded"]
    listed = index["processes"]
    lost = index["counts"]
    assert len(listed) <= 1000, len(listed)
    by_pid = {e["pid"]: e for e in listed}
    assert pids[0] in by_pid and pids[1] in by_pid, pids
    assert by_pid[pids[1]]["samples"] > 0, by_pid[pids[1]]
    # Each child once: listed (by its parent) or folded.
    children = [e for e in listed if e["ppid"] == pids[0]]
    assert len(children) + folded["processes"] == n, (len(children), folded, lost)
    assert len(listed) == 1000, len(listed)
    assert any("folded out of this index" in w for w in index["warnings"]), index["warnings"]
    for key in ("cpu_s", "python_s", "native_s", "system_s", "blocked_s", "await_s"):
        assert folded[key] >= 0, folded
    assert folded["samples"] >= 0 and folded["cpu_s"] <= folded["processes"] * 1.0, folded


def test_otlp_each_interval_arrives(tmp_path, pprof_message):  # noqa: F811
    """--otlp-endpoint without a path: each interval with stacks arrives as
    one request at /v1development/profiles, protobuf, with the headers given
    (one on the command line, one from a file); it decodes with
    opentelemetry-proto 1.45.2, has a resource per process (its pid, command,
    program, host, and the container and pod the index's labels name) and,
    per sample type, the values of that interval's pprof file, stack for
    stack; the index counts every request sent and none dropped."""
    recv = _Receiver()
    try:
        python = default_interpreter()
        link = named_interpreter(python, tmp_path, "sbpf-otlp")
        headers = tmp_path / "headers"
        headers.write_text("# the tenant\nX-Scope-OrgID: tenant-1\n\n")
        out_dir, pids, _ = _run(
            tmp_path, [link, BUSY, "2.0"], [link, BUSY, "0.3"],
            ["--interval", "1", "--comm", "sbpf-otlp", "--otlp-endpoint", recv.url,
             "--header", "Authorization: Bearer t0ken", "--header", f"@{headers}"])
    finally:
        recv.stop()
    otlp = json.loads((out_dir / "index.json").read_text())["continuous"]["otlp"]
    assert otlp["endpoint"] == recv.url + "/v1development/profiles", otlp
    assert otlp["requests"] == otlp["sent"] == len(recv.requests) >= 2, otlp
    assert otlp["failed_attempts"] == 0 and otlp["last_error"] is None, otlp
    assert not any(v for k, v in otlp.items() if k.startswith("dropped_")), otlp
    # Where each process runs, as the index says (cgroup, container, pod).
    labels = {e["pid"]: e["labels"]
              for e in json.loads((out_dir / "index.json").read_text())["processes"]}
    for pid in pids:
        assert labels[pid]["cgroup"].startswith("/"), labels[pid]
    # What each interval's pprof files hold, per process and sample type.
    want = []
    for d in _folders(out_dir):
        got = {}
        for e in json.loads((d / "index.json").read_text())["processes"]:
            pb = d / (e["profile"] or "none").replace(".json", ".pb.gz")
            if e["profile"] and pb.exists():
                pp, stacks, strings, _ = read_pprof(pb.read_bytes(), pprof_message)
                types = [strings[v.type] for v in pp.sample_type]
                got[e["pid"]] = {t: {k: v[i] for k, v in stacks.items() if v[i]}
                                 for i, t in enumerate(types)}
        if got:
            want.append(got)
    assert len(want) == len(recv.requests), (len(want), len(recv.requests))
    request_class = otlp_request_class()
    seen = set()
    for (path, hdrs, body), interval in zip(recv.requests, want):
        assert path == "/v1development/profiles", path
        assert hdrs["Content-Type"] == "application/x-protobuf", hdrs
        assert hdrs["Authorization"] == "Bearer t0ken", hdrs
        assert hdrs["X-Scope-OrgID"] == "tenant-1", hdrs
        assert hdrs["User-Agent"].startswith("scalene-bpf/"), hdrs
        req = request_class.FromString(body)
        d = req.dictionary
        st = list(d.string_table)

        def frame(i):
            loc = d.location_table[i]
            fn = d.function_table[loc.lines[0].function_index]
            return (st[fn.name_strindex], st[fn.filename_strindex], loc.lines[0].line)

        got = {}
        for rp in req.resource_profiles:
            attrs = _attrs(rp.resource)
            pid = attrs["process.pid"]
            assert attrs["process.executable.name"] == "sbpf-otlp", attrs
            assert attrs["service.name"] == "busy.py", attrs
            assert attrs["host.name"] == socket.gethostname(), attrs
            for key in ("container.id", "k8s.pod.uid", "k8s.namespace.name", "k8s.pod.name"):
                assert attrs.get(key) == labels[pid].get(key), (key, attrs, labels[pid])
            seen.add(pid)
            per_type = {}
            for q in rp.scope_profiles[0].profiles:
                sums = {}
                for smp in q.samples:
                    stack = d.stack_table[smp.stack_index]
                    key = tuple(frame(i) for i in reversed(stack.location_indices))
                    sums[key] = sums.get(key, 0) + smp.values[0]
                per_type[st[q.sample_type.type_strindex]] = sums
            got[pid] = per_type
        assert got == interval
    assert set(pids) <= seen, (pids, seen)


def test_pyroscope_each_profile_arrives(tmp_path, pprof_message):  # noqa: F811
    """--pyroscope: each process's profile of each interval arrives at
    /ingest as Pyroscope's API has it (format=pprof, the interval's from and
    until in Unix seconds, the sampling rate, the name as app{labels} with
    the script's name as the application and the host, pid, command and
    Python version as labels), with the header given; its body is the
    gzipped pprof of that interval's file, stack for stack; the index counts
    every request sent and none dropped.  --pyroscope-app names them all."""
    for app in (None, "checkout-svc"):
        recv = _Receiver()
        run_dir = tmp_path / (app or "default")
        run_dir.mkdir()
        try:
            python = default_interpreter()
            link = named_interpreter(python, run_dir, "sbpf-pyro")
            out_dir, pids, _ = _run(
                run_dir, [link, BUSY, "2.0"], [link, BUSY, "0.3"],
                ["--interval", "1", "--comm", "sbpf-pyro", "--pyroscope", recv.url + "/",
                 "--header", "X-Scope-OrgID: tenant-2"]
                + (["--pyroscope-app", app] if app else []))
        finally:
            recv.stop()
        index = json.loads((out_dir / "index.json").read_text())
        pyro = index["continuous"]["pyroscope"]
        assert "otlp" not in index["continuous"], index["continuous"]
        assert pyro["endpoint"] == recv.url + "/ingest", pyro
        assert pyro["requests"] == pyro["sent"] == len(recv.requests) >= 3, pyro
        assert pyro["failed_attempts"] == 0 and pyro["last_error"] is None, pyro
        assert pyro["profiles_not_built"] == 0, pyro
        assert not any(v for k, v in pyro.items() if k.startswith("dropped_")), pyro
        python_of = {e["pid"]: e["python"] for e in index["processes"]}
        # What each interval's pprof files hold, per process, in order.
        want = collections.defaultdict(list)
        spans = {}
        for d in _folders(out_dir):
            iv = json.loads((d / "index.json").read_text())
            for e in iv["processes"]:
                pb = d / (e["profile"] or "none").replace(".json", ".pb.gz")
                if e["profile"] and pb.exists():
                    pp, stacks, strings, _ = read_pprof(pb.read_bytes(), pprof_message)
                    types = [strings[v.type] for v in pp.sample_type]
                    want[e["pid"]].append({t: {k: v[i] for k, v in stacks.items() if v[i]}
                                           for i, t in enumerate(types)})
                    prof = json.loads((d / e["profile"]).read_text())
                    spans.setdefault(e["pid"], []).append(
                        (prof["start_time_absolute"], prof["elapsed_time_sec"]))
        got = collections.defaultdict(list)
        got_spans = collections.defaultdict(list)
        for path, hdrs, body in recv.requests:
            url = urllib.parse.urlsplit(path)
            assert url.path == "/ingest", path
            q = urllib.parse.parse_qs(url.query, strict_parsing=True)
            assert {k: len(v) for k, v in q.items()} == dict.fromkeys(
                ("name", "from", "until", "format", "sampleRate", "spyName"), 1), q
            assert q["format"] == ["pprof"] and q["spyName"] == ["scalene-bpf"], q
            assert q["sampleRate"] == [str(round(index["sampling_rate_hz"]))], q
            assert hdrs["Content-Type"] == "application/octet-stream", hdrs
            assert hdrs["X-Scope-OrgID"] == "tenant-2", hdrs
            name = q["name"][0]
            assert name.endswith("}") and "{" in name, name
            app_name, labels = name[:-1].split("{", 1)
            labels = dict(kv.split("=", 1) for kv in labels.split(","))
            assert app_name == (app or "busy"), name
            pid = int(labels["pid"])
            assert labels["host"] == socket.gethostname(), labels
            assert labels["executable"] == "sbpf-pyro", labels
            assert labels["python_version"] == python_of[pid], (labels, python_of)
            pp, stacks, strings, _ = read_pprof(body, pprof_message)
            types = [strings[v.type] for v in pp.sample_type]
            # CPU only (no --memory): the kind Pyroscope names process_cpu,
            # from the "samples" type it maps to cpu.
            assert types[0] == "samples" and "alloc_space" not in types, types
            got[pid].append({t: {k: v[i] for k, v in stacks.items() if v[i]}
                             for i, t in enumerate(types)})
            got_spans[pid].append((int(q["from"][0]), int(q["until"][0])))
        assert set(pids) <= set(got), (pids, list(got))
        assert dict(got) == dict(want)
        for pid, ss in spans.items():
            for (start, length), (frm, until) in zip(ss, got_spans[pid]):
                assert frm <= start and start + length <= until <= frm + length + 2, \
                    (start, length, frm, until)
        shutil.rmtree(run_dir)


def test_otlp_backend_down(tmp_path):
    """A backend that answers 503 to everything, then one that is gone
    (nothing listens), with a queue of 1 kB: the run and its files are as
    without a backend, it ends within the wait it gives what is queued
    (10 s), and the index counts every request as sent or dropped (the
    queue's bound too), with the last error."""
    link = named_interpreter(default_interpreter(), tmp_path, "sbpf-down")
    for status in (503, None):
        recv = _Receiver(status or 200)
        url = recv.url
        if status is None:
            recv.stop()  # the port is closed: connection refused
        try:
            t0 = time.monotonic()
            out_dir, _, res = _run(
                tmp_path, [link, BUSY, "1.5"], [link, BUSY, "0.2"],
                ["--interval", "0.5", "--comm", "sbpf-down", "--otlp-endpoint", url,
                 "--queue-mb", "0.001"])
            took = time.monotonic() - t0
        finally:
            if status is not None:
                recv.stop()
        cont = json.loads((out_dir / "index.json").read_text())["continuous"]
        otlp = cont["otlp"]
        assert cont["intervals"] >= 3, cont
        assert otlp["sent"] == 0 and otlp["requests"] >= 2, otlp
        dropped = sum(v for k, v in otlp.items() if k.startswith("dropped_"))
        assert dropped == otlp["requests"] and otlp["queued"] == 0, otlp
        assert otlp["failed_attempts"] >= 1, otlp
        # A request is about 1.5 kB, the queue 1 kB: each request pushes the
        # one before out while the first waits to be tried again.
        assert otlp["dropped_queue_full"] >= 1, otlp
        assert ("HTTP 503" if status else "onnect") in otlp["last_error"], otlp
        assert "sending to" in res.stderr and "failed" in res.stderr, res.stderr[-2000:]
        # The programs ran 1.5 s from 1 s in, the stop 0.3 s after: the
        # rest is the wait at the end, bounded.
        assert took < 3 + 10 + 5, took
        if status:
            assert len(recv.requests) == otlp["failed_attempts"], (len(recv.requests), otlp)
        shutil.rmtree(out_dir)
