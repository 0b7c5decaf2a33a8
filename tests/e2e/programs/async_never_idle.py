"""An event loop that is never idle: the main coroutine computes, pure
Python on the `cpu` line, for about argv[1] seconds of CPU without ever
awaiting; the three tasks it created before never get to run (they would
sleep on the `never` line) until it is done, and are then cancelled by
asyncio.run.  The loop never waits in its selector with anything to wait
for, so there is no await time to speak of; the `cpu` line has the time.

Writes to argv[2] (JSON) the CPU time of the `cpu` line (time.thread_time
around it) and whether any task reached the `never` line.
"""
import asyncio
import sys
import time

from async_truth import Truth
from spin_helper import calibrate, spin

truth = Truth()
reached = []


async def sleeper(i):
    reached.append(i)
    await asyncio.sleep(10)  # LINE: never


async def main(seconds):
    tasks = [asyncio.create_task(sleeper(i), name=f"sleeper-{i}")
             for i in range(3)]
    per_iter = calibrate()
    n = int(0.010 / per_iter)
    clock = time.thread_time
    cpu = 0.0
    while cpu < seconds:
        c = clock()
        spin(n)  # LINE: cpu
        cpu += clock() - c
    truth.extra["cpu_s"] = cpu
    truth.extra["reached"] = len(reached)
    return tasks


asyncio.run(main(float(sys.argv[1])))
truth.write(sys.argv[2])
