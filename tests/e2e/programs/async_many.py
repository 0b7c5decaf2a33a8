"""100 000 asyncio tasks all waiting for one asyncio.Event at one line.

The main task creates the tasks, lets them all start (each reaches the
`wait` line and stays there), then sleeps argv[1] seconds on the `main`
line and sets the event; the tasks end and the main task gathers them.
While the loop is idle, 100 001 tasks are suspended: 100 000 at `wait`,
so that line has all but 1/100 001 of the await time.  Writes to argv[2]
(JSON) the number of tasks, how many reached the `wait` line, the
program's own wall time (from its first line to the end of the loop) and
the clocks of the main task's sleep.
"""
import time

T0 = time.monotonic()

import asyncio  # noqa: E402
import sys  # noqa: E402

from async_truth import Truth  # noqa: E402

TASKS = 100_000
truth = Truth()
started = 0


async def waiter(ev):
    global started
    started += 1
    await ev.wait()  # LINE: wait


async def main(seconds):
    ev = asyncio.Event()
    tasks = [asyncio.create_task(waiter(ev)) for _ in range(TASKS)]
    while started < TASKS:
        await asyncio.sleep(0)
    truth.extra["started"] = started
    t = truth.now()
    await asyncio.sleep(seconds)  # LINE: main
    truth.add("main", t)
    ev.set()
    await asyncio.gather(*tasks)


asyncio.run(main(float(sys.argv[1])))
truth.extra["tasks"] = TASKS
truth.extra["wall_s"] = time.monotonic() - T0
truth.write(sys.argv[2])
