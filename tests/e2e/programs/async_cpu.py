"""A CPU-bound coroutine beside three that wait.

The busy task runs pure Python on the `cpu` line in rounds of 5 to 15 ms of
CPU (seeded), and between rounds sleeps 10 ms on the `pause` line.  Three
waiters sleep 10 to 30 ms at a time on the `wait` line; the main task waits
for all of them on the `gather` line.  While the busy task computes, the
loop is not idle: that time is the `cpu` line's Python time, not await time.
Whenever the loop is idle, every task is suspended (none runs): three at
`wait`, one at `pause`, one at `gather`.  So the idle time splits 3:1:1 over
those lines and the `cpu` line has none of it, whatever the machine's speed.

argv[1]: about how many CPU seconds the busy line works (the waiters go on
until it is done).  Writes to argv[2] (JSON) the CPU time of the busy line
(time.thread_time around it), the clock's time per await line, and how many
tasks wait at each line.
"""
import asyncio
import random
import sys
import time

from async_truth import Truth
from spin_helper import calibrate, spin

WAITERS = 3
truth = Truth()
done = False


async def busy(seconds, per_iter):
    global done
    rng = random.Random(7)
    clock = time.thread_time
    cpu = 0.0
    while cpu < seconds:
        n = int(rng.uniform(0.005, 0.015) / per_iter)
        c = clock()
        spin(n)  # LINE: cpu
        cpu += clock() - c
        t = truth.now()
        await asyncio.sleep(0.010)  # LINE: pause
        truth.add("pause", t)
    truth.extra["cpu_s"] = cpu
    done = True


async def waiter(i):
    rng = random.Random(i)
    while not done:
        t = truth.now()
        await asyncio.sleep(rng.uniform(0.010, 0.030))  # LINE: wait
        truth.add("wait", t)


async def main(seconds):
    per_iter = calibrate()
    tasks = [asyncio.create_task(busy(seconds, per_iter), name="busy")]
    tasks += [asyncio.create_task(waiter(i), name=f"waiter-{i}")
              for i in range(WAITERS)]
    t = truth.now()
    await asyncio.gather(*tasks)  # LINE: gather
    truth.add("gather", t)


asyncio.run(main(float(sys.argv[1])))
truth.extra["tasks_at"] = {"wait": WAITERS, "pause": 1, "gather": 1,
                           "cpu": 0}
truth.write(sys.argv[2])
