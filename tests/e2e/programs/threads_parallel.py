"""Two CPU-bound pure-Python threads with the same work, free to run at once.

Each thread runs its own line, the same loop (spin_helper.spin, left out of
the profile) for the same number of iterations, with no barrier and on any
CPU: on a free-threaded build with two CPUs they run side by side, so the
process uses about twice the wall time in CPU time; with a GIL one runs at a
time.  Either way each line's time is its own thread's CPU time, which each
thread measures around its line (time.thread_time).

argv[1]: about how many CPU seconds each thread works.  Writes to argv[2]
(JSON) each thread's CPU time on its line and in all, the wall time from
the threads' start to their end, and whether the interpreter is a
free-threaded build.
"""
import json
import sys
import sysconfig
import threading
import time

from spin_helper import calibrate, spin

seconds = float(sys.argv[1])
info = {}


def work(name, n):
    clock = time.thread_time
    t = clock()
    if name == "left":
        spin(n)  # LINE: left
    else:
        spin(n)  # LINE: right
    info[f"{name}_cpu_s"] = clock() - t
    info[f"{name}_thread_cpu_s"] = clock()  # since the thread started


n = int(seconds / calibrate())
threads = [threading.Thread(target=work, args=(name, n), name=name)
           for name in ("left", "right")]
start = time.monotonic()
for t in threads:
    t.start()
for t in threads:
    t.join()  # LINE: join
info["wall_s"] = time.monotonic() - start
info["free_threaded"] = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
with open(sys.argv[2], "w") as f:
    json.dump(info, f)
