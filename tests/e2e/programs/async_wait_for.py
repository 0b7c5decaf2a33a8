"""asyncio.wait_for with a timeout that always expires.

A task calls wait_for(slow(), timeout) over and over, the timeout 20 to 60
ms (seeded); slow() sleeps 10 s on the `slow` line and is cancelled when
the timeout expires.  The innermost await of the waiting is the `slow`
line.  Before Python 3.12 wait_for runs slow() in a task of its own, and
the calling task then waits on the `wait_for` line too; from 3.12 on slow()
runs in the calling task.  The program finds out which (slow() looks at the
task it runs in) and counts the caller's waiting on the `wait_for` line
only when it is a task apart.  Beside it, a plain task sleeps on the `beside`
line as long as the caller waits in total, in rounds of its own.

Runs argv[1] seconds; writes the clocks' time per line, the tasks' names and
the number of timeouts to argv[2] (JSON).
"""
import asyncio
import random
import sys

from async_truth import Truth

truth = Truth()
timeouts = 0
apart = None


async def slow(caller):
    global apart
    apart = asyncio.current_task() is not caller
    t = truth.now()
    try:
        await asyncio.sleep(10)  # LINE: slow
    finally:
        truth.add("slow", t)


async def caller(seconds):
    global timeouts
    rng = random.Random(3)
    me = asyncio.current_task()
    end = truth.now() + seconds
    while truth.now() < end:
        t = truth.now()
        try:
            await asyncio.wait_for(slow(me), rng.uniform(0.020, 0.060))  # LINE: wait_for
        except asyncio.TimeoutError:
            timeouts += 1
        if apart:
            truth.add("wait_for", t)


async def beside(seconds):
    rng = random.Random(4)
    end = truth.now() + seconds
    while truth.now() < end:
        t = truth.now()
        await asyncio.sleep(rng.uniform(0.020, 0.060))  # LINE: beside
        truth.add("beside", t)


async def main(seconds):
    tasks = [asyncio.create_task(caller(seconds), name="caller"),
             asyncio.create_task(beside(seconds), name="beside")]
    t = truth.now()
    await asyncio.gather(*tasks)  # LINE: gather
    truth.add("gather", t)


asyncio.run(main(float(sys.argv[1])))
truth.extra["timeouts"] = timeouts
truth.extra["slow_in_own_task"] = apart
truth.write(sys.argv[2])
