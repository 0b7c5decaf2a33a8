"""A known volume of allocations on two lines, for --all --memory: once the
file argv[1] appears it allocates ROUNDS blocks of 4 MiB on one line and
ROUNDS of 1 MiB on the other (400 and 100 MiB as Python objects), says
"allocated" and waits for argv[2] to appear.  With a third argument "fork"
it forks first: the child does the work and exits ("allocated PID"), the
parent says "child CODE" and then does the same work; with "fork-wait" the
child first sleeps 0.5 s (a profiler that probes each process has placed
its probes by then).  With "peek", no allocation: it says, as hex, the
first 16 bytes of the code of PyObject_Malloc as this process sees them
(a probe's breakpoint shows as cc) and waits for argv[2].
Says "ready" once it runs."""
import os
import sys
import time

MiB = 1 << 20
ROUNDS = 100


def wait(path):
    while not os.path.exists(path):
        time.sleep(0.01)


def work():
    for _ in range(ROUNDS):
        big = bytearray(4 * MiB)  # LINE: big
        small = bytearray(MiB)  # LINE: small
    return len(big) + len(small)


def peek():
    import ctypes
    fn = ctypes.cast(ctypes.pythonapi.PyObject_Malloc, ctypes.c_void_p).value
    return ctypes.string_at(fn, 16).hex()


def main(go, stop, how):
    print("ready", flush=True)
    wait(go)
    if how == "peek":
        print("code", peek(), flush=True)
        wait(stop)
        return
    fork = how in ("fork", "fork-wait")
    if fork:
        child = os.fork()
        if child:
            _, status = os.waitpid(child, 0)
            print("child", os.waitstatus_to_exitcode(status), flush=True)
            fork = False
        elif how == "fork-wait":
            time.sleep(0.5)
    work()
    print("allocated", os.getpid(), flush=True)
    if fork:
        os._exit(0)
    wait(stop)


main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "")
