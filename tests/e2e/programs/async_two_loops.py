"""Two event loops in two threads, each with asyncio.run of its own tasks.

Loop "a" (thread loop-a): six tasks go round asyncio.sleep(d) on the
`a_short` line, then asyncio.sleep(3 * d) on `a_long` (d 5 to 15 ms,
seeded): 1:3 between the two lines; its main task waits on `a_gather`.
Loop "b" (thread loop-b): twelve tasks sleep 10 to 30 ms at a time on the
`b_wait` line; its main task waits on `b_gather`.  Both run argv[1]
seconds side by side, each loop idle nearly all the time.

Each loop's idle time belongs to its own tasks: 7 suspended at once in
"a", 13 in "b".  Both loops are idle about as long, so each loop's lines
get about half of all the await time, whereas one pool of 20 tasks sharing
both loops' time would give "a" 7/20.  Writes to argv[2] (JSON), per loop,
what async_truth.Truth writes (clocks per line, task names, pending-task
counts of that loop, the loop's idle time).
"""
import asyncio
import json
import random
import sys
import threading

from async_truth import Truth

TASKS = {"a": 6, "b": 12}
truths = {"a": Truth(), "b": Truth()}


async def a_worker(truth, i, seconds):
    rng = random.Random(200 + i)
    end = truth.now() + seconds
    while truth.now() < end:
        d = rng.uniform(0.005, 0.015)
        t = truth.now()
        await asyncio.sleep(d)  # LINE: a_short
        truth.add("a_short", t)
        t = truth.now()
        await asyncio.sleep(3 * d)  # LINE: a_long
        truth.add("a_long", t)


async def b_worker(truth, i, seconds):
    rng = random.Random(300 + i)
    end = truth.now() + seconds
    while truth.now() < end:
        t = truth.now()
        await asyncio.sleep(rng.uniform(0.010, 0.030))  # LINE: b_wait
        truth.add("b_wait", t)


async def a_main(truth, seconds):
    tasks = [asyncio.create_task(a_worker(truth, i, seconds), name=f"a-{i}")
             for i in range(TASKS["a"])]
    truth.watch()
    truth.loop_start()
    t = truth.now()
    await asyncio.gather(*tasks)  # LINE: a_gather
    truth.add("a_gather", t)
    truth.loop_end()
    truth.stop()


async def b_main(truth, seconds):
    tasks = [asyncio.create_task(b_worker(truth, i, seconds), name=f"b-{i}")
             for i in range(TASKS["b"])]
    truth.watch()
    truth.loop_start()
    t = truth.now()
    await asyncio.gather(*tasks)  # LINE: b_gather
    truth.add("b_gather", t)
    truth.loop_end()
    truth.stop()


def main(seconds, path):
    mains = {"a": a_main, "b": b_main}
    threads = [threading.Thread(target=asyncio.run, name=f"loop-{k}",
                                args=(mains[k](truths[k], seconds),))
               for k in ("a", "b")]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    doc = {}
    for k, truth in truths.items():
        truth.extra["tasks"] = TASKS[k]
        doc[k] = truth.doc()
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)


main(float(sys.argv[1]), sys.argv[2])
