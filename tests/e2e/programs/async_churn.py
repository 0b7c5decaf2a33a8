"""Task churn: thousands of short tasks a second, each created, run and
gone within a few milliseconds, for argv[1] seconds.

A spawner creates a batch of 5 tasks, then sleeps 0.5 to 1.5 ms (seeded:
a fixed round could keep in step with the profiler's polls) on the `spawn`
line, and again; each short task awaits asyncio.sleep(0) on the `zero`
line (a bare yield: the loop does not wait for it), then sleeps 2 to 6 ms
(seeded) on the `tiny` line, and ends: some 15 of them wait at any moment.
The main task waits for the spawner on the `main` line.  The task set
changes all the time while it is read, and so does the number of suspended
tasks: the lines' shares of the idle time are sampled
(async_truth.Truth.watch_idle).  Writes to argv[2] (JSON) those shares, the
clocks per marked line, the tasks' names, how many short tasks ran, and how
long the loop was idle.
"""
import asyncio
import random
import sys

from async_truth import Truth

BATCH = 5
truth = Truth()
done = 0


async def short(d):
    global done
    t = truth.enter("zero")
    await asyncio.sleep(0)  # LINE: zero
    truth.add("zero", t)
    t = truth.enter("tiny")
    await asyncio.sleep(d)  # LINE: tiny
    truth.add("tiny", t)
    done += 1


async def spawner(seconds):
    rng = random.Random(11)
    live = set()
    end = truth.now() + seconds
    n = 0
    while truth.now() < end:
        for _ in range(BATCH):
            task = asyncio.create_task(short(rng.uniform(0.002, 0.006)),
                                       name=f"short-{n}")
            n += 1
            live.add(task)
            task.add_done_callback(live.discard)
        t = truth.enter("spawn")
        await asyncio.sleep(rng.uniform(0.0005, 0.0015))  # LINE: spawn
        truth.add("spawn", t)
    while live:
        t = truth.enter("drain")
        await asyncio.sleep(0.005)  # LINE: drain
        truth.add("drain", t)
    truth.extra["spawned"] = n


async def main(seconds):
    truth.watch_idle()
    truth.loop_start()
    t = truth.enter("main")
    await asyncio.create_task(spawner(seconds), name="spawner")  # LINE: main
    truth.add("main", t)
    truth.loop_end()
    truth.stop()


asyncio.run(main(float(sys.argv[1])))
truth.extra["done"] = done
truth.write(sys.argv[2])
