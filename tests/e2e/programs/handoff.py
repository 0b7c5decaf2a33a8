"""Two threads hand one byte back and forth through a pair of pipes: each
runs for a few microseconds, then blocks until the other answers, so with two
CPUs each goes idle between the threads' short runs (tens of thousands of
switches a second).  A profiler that samples each CPU on a fixed timer sees
fires fall while a CPU is idle and can miss much of the threads' time.

argv[1]: round trips.  Writes to argv[2] (JSON) each thread's native id and
its whole CPU time (time.thread_time, since the thread started).
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
    for _ in range(trips):
        os.write(wfd, os.read(rfd, 1))  # LINE: echo
    info["echo_thread_cpu_s"] = time.thread_time()


def main():
    info["main_tid"] = threading.get_native_id()
    to_echo_r, to_echo_w = os.pipe()
    back_r, back_w = os.pipe()
    t = threading.Thread(target=echo, args=(to_echo_r, back_w))
    t.start()
    token = b"\x01"
    for _ in range(trips):
        os.write(to_echo_w, token)
        token = os.read(back_r, 1)  # LINE: ping
    t.join()
    info["main_thread_cpu_s"] = time.thread_time()
    with open(sys.argv[2], "w") as f:
        json.dump(info, f)


main()
