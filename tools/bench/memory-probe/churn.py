"""Allocation churn for the memory probe bench: pure-Python work whose every
iteration allocates and frees an int object, so that the sampler reports an
allocation and a free every 1 MiB or so, and nothing else enters the kernel.
Writes the process's own CPU time (user, system) around the work to argv[2]
(JSON).  argv[1]: CPU seconds of work."""
import json
import resource
import sys
import time


def churn(n):
    acc = 0
    for i in range(n):
        acc ^= i * 1_000_003  # a fresh int each time, freed the next
    return acc


seconds = float(sys.argv[1])
r0 = resource.getrusage(resource.RUSAGE_SELF)
end = time.thread_time() + seconds
rounds = 0
while time.thread_time() < end:
    churn(200_000)
    rounds += 1
r1 = resource.getrusage(resource.RUSAGE_SELF)
with open(sys.argv[2], "w") as f:
    json.dump({"user_s": r1.ru_utime - r0.ru_utime, "sys_s": r1.ru_stime - r0.ru_stime,
               "iterations": rounds * 200_000}, f)
