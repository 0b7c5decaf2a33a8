# SPDX-License-Identifier: BSD-2-Clause
"""Allocation-heavy: builds and drops lists, dicts, strings and bytearrays.

Each batch makes a list of small record dicts (with their strings and tag
lists), renders them into one large string, indexes them into a dict of
lists and fills a set of bytearrays whose sizes range from 64 bytes to
256 KiB (and one of 2 MiB every few batches, which malloc serves with mmap),
some of them copied into bytes.  Most of a batch is freed when the next one
starts; every eighth batch keeps part of its results, and the oldest kept
ones are dropped in turn, so the footprint rises and falls.  Pure Python: a
high allocation rate from small objects, from large buffers and from copies.
"""
import benchclock


def lcg(seed):
    return (seed * 69069 + 1) & 0xFFFFFFFF


def make_records(n, seed):
    records = []
    for i in range(n):
        seed = lcg(seed)
        records.append({"id": i, "name": f"item-{seed % 10007}",
                        "tags": [seed & 255, (seed >> 8) & 255, i % 7],
                        "score": (seed % 1000) / 7.0})
    return records, seed


def render(records):
    parts = [f"{r['id']}:{r['name']}:{','.join(map(str, r['tags']))}:{r['score']:.2f}"
             for r in records]
    return "\n".join(parts).upper()


def index(records):
    by_tag = {}
    for r in records:
        by_tag.setdefault(r["tags"][0], []).append(r["id"])
        by_tag.setdefault(r["name"], []).append(r["score"])
    return by_tag


def make_buffers(count, seed, big):
    buffers = []
    copied = 0
    for i in range(count):
        seed = lcg(seed)
        b = bytearray(64 << (seed % 13))  # 64 B .. 256 KiB
        b[0], b[-1] = i & 255, seed & 255
        if seed & 3 == 0:
            copied += len(bytes(b))        # a copy, freed at once
        buffers.append(b)
    if big:
        b = bytearray(2 << 20)
        b[-1] = seed & 255
        buffers.append(b)
    return buffers, copied, seed


def churn(batches, n):
    kept = []
    digest = 0
    seed = 12345
    for k in range(batches):
        records, seed = make_records(n, seed)
        text = render(records)
        by_tag = index(records)
        buffers, copied, seed = make_buffers(24, seed, k % 4 == 0)
        digest = (digest * 131 + len(text) + len(by_tag) + copied +
                  sum(len(b) for b in buffers) + sum(b[-1] for b in buffers)) % 1000003
        if k % 8 == 0:
            kept.append((text[: len(text) // 4], by_tag, buffers[:4]))
            if len(kept) > 6:
                del kept[:2]
    return f"{digest}-{len(kept)}"


if __name__ == "__main__":
    benchclock.run(churn, max(2, int(100 * benchclock.scale())), 4000)
