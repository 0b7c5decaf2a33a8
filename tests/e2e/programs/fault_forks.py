"""Forks argv[1] children, each exiting at once, waiting for each; then
works on its own line.  Prints the number of children and the CPU time of
that line as the thread measured it (JSON)."""
import json
import os
import sys
import time

N = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
for _ in range(N):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
t0 = time.thread_time()
x = 0
for _ in range(30000):
    x += sum(range(200))  # LINE: after_forks
print(json.dumps({"children": N, "after_cpu_s": time.thread_time() - t0}))
