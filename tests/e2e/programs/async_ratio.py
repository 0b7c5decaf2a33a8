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

With argv[3] "pytask", every task, the main one included, is asyncio's
pure-Python Task (asyncio.tasks._PyTask, through the loop's task factory)
instead of the C one: the same waiting, in task objects whose fields are
instance attributes.  The classes of the tasks that ran go to the JSON too.
"""
import asyncio
import random
import sys

from async_truth import Truth, current_task

TASKS = 6
truth = Truth()
kinds = set()


def py_task(loop, coro, **kw):
    """A task factory: loop.create_task passes name= from 3.13 on, context=
    from 3.11 on when given (before, it names the task afterwards)."""
    return asyncio.tasks._PyTask(coro, loop=loop, **kw)


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
    task = current_task()
    kinds.add(type(task).__module__ + "." + type(task).__name__)


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


if sys.argv[3:] == ["pytask"]:
    loop = asyncio.new_event_loop()
    loop.set_task_factory(py_task)
    try:
        loop.run_until_complete(main(float(sys.argv[1])))
    finally:
        loop.close()
else:
    asyncio.run(main(float(sys.argv[1])))
truth.extra["tasks"] = TASKS
truth.extra["task_classes"] = sorted(kinds)
truth.write(sys.argv[2])
