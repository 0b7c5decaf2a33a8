"""A long-running service for the soak test: a steady loop of requests that
parse JSON, run freshly compiled code (new code objects at new addresses with
the same names and lines, as template engines make), start short-lived
threads, fork a child now and then, and allocate.  Runs until killed.

With --steady: the same requests, with the template compiled once, a worker
thread that lives as long as the service, and no children: a service whose
code, threads and processes stay the same, as most do."""
import json
import os
import sys
import threading
import time

TEMPLATE = """
def render(items):
    out = []
    for i, item in enumerate(items):
        out.append(f"<li>{i}: {item['name']} {item['price']:.2f}</li>")
    return "".join(out)
"""
DOC = json.dumps([{"name": f"item{i}", "price": i * 1.5} for i in range(200)])


STEADY = "--steady" in sys.argv
COMPILED = compile(TEMPLATE, "<template>", "exec")


def request(n):
    items = json.loads(DOC)
    scope = {}
    exec(COMPILED if STEADY else compile(TEMPLATE, "<template>", "exec"), scope)
    page = scope["render"](items)
    return len(page) + sum(len(bytearray(4096)) for _ in range(n % 8))


def worker(k):
    s = 0
    for i in range(50):
        s += request(i + k)
    return s


def steady_worker():
    k = 0
    while True:
        k += 1
        worker(k)
        time.sleep(0.05)


def main():
    if STEADY:
        threading.Thread(target=steady_worker, daemon=True).start()
    n = 0
    while True:
        n += 1
        request(n)
        if n % 50 == 0 and not STEADY:
            t = threading.Thread(target=worker, args=(n,))
            t.start()
            t.join()
        if n % 500 == 0 and not STEADY:
            pid = os.fork()
            if pid == 0:
                request(1)
                os._exit(0)
            os.waitpid(pid, 0)
        time.sleep(0.001)


print("ready", flush=True)
main()
