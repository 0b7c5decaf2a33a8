"""Says "ready" on stdout, then waits (up to argv[1] seconds) for a signal,
with the default handlers: SIGTERM ends it, SIGINT raises KeyboardInterrupt."""
import sys
import time


def main(seconds):
    acc = 0
    for i in range(200_000): acc ^= i  # LINE: work
    print("ready", flush=True)
    time.sleep(seconds)  # LINE: wait


main(float(sys.argv[1]))
