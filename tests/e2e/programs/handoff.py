"""Two threads hand one byte back and forth through a pair of pipes: each
runs for a few microseconds, then blocks until the other answers, so with two
CPUs each goes idle between the threads' short runs (tens of thousands of
switches a second).  A profiler that samples each CPU on a fixed timer sees
fires fall while a CPU is idle and can miss much of the threads' time.

argv[1]: round trips.  Writes to argv[2] (JSON) each thread's native id, its
whole CPU time (since the thread started) and its loop's.  The whole CPU
times are read as late as the program can, so that what the threads run
after them is next to nothing: the echo thread, done, blocks for good; the
main thread reads its clock and the echo thread's
(time.pthread_getcpuclockid), writes the results through a file opened and
an encoding warmed up before, and ends at once (os._exit).  Opening a text
file and a first json.dump after the read took 4-8 ms of CPU on a slow
2-CPU machine, and a thread's exit in Python 1-3 ms on 3.15: time its
profile counts and its clock did not.
"""
import json
import os
import sys
import threading
import time

trips = int(sys.argv[1])
info = {}
done_r, done_w = os.pipe()
never_r, never_w = os.pipe()


def echo(rfd, wfd):
    info["echo_tid"] = threading.get_native_id()
    t0 = time.thread_time()
    for _ in range(trips):  # LINE: echo_loop
        os.write(wfd, os.read(rfd, 1))  # LINE: echo
    info["echo_loop_cpu_s"] = time.thread_time() - t0
    os.write(done_w, b"x")
    os.read(never_r, 1)


def main():
    info["main_tid"] = threading.get_native_id()
    to_echo_r, to_echo_w = os.pipe()
    back_r, back_w = os.pipe()
    t = threading.Thread(target=echo, args=(to_echo_r, back_w), daemon=True)
    t.start()
    token = b"\x01"
    t0 = time.thread_time()
    for _ in range(trips):  # LINE: ping_loop
        os.write(to_echo_w, token)  # LINE: ping_write
        token = os.read(back_r, 1)  # LINE: ping
    info["main_loop_cpu_s"] = time.thread_time() - t0
    os.read(done_r, 1)
    out = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    echo_clock = time.pthread_getcpuclockid(t.ident)
    info["echo_thread_cpu_s"] = info["main_thread_cpu_s"] = 0.0
    json.dumps(info)
    info["echo_thread_cpu_s"] = time.clock_gettime(echo_clock)
    info["main_thread_cpu_s"] = time.thread_time()
    os.write(out, json.dumps(info).encode())


main()
os._exit(0)
