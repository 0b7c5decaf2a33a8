# SPDX-License-Identifier: BSD-2-Clause
"""An asyncio service that keeps its event loop busy waking: argv[1] tasks
(10 by default), each sleeping 20 to 60 ms (seeded) on the `tick` line and
doing a little work, until it is killed.  It prints "ready" once its loop
runs.  Its loop is idle nearly all the time, and it runs (wakes) often: the
kind of process system-wide profiling looks at every 10 ms."""
import asyncio
import random
import sys


async def ticker(i):
    rng = random.Random(i)
    while True:
        await asyncio.sleep(rng.uniform(0.02, 0.06))  # LINE: tick
        sum(range(200))


async def main(n):
    tasks = [asyncio.create_task(ticker(i)) for i in range(n)]
    await asyncio.sleep(0)
    print("ready", flush=True)
    sys.stdout.close()
    await asyncio.gather(*tasks)


asyncio.run(main(int(sys.argv[1]) if sys.argv[1:] else 10))
