"""A process to attach to with --memory whose allocations are known: each
round makes a 1000-byte and a 3000-byte bytes object (1033 and 3033 bytes
asked of Python's allocator: 33 of header) on two lines, as fast as it
can, so that probes on every allocation would take most of its time.
Every 50 ms it appends (time.time(), rounds) to argv[2]; it runs until a
stop file appears (argv[1]).  Says "ready" once it runs and "done N" when
it stops."""
import os
import sys
import time


def main(stop, side):
    rounds = 0
    print("ready", flush=True)
    with open(side, "w") as out:
        while not os.path.exists(stop):
            for _ in range(500):
                a = bytes(1000)  # LINE: small
                b = bytes(3000)  # LINE: big
            rounds += 500
            now = time.time()
            if now >= main.next:
                out.write(f"{now} {rounds}\n")
                out.flush()
                main.next = now + 0.05
    return rounds


main.next = 0.0
print("done", main(sys.argv[1], sys.argv[2]), flush=True)
