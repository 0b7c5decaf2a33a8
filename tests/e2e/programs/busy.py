"""One hot line for about argv[1] seconds (0.4 by default).

Also runs as a module: python -m busy.
"""
import sys
import time

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 0.4
end = time.perf_counter() + seconds
acc = 0
while time.perf_counter() < end:
    for i in range(10_000): acc ^= i  # LINE: hot
