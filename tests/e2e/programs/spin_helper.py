"""The one loop that several test programs share, so that their lines cost
exactly the same per iteration: the same code object runs for each of them.
calibrate() times it, for the programs to size their rounds.  Tests leave
this file out of the profile (--profile-exclude spin_helper), so its time
lands on the calling line, as Scalene does for files it does not report."""
import time


def spin(n):
    acc = 0
    for i in range(n):
        acc ^= i
    return acc


def calibrate():
    """Seconds per iteration of spin: the fastest of three timings after a
    warm-up, so that a slow start (the profiler attaching, a cold cache) does
    not make the callers' rounds shorter than designed."""
    spin(50_000)

    def timing(n=100_000):
        t = time.thread_time()
        spin(n)
        return (time.thread_time() - t) / n

    return min(timing() for _ in range(3))
