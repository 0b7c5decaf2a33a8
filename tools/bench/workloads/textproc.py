# SPDX-License-Identifier: BSD-2-Clause
"""Text processing: JSON encode/decode, regular expressions and string work.

Generates web-server-like log lines, parses them with a regular expression,
aggregates per path and status, round-trips the summary through JSON and
renders a report with str.format and joins.  A mix of Python code and C code
inside the interpreter (json, re, str methods).
"""
import json
import re

import benchclock

LINE = re.compile(
    r'(?P<ip>\d+\.\d+\.\d+\.\d+) - (?P<user>\S+) \[(?P<day>\d\d)/(?P<mon>\w{3})/(?P<year>\d{4}):'
    r'(?P<time>[\d:]+)\] "(?P<method>[A-Z]+) (?P<path>\S+) HTTP/1\.[01]" (?P<status>\d{3}) '
    r'(?P<size>\d+) "(?P<agent>[^"]*)"')
WORD = re.compile(r"[a-z]+")
PATHS = ["/", "/index.html", "/api/v1/items", "/api/v1/items/42", "/static/app.js",
     "/static/style.css", "/login", "/search?q=profiler", "/api/v2/users", "/favicon.ico"]
AGENTS = ["curl/8.5.0", "Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0",
      "python-requests/2.32", "Wget/1.21.4"]
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


def make_lines(n):
    lines = []
    seed = 7
    for i in range(n):
        seed = (seed * 69069 + 1) & 0xFFFFFFFF
        ip = f"{seed >> 24}.{(seed >> 16) & 255}.{(seed >> 8) & 255}.{seed & 255}"
        status = (200, 200, 200, 304, 404, 500)[seed % 6]
        lines.append(f'{ip} - user{seed % 97} [{1 + i % 28:02d}/{MONTHS[i % 12]}/2024:'
                 f'{i % 24:02d}:{i % 60:02d}:{(i * 7) % 60:02d}] '
                 f'"{"GET" if seed % 5 else "POST"} {PATHS[seed % len(PATHS)]} HTTP/1.1" '
                 f'{status} {seed % 50000} "{AGENTS[seed % len(AGENTS)]}"')
    return lines


def summarise(lines):
    per_path = {}
    words = {}
    for line in lines:
        m = LINE.match(line)
        if m is None:
            continue
        rec = m.groupdict()
        entry = per_path.setdefault(rec["path"], {"hits": 0, "bytes": 0, "status": {}})
        entry["hits"] += 1
        entry["bytes"] += int(rec["size"])
        entry["status"][rec["status"]] = entry["status"].get(rec["status"], 0) + 1
        for w in WORD.findall(rec["agent"].lower()):
            words[w] = words.get(w, 0) + 1
    return {"paths": per_path, "agent_words": words}


def report(summary):
    rows = []
    for path, e in sorted(summary["paths"].items(), key=lambda kv: (-kv[1]["hits"], kv[0])):
        codes = ", ".join(f"{k}x{v}" for k, v in sorted(e["status"].items()))
        rows.append("{:<24} {:>8} {:>12} {}".format(path[:24], e["hits"], e["bytes"], codes))
    return "\n".join(rows).upper().replace(" ", ".")


def process(batches, lines_per_batch):
    digest = 0
    for b in range(batches):
        lines = make_lines(lines_per_batch)
        # Round-trip the raw records too: the json module's C encoder and decoder.
        lines = json.loads(json.dumps({"batch": b, "lines": lines}))["lines"]
        summary = json.loads(json.dumps(summarise(lines), sort_keys=True))
        text = report(summary)
        digest = (digest * 131 + len(text) + text.count("GET") + sum(map(ord, text[:64]))) % 1000003
    return digest


if __name__ == "__main__":
    benchclock.run(process, max(1, int(30 * benchclock.scale())), 5000)
