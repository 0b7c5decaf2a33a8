"""The one loop that several test programs share, so that their lines cost
exactly the same per iteration: the same code object runs for each of them.
Tests leave this file out of the profile (--profile-exclude spin_helper), so
its time lands on the calling line, as Scalene does for files it does not
report."""


def spin(n):
    acc = 0
    for i in range(n):
        acc ^= i
    return acc
