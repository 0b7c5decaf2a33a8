"""A long-running service for the soak test: a steady loop of requests that
parse JSON, run freshly compiled code (new code objects at new addresses with
the same names and lines, as template engines make), start short-lived
threads, fork a child now and then, and allocate.  Runs until killed."""
import json
import os
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


def request(n):
    items = json.loads(DOC)
    scope = {}
    exec(compile(TEMPLATE, "<template>", "exec"), scope)
    page = scope["render"](items)
    return len(page) + sum(len(bytearray(4096)) for _ in range(n % 8))


def worker(k):
    s = 0
    for i in range(50):
        s += request(i + k)
    return s


def main():
    n = 0
    while True:
        n += 1
        request(n)
        if n % 50 == 0:
            t = threading.Thread(target=worker, args=(n,))
            t.start()
            t.join()
        if n % 500 == 0:
            pid = os.fork()
            if pid == 0:
                request(1)
                os._exit(0)
            os.waitpid(pid, 0)
        time.sleep(0.001)


print("ready", flush=True)
main()
