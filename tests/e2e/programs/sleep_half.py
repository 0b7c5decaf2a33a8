"""Busy for argv[1] seconds, then asleep for as long.

Writes the measured durations to argv[2] (JSON) so the test can compare the
profile with what really happened.
"""
import json
import sys
import time

seconds = float(sys.argv[1])
t0 = time.perf_counter()
end = t0 + seconds
while time.perf_counter() < end: pass  # LINE: busy
t1 = time.perf_counter()
time.sleep(seconds)  # LINE: sleep
t2 = time.perf_counter()
with open(sys.argv[2], "w") as f:
    json.dump({"busy_s": t1 - t0, "sleep_s": t2 - t1}, f)
