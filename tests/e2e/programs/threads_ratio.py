"""Two CPU-bound pure-Python threads doing work in the ratio 1:3.

Each thread runs its own line: the same loop (spin_helper.spin, left out of
the profile so that its time lands on the calling line), three times as
many iterations on the `heavy` one.  Both work at once and compete for the
GIL: only one runs at a time, so the wall time is about the sum of both, but
each line's time is its own thread's work.  They go in rounds of 5 to 15 ms
(10 on average, drawn from a seeded generator: a fixed length near a
multiple of the sampling period would put the samples at the same place in
every round), meeting at a barrier after each, so that a slower or faster
stretch of a busy machine falls on both alike.

The process keeps to one CPU: the CPUs of a virtual machine need not run at
the same speed (the host's load), and each thread would keep to its own, so
the same iterations would cost the two threads different CPU time (measured
here: 1:2.2 to 1:3.3 over two CPUs, 1:2.9 to 1:3.1 on one).

argv[1]: about how many CPU seconds the light thread works.  Writes to
argv[2] (JSON) the threads' native ids, the CPU time each spent on its line
and each one's whole CPU time.  The whole CPU times are read last, by the
main thread (time.pthread_getcpuclockid) while the workers, done, wait for
good: what a thread runs after its clock is read is counted by its profile
and not by the clock, and a Python thread's exit took 1-3 ms of CPU on a
slow machine.  The program then ends at once (os._exit).
"""
import json
import os
import random
import sys
import threading
import time

from spin_helper import calibrate, spin

seconds = float(sys.argv[1])
info = {}


def light(sizes, barrier):
    info["light_tid"] = threading.get_native_id()
    clock = time.thread_time
    spent = 0.0
    for n in sizes:
        t = clock()
        spin(n)  # LINE: light
        spent += clock() - t
        barrier.wait()
    info["light_cpu_s"] = spent
    finished.release()
    forever.wait()


def heavy(sizes, barrier):
    info["heavy_tid"] = threading.get_native_id()
    clock = time.thread_time
    spent = 0.0
    for n in sizes:
        t = clock()
        spin(3 * n)  # LINE: heavy
        spent += clock() - t
        barrier.wait()
    info["heavy_cpu_s"] = spent
    finished.release()
    forever.wait()


os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
per_iter = calibrate()
n = max(1000, int(0.0025 / per_iter))  # a round: 2.5 ms + 7.5 ms of work
rounds = max(10, int(seconds / 0.0025))
rng = random.Random(13)
sizes = [int(n * rng.uniform(0.5, 1.5)) for _ in range(rounds)]
barrier = threading.Barrier(2)
finished = threading.Semaphore(0)
forever = threading.Event()
threads = [threading.Thread(target=light, args=(sizes, barrier),
                            name="light", daemon=True),
           threading.Thread(target=heavy, args=(sizes, barrier),
                            name="heavy", daemon=True)]
for t in threads:
    t.start()
for t in threads:
    finished.acquire()  # LINE: join
info["main_tid"] = threading.get_native_id()
out = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
clocks = {t.name: time.pthread_getcpuclockid(t.ident) for t in threads}
for name, clock in clocks.items():  # since each thread started
    info[f"{name}_thread_cpu_s"] = time.clock_gettime(clock)
os.write(out, json.dumps(info).encode())
os._exit(0)
