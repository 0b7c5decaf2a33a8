"""Runs two source files, one after the other, as code objects that end up at
the same address: the first is freed before the second is made, and the
second is copied until a copy lands where the first was.  Both start at line
1, as every module does.  Each spins for about the same time, so each file
should get about half of the profile.

argv[1], argv[2]: the two files.  argv[3]: JSON out, saying whether the
address was reused and how long each file ran (CPU seconds).
"""
import gc
import json
import sys
import time


def load(path):
    with open(path) as f:
        return compile(f.read(), path, "exec")


def run(code):
    t = time.thread_time()
    exec(code, {"__name__": "__spun__"})
    return time.thread_time() - t


def main(first_path, second_path):
    second = load(second_path)
    code = load(first_path)
    first_addr = id(code)
    first_s = run(code)
    del code
    gc.collect()
    keep = []
    for _ in range(1000):
        code = second.replace()
        if id(code) == first_addr:
            break
        keep.append(code)
    return {"reused": id(code) == first_addr, "first_s": first_s,
            "second_s": run(code)}


if __name__ == "__main__":
    with open(sys.argv[3], "w") as f:
        json.dump(main(sys.argv[1], sys.argv[2]), f)
