"""Two threads running pure Python take turns at the GIL; then the main
thread blocks with no one to wait for at the GIL.

Phase 1 (argv[1] seconds of wall time): the main thread and a worker both
spin in pure-Python loops, so each waits for the GIL while the other holds
it.  Phase 2, the worker gone: the main thread sleeps for half as long, then
waits as long on a lock that another thread releases; that thread then
blocks for good, so no thread runs Python when the main thread wakes.  Writes the phases'
durations to argv[2] (JSON).
"""
import json
import sys
import threading
import time


def spin(stop):
    acc = 0
    while not stop.is_set():
        for i in range(2000): acc ^= i  # LINE: worker
    return acc


def main(seconds):
    stop = threading.Event()
    worker = threading.Thread(target=spin, args=(stop,))
    worker.start()
    t0 = time.perf_counter()
    end = t0 + seconds
    acc = 0
    while time.perf_counter() < end:  # LINE: check
        for i in range(2000): acc ^= i  # LINE: loop
    t1 = time.perf_counter()
    stop.set()
    worker.join()  # LINE: join
    t2 = time.perf_counter()
    time.sleep(seconds / 2)  # LINE: sleep
    t3 = time.perf_counter()
    lock = threading.Lock()
    lock.acquire()
    block = threading.Lock()
    block.acquire()

    def release_later():
        time.sleep(seconds / 2)
        lock.release()
        # Blocks for good, releasing the GIL at once: a Timer thread went
        # on to run its exit in Python while the main thread, woken, waited
        # for the GIL (2-4 ms on a slow machine), a real GIL wait.
        block.acquire()

    threading.Thread(target=release_later, daemon=True).start()
    lock.acquire()  # LINE: lock
    t4 = time.perf_counter()
    return {"contend_s": t1 - t0, "sleep_s": t3 - t2, "lock_s": t4 - t3}


if __name__ == "__main__":
    spent = main(float(sys.argv[1]))
    with open(sys.argv[2], "w") as f:
        json.dump(spent, f)
