"""argv[1] threads at once, each doing a little work, then all wait on a
barrier while the main thread works on its own line; prints the number of
threads and the main thread's CPU time on that line (JSON)."""
import json
import sys
import threading
import time

N = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
barrier = threading.Barrier(N + 1)


def worker():
    s = 0
    for i in range(2000):
        s += i  # LINE: worker
    barrier.wait()


threads = [threading.Thread(target=worker) for _ in range(N)]
for t in threads:
    t.start()
t0 = time.thread_time()
x = 0
for _ in range(30000):
    x += sum(range(200))  # LINE: main_work
main_cpu = time.thread_time() - t0
barrier.wait()
for t in threads:
    t.join()
print(json.dumps({"threads": len(threads), "main_cpu_s": main_cpu}))
