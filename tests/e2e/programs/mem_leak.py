"""One line keeps what it allocates (a leak), one frees it at once (churn),
then the program keeps running a while: leaks are judged on what the
program itself gave back, not on what the interpreter frees at exit."""
import sys

MiB = 1 << 20
N = int(sys.argv[1]) if len(sys.argv) > 1 else 300
kept = []

for i in range(N):
    kept.append(bytearray(MiB))  # LINE: leak
    tmp = bytearray(MiB)  # LINE: churn
