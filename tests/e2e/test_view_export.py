# SPDX-License-Identifier: BSD-2-Clause
"""`scalene-bpf view --format folded|speedscope|pprof|otlp`: exports of a
profile's stacks, read back by independent readers.

- folded: parsed back line by line, per-stack counts against the JSON.
- speedscope: the file format's required fields and types, frame indices in
  range, weights against the JSON.
- pprof: gunzipped by Python's gzip and decoded with the protobuf runtime
  from PyPI against pprof's own profile.proto as Debian ships it
  (golang-github-google-pprof-dev, compiled by Debian's protoc), then read by
  `go tool pprof -raw` (Debian's golang-go), whose parser applies the rules
  that Pyroscope and Parca share (ids non-zero and unique, string 0 empty,
  one value per sample type).
- otlp: decoded with the classes of the OpenTelemetry project's own
  opentelemetry-proto package from PyPI (1.45.2, whose v1development
  profiles schema the export follows), checked against the pprof export of
  the same profile: a profile per pprof sample type with the same value per
  stack.

The expected stacks are computed here from the JSON with the export's
documented rules: frames "qualname (file:line)" for Python and the symbol
(else module+offset, else address) for native code, outermost first; CPU
from combined_stacks, else `stacks`; memory from memory_stacks in bytes
(MB * 2^20).  Profiles: one written by ./scalene-bpf (examples/demo.py:
Python, native, blocked time, memory) and Scalene 2.3's reference profiles;
then hostile documents (control characters, ';', invalid UTF-8, wrong
types) and the sudo path.
"""

import collections
import gzip
import json
import math
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from e2e_helpers import (ASYNC_FILE, BIN, REPO, async_profile, clean_env,
                         default_interpreter, profile_run, reference_dir,
                         sudo_env)

REFERENCE_PROFILES = ("scalene_ref_cpu.json", "scalene_ref_mem.json",
                      "scalene_ref_async.json")
PPROF_PROTO = Path("/usr/share/gocode/src/github.com/google/pprof/proto/"
                   "profile.proto")
SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"
SPEEDSCOPE_UNITS = {"none", "nanoseconds", "microseconds", "milliseconds",
                    "seconds", "bytes"}
MB = 1024 * 1024


def _reference_dir():
    """Real Scalene's profiles (e2e_helpers.reference_dir), required here."""
    d = reference_dir()
    if d.is_dir():
        return d
    pytest.fail(f"Scalene's reference profiles: no folder {d}", pytrace=False)


# --------------------------------------------------------------------------
# Running the export
# --------------------------------------------------------------------------

def export(fmt, profile, out=None, env=None):
    """scalene-bpf view --format fmt [-o out] profile; stdout as bytes."""
    argv = [str(BIN), "view", "--format", fmt, str(profile)]
    if out is not None:
        argv[4:4] = ["-o", str(out)]
    return subprocess.run(argv, capture_output=True, timeout=60,
                          stdin=subprocess.DEVNULL,
                          env=env if env is not None else clean_env())


def export_ok(fmt, profile, tmp):
    """The export's bytes, written with -o (pprof) or to stdout."""
    if fmt == "pprof":
        out = Path(tmp) / f"{Path(profile).stem}.pb.gz"
        p = export(fmt, profile, out)
        assert p.returncode == 0, p.stderr.decode()
        return out.read_bytes(), p.stderr.decode()
    p = export(fmt, profile)
    assert p.returncode == 0, p.stderr.decode()
    return p.stdout, p.stderr.decode()


# --------------------------------------------------------------------------
# What the export must contain, from the JSON
# --------------------------------------------------------------------------

def clean(s, semi=False):
    """The export's sanitising: C0, DEL, C1 and (unpaired surrogates from the
    JSON's escapes are replaced by the parser) as '?'; ';' in folded."""
    out = []
    for ch in s:
        o = ord(ch)
        if o < 0x20 or 0x7f <= o <= 0x9f or (semi and ch == ";"):
            out.append("?")
        else:
            out.append(ch)
    return "".join(out)


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def native_name(f):
    sym = f.get("display_name") if isinstance(f.get("display_name"),
                                              str) else None
    module = f.get("filename_or_module")
    module = module if isinstance(module, str) else ""
    base = module.rsplit("/", 1)[-1]
    if sym and (not sym.startswith("+") or not base):
        return sym
    if sym:
        return base + sym
    # Negative addresses are garbage: read as 0.
    if base and _is_int(f.get("offset")):
        return f"{base}+0x{max(f['offset'], 0):x}"
    if base:
        return base
    if _is_int(f.get("ip")):
        return f"0x{max(f['ip'], 0):x}"
    return "[unknown]"


def frame_of(f):
    """(name, file, line, native) of a CombinedStackFrame."""
    if not isinstance(f, dict):
        return ("[unknown]", "", 0, True)
    file = f.get("filename_or_module")
    file = clean(file) if isinstance(file, str) else ""
    if f.get("kind") == "native":
        return (clean(native_name(f)), file, 0, True)
    name = f.get("display_name")
    name = clean(name) if isinstance(name, str) and name else "[unknown]"
    line = f.get("line")
    line = int(line) if _is_num(line) and 1 <= line <= 2**31 - 1 else 0
    return (name, file, line, False)


def frame_of_string(s):
    """(name, file, line, native) of a `stacks` frame "file qual:line;"."""
    if not isinstance(s, str):
        return ("[unknown]", "", 0, False)
    s = s[:-1] if s.endswith(";") else s
    line = 0
    m = re.fullmatch(r"(.*):(\d{1,9})", s, re.S)
    if m:
        s, line = m.group(1), int(m.group(2))
    file, sep, name = s.rpartition(" ")
    return (clean(name) or "[unknown]", clean(file) if sep else "", line,
            False)


def _weight(w, scale=1):
    if not _is_num(w) or not math.isfinite(w) or w * scale <= 0:
        return 0
    return min(w * scale, 1e18)


def cpu_stacks(doc):
    """[(frames, samples, index in the document)]: combined_stacks, else
    `stacks`; entries without a positive weight are left out."""
    out = []
    for i, e in enumerate(doc.get("combined_stacks") or []):
        if isinstance(e, list) and len(e) == 2 and isinstance(e[0], list):
            w = _weight(e[1])
            if w:
                fr = [frame_of(f) for f in e[0]] or [("[unknown]", "", 0,
                                                      True)]
                out.append((fr, w, i))
    if out:
        return out
    for i, e in enumerate(doc.get("stacks") or []):
        if (isinstance(e, list) and len(e) == 2 and isinstance(e[0], list)
                and isinstance(e[1], dict)):
            w = _weight(e[1].get("count"))
            if w:
                fr = [frame_of_string(f) for f in e[0]] or [
                    ("[unknown]", "", 0, True)]
                out.append((fr, w, i))
    return out


def memory_stacks(doc):
    """[(frames, bytes)] from memory_stacks."""
    out = []
    for e in doc.get("memory_stacks") or []:
        if isinstance(e, list) and len(e) == 2 and isinstance(e[0], list):
            w = _weight(e[1], MB)
            if w:
                fr = [frame_of(f) for f in e[0]] or [("[unknown]", "", 0,
                                                      True)]
                out.append((fr, w))
    return out


def stack_times(doc, stacks):
    """Per CPU stack, its time in ns as our profiles state it (`stacks`'
    cpu_samples fraction times scalene_bpf.total_sampled_s) and that time
    split as the percentages split it: (time, python, native, system), the
    last the rest (system and blocked time); or None."""
    facts = doc.get("scalene_bpf")
    if not isinstance(facts, dict) or not doc.get("combined_stacks"):
        return None
    total = facts.get("total_sampled_s")
    if not _is_num(total) or total <= 0:
        return None
    out = []
    for _, _, i in stacks:
        e = doc["stacks"][i][1]
        t, py, nat = (e[k] * total * 1e9 for k in ("cpu_samples", "python_time", "c_time"))
        out.append((t, py, nat, t - py - nat))
    return out


def stack_gil(doc, stacks, times):
    """Per CPU stack, its GIL wait in ns as our profiles state it
    (scalene_bpf.gil_wait_stacks: [index in stacks, seconds]), at most its
    system time; None when the profile states none."""
    pairs = (doc.get("scalene_bpf") or {}).get("gil_wait_stacks")
    if not times or not isinstance(pairs, list) or not pairs:
        return None
    at = {i: k for k, (_, _, i) in enumerate(stacks)}
    out = [0.0] * len(stacks)
    for pair in pairs:
        if (isinstance(pair, list) and len(pair) == 2 and _is_int(pair[0])
                and pair[0] in at and _is_num(pair[1]) and pair[1] >= 0):
            k = at[pair[0]]
            out[k] = min(pair[1] * 1e9, times[k][3])
    return out


def label(fr):
    name, file, line, native = fr
    if native:
        return name.replace(";", "?")
    return f"{name} ({file}:{line})".replace(";", "?")


def key3(fr):
    return fr[:3]


def check_text_safe(text, what):
    """Valid UTF-8 without control characters (but newlines in folded)."""
    s = text.decode("utf-8")  # strict: raises on invalid UTF-8
    bad = [hex(ord(c)) for c in s
           if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f]
    assert not bad, f"{what}: control characters {bad[:10]}"
    return s


# --------------------------------------------------------------------------
# Readers
# --------------------------------------------------------------------------

def read_folded(text):
    """{stack label path: count} from folded lines; each line once."""
    s = check_text_safe(text, "folded")
    got = {}
    assert s.endswith("\n"), "folded output does not end with a newline"
    for ln in s.splitlines():
        m = re.fullmatch(r"(.+) (\d+)", ln)
        assert m, f"not a folded line: {ln!r}"
        assert m.group(1) not in got, f"stack listed twice: {ln!r}"
        got[m.group(1)] = int(m.group(2))
    return got


def read_speedscope(text):
    """Checks the file format and returns the document."""
    doc = json.loads(check_text_safe(text, "speedscope"))
    assert doc.get("$schema") == SPEEDSCOPE_SCHEMA
    assert isinstance(doc.get("exporter"), str) and doc["exporter"]
    assert isinstance(doc.get("name"), str)
    frames = doc["shared"]["frames"]
    assert isinstance(frames, list) and frames
    for f in frames:
        assert isinstance(f.get("name"), str), f
        assert "file" not in f or isinstance(f["file"], str), f
        assert "line" not in f or _is_int(f["line"]), f
        assert set(f) <= {"name", "file", "line", "col"}, f
    assert isinstance(doc["profiles"], list) and doc["profiles"]
    idx = doc.get("activeProfileIndex", 0)
    assert _is_int(idx) and 0 <= idx < len(doc["profiles"])
    for p in doc["profiles"]:
        assert p["type"] == "sampled"
        assert isinstance(p["name"], str) and p["name"]
        assert p["unit"] in SPEEDSCOPE_UNITS
        assert _is_num(p["startValue"]) and _is_num(p["endValue"])
        assert len(p["samples"]) == len(p["weights"])
        for st in p["samples"]:
            assert isinstance(st, list) and st
            assert all(_is_int(i) and 0 <= i < len(frames) for i in st), st
        assert all(_is_num(w) and w >= 0 for w in p["weights"])
        assert p["endValue"] - p["startValue"] == sum(p["weights"])
    return doc


def speedscope_stacks(doc, profile):
    """{tuple of (name, file, line), outermost first: summed weight}."""
    frames = doc["shared"]["frames"]
    out = collections.Counter()
    for st, w in zip(profile["samples"], profile["weights"]):
        out[tuple((frames[i]["name"], frames[i].get("file", ""),
                   frames[i].get("line", 0)) for i in st)] += w
    return out


@pytest.fixture(scope="module")
def pprof_message(tmp_path_factory):
    """pprof's Profile message class, from pprof's own profile.proto."""
    if shutil.which("protoc") is None or not PPROF_PROTO.is_file():
        pytest.fail("protoc or pprof's profile.proto missing: apt-get install "
                    "protobuf-compiler golang-github-google-pprof-dev (or run "
                    "tools/ci-deps)", pytrace=False)
    try:
        from google.protobuf import (descriptor_pb2, descriptor_pool,
                                     message_factory)
    except ImportError:
        pytest.fail("the protobuf runtime is missing: pip install -r "
                    "tests/requirements.txt", pytrace=False)
    out = tmp_path_factory.mktemp("proto") / "profile.desc"
    subprocess.run(["protoc", f"--proto_path={PPROF_PROTO.parent}",
                    f"--descriptor_set_out={out}", PPROF_PROTO.name],
                   check=True, timeout=60)
    pool = descriptor_pool.DescriptorPool()
    for f in descriptor_pb2.FileDescriptorSet.FromString(
            out.read_bytes()).file:
        pool.Add(f)
    return message_factory.GetMessageClass(
        pool.FindMessageTypeByName("perftools.profiles.Profile"))


def read_pprof(data, message):
    """Decodes and checks the rules of pprof's readers; returns
    (profile, {stack of (name, file, line), outermost first: [values]})."""
    raw = gzip.decompress(data)
    p = message.FromString(raw)  # upb: strings must be valid UTF-8
    st = list(p.string_table)
    assert st and st[0] == "", "string_table[0] must be empty"
    assert len(set(st)) == len(st), "strings repeated in the string table"

    def s(i):
        assert 0 <= i < len(st), f"string index {i} out of range"
        return st[i]

    for v in p.sample_type:
        s(v.type), s(v.unit)
    fns = {}
    for f in p.function:
        assert f.id and f.id not in fns, f"function id {f.id}"
        fns[f.id] = (s(f.name), s(f.filename), f.start_line)
        s(f.system_name)
    locs = {}
    for loc in p.location:
        assert loc.id and loc.id not in locs, f"location id {loc.id}"
        assert len(loc.line) == 1
        assert loc.line[0].function_id in fns
        fn = fns[loc.line[0].function_id]
        locs[loc.id] = (fn[0], fn[1], loc.line[0].line)
    stacks = collections.defaultdict(lambda: [0] * len(p.sample_type))
    for smp in p.sample:
        assert len(smp.value) == len(p.sample_type)
        assert smp.location_id, "a sample without locations"
        for i in smp.location_id:
            assert i in locs, f"sample names location {i}"
        # pprof lists the leaf first.
        key = tuple(locs[i] for i in reversed(smp.location_id))
        for k, v in enumerate(smp.value):
            assert v >= 0
            stacks[key][k] += v
    if p.default_sample_type:
        s(p.default_sample_type)
    return p, stacks, st, fns


def go_pprof_raw(path):
    """`go tool pprof -raw`: Go's parser must accept the file; returns
    (sample type names, per-type sums)."""
    if shutil.which("go") is None:
        pytest.fail("go not found: apt-get install golang-go (or run "
                    "tools/ci-deps)", pytrace=False)
    env = clean_env({"HOME": str(Path(path).parent),
                     "PPROF_TMPDIR": str(Path(path).parent)})
    p = subprocess.run(["go", "tool", "pprof", "-raw", str(path)],
                       capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, f"go tool pprof -raw: {p.stderr}{p.stdout}"
    lines = p.stdout.splitlines()
    start = lines.index("Samples:")
    types = [t.replace("[dflt]", "") for t in lines[start + 1].split()]
    sums = [0] * len(types)
    for ln in lines[start + 2:]:
        m = re.fullmatch(r"\s*([\d ]+):.*", ln)
        if not m:
            break
        vals = [int(v) for v in m.group(1).split()]
        assert len(vals) == len(types), ln
        sums = [a + b for a, b in zip(sums, vals)]
    return types, sums


# --------------------------------------------------------------------------
# The checks, per format, of one profile
# --------------------------------------------------------------------------

def check_folded(doc, path, tmp):
    data, err = export_ok("folded", path, tmp)
    got = read_folded(data)
    want = collections.Counter()
    for fr, w, _ in cpu_stacks(doc):
        want[";".join(label(f) for f in fr)] += round(w)
    assert got == dict(want)
    for stack in got:
        assert "\n" not in stack and "\r" not in stack
    if memory_stacks(doc):
        assert "CPU stacks only" in err, err
    return got


def check_speedscope(doc, path, tmp):
    data, _ = export_ok("speedscope", path, tmp)
    ss = read_speedscope(data)
    assert ss["name"] == Path(path).name
    cpu, mem = cpu_stacks(doc), memory_stacks(doc)
    profiles = list(ss["profiles"])
    assert len(profiles) == bool(cpu) + bool(mem)
    times = stack_times(doc, cpu)
    if cpu:
        p = profiles.pop(0)
        got = speedscope_stacks(ss, p)
        want = collections.Counter()
        for k, (fr, w, _) in enumerate(cpu):
            want[tuple(map(key3, fr))] += times[k][0] if times else w
        assert set(got) == set(want)
        # Time: rounded to the ns per stack.
        for k in want:
            assert abs(got[k] - want[k]) <= len(cpu), k
        assert p["unit"] == ("nanoseconds" if times else "none")
    if mem:
        p = profiles.pop(0)
        assert p["unit"] == "bytes"
        got = speedscope_stacks(ss, p)
        want = collections.Counter()
        for fr, w in mem:
            want[tuple(map(key3, fr))] += w
        assert set(got) == set(want)
        for k in want:
            assert abs(got[k] - want[k]) <= len(mem), k
    return ss


def check_pprof(doc, path, tmp, message):
    data, _ = export_ok("pprof", path, tmp)
    assert data[:2] == b"\x1f\x8b", "not gzip"
    p, stacks, st, fns = read_pprof(data, message)
    cpu, mem = cpu_stacks(doc), memory_stacks(doc)
    times = stack_times(doc, cpu)
    gil = stack_gil(doc, cpu, times)
    types = [(st[v.type], st[v.unit]) for v in p.sample_type]
    want_types = []
    if cpu:
        want_types.append(("samples", "count"))
        if times:
            want_types += [("time", "nanoseconds"), ("python_time", "nanoseconds"),
                           ("native_time", "nanoseconds"), ("system_time", "nanoseconds")]
        if gil:
            want_types.append(("gil_wait_time", "nanoseconds"))
    if mem:
        want_types.append(("alloc_space", "bytes"))
    assert types == want_types
    if cpu:
        assert st[p.default_sample_type] == "samples"
    want = collections.defaultdict(lambda: [0] * len(types))
    for k, (fr, w, _) in enumerate(cpu):
        want[tuple(map(key3, fr))][0] += w
        if times:
            for t, v in enumerate(times[k]):
                want[tuple(map(key3, fr))][1 + t] += v
        if gil:
            want[tuple(map(key3, fr))][5] += gil[k]
    for fr, w in mem:
        want[tuple(map(key3, fr))][-1] += w
    assert set(stacks) == set(want)
    for k, vals in want.items():
        for t, v in enumerate(vals):
            assert abs(stacks[k][t] - v) <= len(cpu) + len(mem), (k, t)
    # Facts: only those the profile states.
    period = (doc.get("scalene_bpf") or {}).get("sampling_period_ns")
    if _is_num(period) and period > 0:
        assert (st[p.period_type.type], st[p.period_type.unit]) == (
            "cpu", "nanoseconds")
        assert p.period == period
    else:
        assert not p.HasField("period_type") and p.period == 0
    # Times past the year 2286 are not believed.
    start = doc.get("start_time_absolute")
    if _is_num(start) and 0 < start < 1e10:
        assert abs(p.time_nanos - start * 1e9) <= 1
    else:
        assert p.time_nanos == 0
    elapsed = doc.get("elapsed_time_sec")
    if _is_num(elapsed) and 0 < elapsed < 1e10:
        assert abs(p.duration_nanos - elapsed * 1e9) <= 1
    else:
        assert p.duration_nanos == 0
    # Go's parser, as Pyroscope and Parca use it.
    out = Path(tmp) / "go.pb.gz"
    out.write_bytes(data)
    gtypes, gsums = go_pprof_raw(out)
    assert gtypes == [f"{a}/{b}" for a, b in want_types]
    for t, total in enumerate(gsums):
        assert total == sum(v[t] for v in stacks.values())
    check_otlp(doc, path, tmp, p, stacks, want_types)
    return p, stacks, st, fns


def otlp_request_class():
    try:
        from opentelemetry.proto.collector.profiles.v1development import (
            profiles_service_pb2)
    except ImportError:
        pytest.fail("opentelemetry-proto is missing: pip install -r "
                    "tests/requirements.txt", pytrace=False)
    return profiles_service_pb2.ExportProfilesServiceRequest


def check_otlp(doc, path, tmp, pprof, pprof_stacks, types):
    """The OTLP export of the profile whose pprof export is `pprof` (its
    per-stack values `pprof_stacks`, its sample types `types`): a profile per
    sample type, in that order, each with that type's value of every stack
    whose value is not 0; every index in range, index 0 of each table its
    zero value; the same start, duration and period.  Returns the request."""
    out = Path(tmp) / f"{Path(path).stem}.otlp"
    p = export("otlp", path, out)
    assert p.returncode == 0, p.stderr.decode()
    req = otlp_request_class().FromString(out.read_bytes())
    d = req.dictionary
    st = list(d.string_table)
    assert st and st[0] == "", "string_table[0] must be empty"
    assert len(set(st)) == len(st), "strings repeated in the string table"
    for table in (d.function_table, d.location_table, d.stack_table, d.attribute_table):
        assert len(table) and not table[0].ListFields(), "entry 0 must be the zero value"

    def at(table, i):
        assert 0 < i < len(table), f"index {i} out of range"
        return table[i]

    def s(i):
        assert 0 <= i < len(st), f"string index {i} out of range"
        return st[i]

    def frame(li):
        loc = at(d.location_table, li)
        assert len(loc.lines) == 1
        fn = at(d.function_table, loc.lines[0].function_index)
        s(fn.system_name_strindex)
        return (s(fn.name_strindex), s(fn.filename_strindex), loc.lines[0].line)

    assert len(req.resource_profiles) == 1
    rp = req.resource_profiles[0]
    assert len(rp.scope_profiles) == 1
    scope = rp.scope_profiles[0]
    assert scope.scope.name == "scalene-bpf"
    got_types = [(s(q.sample_type.type_strindex), s(q.sample_type.unit_strindex))
                 for q in scope.profiles]
    assert got_types == list(types)
    ids = {q.profile_id for q in scope.profiles}
    assert len(ids) == len(scope.profiles), "profile ids repeated"
    assert all(len(i) == 16 and any(i) for i in ids)
    for t, q in enumerate(scope.profiles):
        got = collections.Counter()
        for smp in q.samples:
            assert len(smp.values) == 1 and smp.values[0] > 0
            stack = at(d.stack_table, smp.stack_index)
            assert stack.location_indices, "a sample without locations"
            # Innermost first, as pprof's.
            got[tuple(frame(i) for i in reversed(stack.location_indices))] += smp.values[0]
        want = {k: v[t] for k, v in pprof_stacks.items() if v[t]}
        assert dict(got) == want, got_types[t]
        assert q.time_unix_nano == pprof.time_nanos
        assert q.duration_nano == pprof.duration_nanos
        sampled = got_types[t][0] in ("samples", "time", "python_time", "native_time",
                                      "system_time", "gil_wait_time")
        assert q.period == (pprof.period if sampled else 0)
    return req


# --------------------------------------------------------------------------
# A profile written by ./scalene-bpf
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """examples/demo.py profiled (memory on, the default): Python and native
    frames, a sleep, a second thread, memory stacks."""
    tmp = tmp_path_factory.mktemp("demo")
    res = profile_run(default_interpreter(), str(REPO / "examples" / "demo.py"),
                      tmp=tmp)
    doc = res.profile
    assert doc["combined_stacks"], "the demo profile has no stacks"
    assert doc["memory_stacks"], "the demo profile has no memory stacks"
    return res.path, doc


def test_demo_folded(demo, tmp_path):
    path, doc = demo
    got = check_folded(doc, path, tmp_path)
    assert sum(got.values()) == sum(e[1] for e in doc["combined_stacks"])
    # The hot loop is a Python frame with its file and line.
    assert any(re.search(r"python_loop \(.*demo\.py:\d+\)$", k) for k in got)


def test_demo_speedscope(demo, tmp_path):
    path, doc = demo
    ss = check_speedscope(doc, path, tmp_path)
    cpu, memp = ss["profiles"]
    # Ours state each stack's time: the sleep is 0.3 s on one or two
    # samples, so the time is not samples x period.
    assert cpu["unit"] == "nanoseconds"
    total = doc["scalene_bpf"]["total_sampled_s"] * 1e9
    assert 0 < cpu["endValue"] <= total * 1.0001
    samples = sum(e[1] for e in doc["combined_stacks"])
    period = doc["scalene_bpf"]["sampling_period_ns"]
    assert cpu["endValue"] > samples * period + 0.2e9
    assert memp["endValue"] == pytest.approx(
        sum(e[1] for e in doc["memory_stacks"]) * MB, abs=len(
            doc["memory_stacks"]))


def test_demo_pprof(demo, tmp_path, pprof_message):
    path, doc = demo
    p, stacks, st, fns = check_pprof(doc, path, tmp_path, pprof_message)
    assert sum(v[0] for v in stacks.values()) == sum(
        e[1] for e in doc["combined_stacks"])
    # start_line from the profile's functions (co_firstlineno).
    starts = {(f["line"], name): f["lineno"]
              for name, fd in doc["files"].items() for f in fd["functions"]}
    seen = 0
    for name, file, start in fns.values():
        if (name, file) in starts:
            assert start == starts[(name, file)], name
            seen += 1
    assert seen >= 2, "no Python function got its first line"


def test_demo_otlp(demo, tmp_path, pprof_message):
    """The process as the resource, in the semantic conventions' names; the
    time split into Python, native and system time that add up to it."""
    path, doc = demo
    p, stacks, st, _ = check_pprof(doc, path, tmp_path, pprof_message)
    types = [(st[v.type], st[v.unit]) for v in p.sample_type]
    req = check_otlp(doc, path, tmp_path, p, stacks, types)
    attrs = {a.key: a.value for a in req.resource_profiles[0].resource.attributes}
    interp = doc["scalene_bpf"]["interpreters"][0]
    assert attrs["service.name"].string_value == "demo.py"
    assert attrs["process.pid"].int_value == interp["pid"]
    assert attrs["process.runtime.name"].string_value == "CPython"
    assert attrs["process.runtime.version"].string_value == interp["version"]
    names = [t for t, _ in types]
    split = [names.index(n) for n in ("python_time", "native_time", "system_time")]
    for v in stacks.values():
        assert sum(v[i] for i in split) == v[names.index("time")]
    # The demo has all three: Python loops, native calls, a sleep.
    assert all(sum(v[i] for v in stacks.values()) > 0 for i in split)


def test_cpu_only_profile(tmp_path, pprof_message):
    """--cpu-only: no memory stacks, so no memory profile or sample type and
    no note about them."""
    prog = REPO / "tests" / "e2e" / "programs" / "busy.py"
    res = profile_run(default_interpreter(), str(prog), ["0.3"], tmp=tmp_path,
                      opts=["--cpu-only"])
    assert not res.profile.get("memory_stacks")
    got = check_folded(res.profile, res.path, tmp_path)
    assert got
    assert "CPU stacks only" not in export("folded", res.path).stderr.decode()
    ss = check_speedscope(res.profile, res.path, tmp_path)
    assert len(ss["profiles"]) == 1
    check_pprof(res.profile, res.path, tmp_path, pprof_message)


# --------------------------------------------------------------------------
# Scalene's own profiles
# --------------------------------------------------------------------------

@pytest.mark.parametrize("name", REFERENCE_PROFILES)
def test_reference_profiles(name, tmp_path, pprof_message):
    path = _reference_dir() / name
    doc = json.loads(path.read_text())
    assert cpu_stacks(doc)
    check_folded(doc, path, tmp_path)
    check_speedscope(doc, path, tmp_path)
    p, stacks, st, _ = check_pprof(doc, path, tmp_path, pprof_message)
    # Scalene states no sampling period: samples only, no time invented.
    assert "nanoseconds" not in [st[v.unit] for v in p.sample_type]
    # Native frames without a symbol or module keep their address.
    unresolved = any(f.get("kind") == "native" and not f.get("display_name")
                     for e in doc["combined_stacks"] for f in e[0])
    labels = {f[0] for k in stacks for f in k}
    assert unresolved == any(re.fullmatch(r"0x[0-9a-f]+", x) for x in labels)


def test_reference_stacks_fallback(tmp_path, pprof_message):
    """A profile whose combined_stacks is empty: CPU from `stacks`."""
    doc = json.loads((_reference_dir() / "scalene_ref_cpu.json").read_text())
    doc["combined_stacks"] = []
    path = tmp_path / "fallback.json"
    path.write_text(json.dumps(doc))
    got = check_folded(doc, path, tmp_path)
    assert sum(got.values()) == sum(e[1]["count"] for e in doc["stacks"])
    check_speedscope(doc, path, tmp_path)
    check_pprof(doc, path, tmp_path, pprof_message)


def test_await_frames(tmp_path, pprof_message):
    """Stacks ending in a task's await ("[await] coroutine (task)"): a
    folded line each, and in pprof a function of their own, apart from the
    coroutine's."""
    doc = async_profile()
    path = tmp_path / "async.json"
    path.write_text(json.dumps(doc))
    got = check_folded(doc, path, tmp_path)
    f = ASYNC_FILE
    assert got == {f"fetch ({f}:3);[await] fetch (Task-3) ({f}:3)": 7,
                   f"fetch ({f}:4);[await] fetch (worker) ({f}:4)": 3}
    check_speedscope(doc, path, tmp_path)
    _, stacks, _, fns = check_pprof(doc, path, tmp_path, pprof_message)
    names = sorted(n for n, _, _ in fns.values())
    assert names == ["[await] fetch (Task-3)", "[await] fetch (worker)", "fetch"]
    assert stacks[(("fetch", f, 3), ("[await] fetch (Task-3)", f, 3))] == [7]
    # Scalene's own: its await stacks, one folded line per task's await.
    ref = json.loads((_reference_dir() / "scalene_ref_async.json").read_text())
    awaits = [e for e in ref["combined_stacks"]
              if e[0][-1]["display_name"].startswith("[await] ")]
    assert awaits
    got = check_folded(ref, _reference_dir() / "scalene_ref_async.json", tmp_path)
    for e in awaits:
        fr = e[0][-1]
        key = f"{fr['display_name']} ({fr['filename_or_module']}:{fr['line']})"
        assert any(k.endswith(key) for k in got), key


def test_minimal_profile_has_no_stacks():
    path = _reference_dir() / "minimal_valid.json"
    for fmt in ("folded", "speedscope", "pprof", "otlp"):
        p = export(fmt, path, Path("/dev/null"))
        assert p.returncode == 1
        assert "no stacks in this profile" in p.stderr.decode()


# --------------------------------------------------------------------------
# Hostile and malformed documents
# --------------------------------------------------------------------------

def _frame(kind, name, file, line=None, ip=None, offset=None):
    return {"kind": kind, "display_name": name, "filename_or_module": file,
            "line": line, "ip": ip, "offset": offset}


HOSTILE = ("semi;colon", "new\nline\r", "ctl\x01\x1b[31mred\x7f",
           "c1\u0085\u009b", "tab\there", "uni\u00e9\u4e2d")


def test_hostile_names(tmp_path, pprof_message):
    frames = [_frame("py", n, f"/tmp/{n}.py", i + 1)
              for i, n in enumerate(HOSTILE)]
    frames.append(_frame("native", "", "/lib/lib;x.so", offset=16))
    frames.append(_frame("native", "", "", ip=2**64 - 1))
    doc = {"combined_stacks": [[frames, 7], [frames[:2], 3]],
           "memory_stacks": [[frames[:3], 1.5]]}
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(doc))
    got = check_folded(doc, path, tmp_path)
    # ';' separates frames only: one per frame boundary.
    assert sorted(k.count(";") for k in got) == [1, len(frames) - 1]
    assert any("semi?colon (/tmp/semi?colon.py:1)" in k for k in got)
    assert any("lib?x.so+0x10;0xffffffffffffffff" in k for k in got)
    check_speedscope(doc, path, tmp_path)
    check_pprof(doc, path, tmp_path, pprof_message)


def test_invalid_utf8(tmp_path, pprof_message):
    """Raw bytes that are not UTF-8 inside the JSON's strings."""
    text = json.dumps({"combined_stacks": [[[_frame("py", "NAME", "FILE", 3)],
                                            4]]})
    raw = text.encode().replace(b"NAME", b"f\xff\xfeg").replace(
        b"FILE", b"/x/\xc3(.py")
    path = tmp_path / "bad-utf8.json"
    path.write_bytes(raw)
    for fmt in ("folded", "speedscope"):
        p = export(fmt, path)
        assert p.returncode == 0, p.stderr.decode()
        s = check_text_safe(p.stdout, fmt)
        assert "f??g" in s and "/x/?(.py" in s
    out = tmp_path / "bad.pb.gz"
    assert export("pprof", path, out).returncode == 0
    _, stacks, _, _ = read_pprof(out.read_bytes(), pprof_message)
    assert stacks == {(("f??g", "/x/?(.py", 3),): [4]}
    go_pprof_raw(out)


REFUSED = [
    ("[]", "not a profile"),
    ("{}", "no stacks in this profile"),
    ('{"combined_stacks": 5, "stacks": {}, "memory_stacks": "x"}',
     "no stacks in this profile"),
    ('{"combined_stacks": [[1, 2, 3], "x", [[], -4], [[], "7"], [{}, 2]]}',
     "no stacks in this profile"),
    ('{"stacks": [[["a b:1;"], {"count": 0}], [["a b:1;"], 5]]}',
     "no stacks in this profile"),
]


@pytest.mark.parametrize("text,message", REFUSED)
def test_refused_documents(text, message, tmp_path):
    path = tmp_path / "doc.json"
    path.write_text(text)
    for fmt in ("folded", "speedscope", "pprof"):
        p = export(fmt, path, tmp_path / "out")
        assert p.returncode == 1, (fmt, p.stderr)
        err = p.stderr.decode()
        assert message in err and err.count("\n") == 1, (fmt, err)
        assert not (tmp_path / "out").exists()


def test_memory_only_folded_refused(tmp_path, pprof_message):
    doc = {"memory_stacks": [[[_frame("py", "f", "/a.py", 2)], 3.25]]}
    path = tmp_path / "mem.json"
    path.write_text(json.dumps(doc))
    p = export("folded", path)
    assert p.returncode == 1 and "speedscope or pprof" in p.stderr.decode()
    ss = check_speedscope(doc, path, tmp_path)
    assert [x["unit"] for x in ss["profiles"]] == ["bytes"]
    prof, stacks, st, _ = check_pprof(doc, path, tmp_path, pprof_message)
    assert stacks == {(("f", "/a.py", 2),): [int(3.25 * MB)]}
    assert prof.default_sample_type == 0


# Wrong types everywhere: never a crash; what is usable is exported.
ODD = {
    "combined_stacks": [
        [[5, None, _frame(7, [], {}, "9", "x", -1),
          _frame("native", 3, None, None, -5, 2.5)], 2],
        [[], 1e300],
        [[_frame("py", "f", "/a.py", 1e30)], 2.0],
    ],
    "stacks": "x",
    "memory_stacks": [[[{"kind": "py"}], -1], [[{"kind": "py"}], 1e300]],
    "scalene_bpf": {"sampling_rate_hz": "997", "total_sampled_s": [1]},
    "start_time_absolute": 1e300, "elapsed_time_sec": -5,
    "files": {"/a.py": {"functions": [{"line": "f", "lineno": "x"}, 5]}},
}


def test_wrong_types(tmp_path, pprof_message):
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(ODD))
    got = check_folded(ODD, path, tmp_path)
    assert got["[unknown]"] == 10**18  # bounded, not overflowed
    check_speedscope(ODD, path, tmp_path)
    p, _, _, _ = check_pprof(ODD, path, tmp_path, pprof_message)
    assert p.time_nanos == 0 and p.duration_nanos == 0


# --------------------------------------------------------------------------
# Under sudo
# --------------------------------------------------------------------------

def test_sudo_output_belongs_to_the_user(demo, user_dir):
    """Under sudo the export is written by the invoking user, who owns it;
    a directory only root may write to refuses it."""
    path, _ = demo
    user, d = user_dir
    for fmt in ("folded", "speedscope", "pprof"):
        out = d / f"out.{fmt}"
        p = export(fmt, path, out, env=sudo_env(user))
        assert p.returncode == 0, p.stderr.decode()
        st = out.stat()
        assert (st.st_uid, st.st_gid) == (user.pw_uid, user.pw_gid), fmt
        assert st.st_size > 0
    root_only = d / "root-only"
    root_only.mkdir(mode=0o755)
    p = export("pprof", path, root_only / "x.pb.gz", env=sudo_env(user))
    assert p.returncode == 1 and "Permission denied" in p.stderr.decode()
    assert not (root_only / "x.pb.gz").exists()
