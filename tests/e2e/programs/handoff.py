"""Two threads hand one byte back and forth through a pair of pipes: each
runs for a few microseconds, then blocks until the other answers, so with two
CPUs each goes idle between the threads' short runs (tens of thousands of
switches a second).  A profiler that samples each CPU on a fixed timer sees
fires fall while a CPU is idle and can miss much of the threads' time.

argv[1]: round trips.  Writes to argv[2] (JSON) each thread's native id, its
whole CPU time (time.thread_time, since the thread started) and its loop's,
then ends at once (os._exit): the main thread reads its clock before it
writes them, and the interpreter's shutdown after that would add CPU time
(milliseconds, more on 3.14) that its profile counts and its clock does not.
"""
import json
import os
import sys
import threading
import time

trips = int(sys.argv[1])
info = {}


def echo(rfd, wfd):
    info["echo_tid"] = threading.get_native_id()
    t0 = time.thread_time()
    for _ in range(trips):  # LINE: echo_loop
        os.write(wfd, os.read(rfd, 1))  # LINE: echo
    info["echo_thread_cpu_s"] = t1 = time.thread_time()
    info["echo_loop_cpu_s"] = t1 - t0


def main():
    info["main_tid"] = threading.get_native_id()
    to_echo_r, to_echo_w = os.pipe()
    back_r, back_w = os.pipe()
    t = threading.Thread(target=echo, args=(to_echo_r, back_w))
    t.start()
    token = b"\x01"
    t0 = time.thread_time()
    for _ in range(trips):  # LINE: ping_loop
        os.write(to_echo_w, token)  # LINE: ping_write
        token = os.read(back_r, 1)  # LINE: ping
    info["main_loop_cpu_s"] = time.thread_time() - t0
    t.join()
    info["main_thread_cpu_s"] = time.thread_time()
    with open(sys.argv[2], "w") as f:
        json.dump(info, f)


main()
os._exit(0)
