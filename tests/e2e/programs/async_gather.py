"""A gather of 100 asyncio tasks that all wait at one line: about 100 tasks
are suspended at the same moment while they wait (101 with the main task,
which waits for them in the gather).

Each task sleeps 10 to 30 ms at a time (seeded) on the `wait` line, until
argv[1] seconds have passed or, when argv[1] is not a number, until the file
it names exists (to be attached to: it says "ready" on stdout once the
tasks wait).  The program counts its pending tasks every few milliseconds
(async_truth.Truth.watch) and writes that count's mean and peak, and its own
clock's time per line and how long the loop was idle, to argv[2] (JSON).
"""
import asyncio
import os
import random
import sys

from async_truth import Truth

TASKS = 100
truth = Truth()


def over(arg, end):
    return truth.now() >= end or (end == float("inf") and os.path.exists(arg))


async def waiter(i, arg, end):
    rng = random.Random(i)
    while not over(arg, end):
        t = truth.now()
        await asyncio.sleep(rng.uniform(0.010, 0.030))  # LINE: wait
        truth.add("wait", t)


async def main(arg):
    end = truth.now() + float(arg) if arg[0].isdigit() else float("inf")
    tasks = [asyncio.create_task(waiter(i, arg, end), name=f"waiter-{i:03d}")
             for i in range(TASKS)]
    truth.watch()
    print("ready", flush=True)
    truth.loop_start()
    t = truth.now()
    await asyncio.gather(*tasks)  # LINE: gather
    truth.add("gather", t)
    truth.loop_end()
    truth.stop()


asyncio.run(main(sys.argv[1]))
truth.extra["tasks"] = TASKS
truth.write(sys.argv[2])
