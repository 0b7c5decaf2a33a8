# SPDX-License-Identifier: BSD-2-Clause
"""An asyncio service idle all along: once started (it prints "ready"), its
event loop waits in its selector with every task suspended, one task at
the `long` line and three at the `short` one, and nothing wakes it until it
is killed.  It never runs while it is profiled: under --all it has no CPU
sample, only await time."""
import asyncio
import sys


async def one_long():
    await asyncio.sleep(3600)  # LINE: long


async def one_short(i):
    await asyncio.sleep(3600 + i)  # LINE: short


async def main():
    tasks = [asyncio.create_task(one_long())]
    tasks += [asyncio.create_task(one_short(i)) for i in range(3)]
    await asyncio.sleep(0.2)
    print("ready", flush=True)
    sys.stdout.close()
    await asyncio.gather(*tasks)  # LINE: gather


asyncio.run(main())
