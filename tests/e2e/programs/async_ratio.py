"""Six asyncio tasks that wait at two lines, three times as long at the
second: the await time of the two lines is 1:3 (25/75).

Each task goes round a loop: asyncio.sleep(d) on the `short` line, then
asyncio.sleep(3 * d) on the `long` one, d drawn from 5 to 15 ms by a seeded
generator (rounds of one fixed length could keep in step with the
profiler's sampling).  The tasks run side by side until argv[1] seconds have
passed, so the loop is idle, all of them suspended, nearly all the time; the
main task waits for them on the `gather` line.  Each task reads
time.monotonic around its awaits; the totals per line, with the names of the
tasks that waited there and how long the loop was idle (wall time less the
loop thread's CPU time), go to argv[2] (JSON).
"""
import asyncio
import random
import sys

from async_truth import Truth

TASKS = 6
truth = Truth()


async def worker(i, seconds):
    rng = random.Random(100 + i)
    end = truth.now() + seconds
    while truth.now() < end:
        d = rng.uniform(0.005, 0.015)
        t = truth.now()
        await asyncio.sleep(d)  # LINE: short
        truth.add("short", t)
        t = truth.now()
        await asyncio.sleep(3 * d)  # LINE: long
        truth.add("long", t)


async def main(seconds):
    tasks = [asyncio.create_task(worker(i, seconds), name=f"ratio-{i}")
             for i in range(TASKS)]
    truth.watch()
    truth.loop_start()
    t = truth.now()
    await asyncio.gather(*tasks)  # LINE: gather
    truth.add("gather", t)
    truth.loop_end()
    truth.stop()


asyncio.run(main(float(sys.argv[1])))
truth.extra["tasks"] = TASKS
truth.write(sys.argv[2])
