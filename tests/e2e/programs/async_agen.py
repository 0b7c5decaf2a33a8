"""An async generator consumed by `async for`.

The generator sleeps 10 to 30 ms (seeded) on the `produce` line before each
item; the body of the `async for` sleeps 3 times as long per item on the
`consume` line.  While the consumer waits for the next item, its innermost
await is the generator's `produce` line (the `async for` line only calls
into the generator); so the await time of the two lines is 1:3 (25/75).
Runs argv[1] seconds; writes the clocks' time per line and the task's name
to argv[2] (JSON).
"""
import asyncio
import random
import sys

from async_truth import Truth

truth = Truth()


async def ticks(seconds):
    rng = random.Random(2)
    end = truth.now() + seconds
    while truth.now() < end:
        d = rng.uniform(0.010, 0.030)
        t = truth.now()
        await asyncio.sleep(d)  # LINE: produce
        truth.add("produce", t)
        yield d


async def consume(seconds):
    items = 0
    async for d in ticks(seconds):  # LINE: async_for
        t = truth.now()
        await asyncio.sleep(3 * d)  # LINE: consume
        truth.add("consume", t)
        items += 1
    truth.extra["items"] = items


async def main(seconds):
    await asyncio.create_task(consume(seconds), name="consumer")  # LINE: main


asyncio.run(main(float(sys.argv[1])))
truth.write(sys.argv[2])
