"""An asyncio.TaskGroup (Python 3.11+) of four tasks: one waits on the
`one` line, three on the `three` line, all with the same rounds of sleep
(10 to 30 ms, seeded), side by side for argv[1] seconds.  While the loop is
idle every task is suspended, so the await time of the two lines is 1:3
(25/75) by the number of tasks; the main task waits in the group's exit.
Writes the tasks' own clocks per line, with the tasks' names, to argv[2]
(JSON).
"""
import asyncio
import random
import sys

from async_truth import Truth

if sys.version_info < (3, 11):
    sys.exit("async_taskgroup.py: asyncio.TaskGroup needs Python 3.11 or later")

truth = Truth()


async def one(seconds):
    rng = random.Random(1)
    end = truth.now() + seconds
    while truth.now() < end:
        t = truth.now()
        await asyncio.sleep(rng.uniform(0.010, 0.030))  # LINE: one
        truth.add("one", t)


async def three(i, seconds):
    rng = random.Random(10 + i)
    end = truth.now() + seconds
    while truth.now() < end:
        t = truth.now()
        await asyncio.sleep(rng.uniform(0.010, 0.030))  # LINE: three
        truth.add("three", t)


async def main(seconds):
    t = truth.now()
    async with asyncio.TaskGroup() as tg:  # LINE: group
        tg.create_task(one(seconds), name="tg-one")
        for i in range(3):
            tg.create_task(three(i, seconds), name=f"tg-three-{i}")
    truth.add("group", t)


asyncio.run(main(float(sys.argv[1])))
truth.extra["tasks_at"] = {"one": 1, "three": 3}
truth.write(sys.argv[2])
