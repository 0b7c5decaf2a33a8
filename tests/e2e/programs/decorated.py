"""Two equally hot functions, one decorated with Scalene's @profile builtin
(the program does not define it: it must come from the profiler), and a
helper, not decorated, that the decorated one calls: with @profile, its time
belongs to the calling line.  argv[1]: CPU seconds of work in all."""
import sys
import time


def helper(n):  # LINE: helper_def
    acc = 0
    for i in range(n):
        acc ^= i  # LINE: helper_loop
    return acc


@profile  # LINE: decorated_first
def decorated(n):
    acc = 0
    for i in range(n):
        acc += i * i % 7  # LINE: decorated_loop
    acc += helper(n // 2)  # LINE: decorated_call
    return acc


def plain(n):  # LINE: plain_def
    acc = 0
    for i in range(n):
        acc += i * i % 7  # LINE: plain_loop
    return acc


def main(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        decorated(20000)
        plain(20000)


main(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
