"""Code objects freed and made again at the same address, while tasks wait.

Each round runs a small module body that sleeps 30 ms outside the event
loop (the loop's thread is blocked, its innermost frame is that body's),
frees that body's code object, and makes a coroutine function's code anew
(CPython's allocator hands the freed block to the next object of its size:
the new code object usually has the old one's address).  Three tasks of
that new coroutine then wait 60 ms on the `wait` line while the main task
waits for them on the `gather` line (one_round is awaited, not a task: its
frame is the main task's innermost one).

Whenever the loop is idle all four tasks are suspended: three at `wait`,
one at `gather`.  A reader that kept what it learnt of the
freed body's code would give the waiters' time to the body's file.

argv[1]: rounds; argv[2]: a side file for the truth (JSON): the rounds and
how many of them made the new code at the freed code's address.
"""
import asyncio
import json
import os
import sys
import types

BODY = "import time\ntime.sleep(0.03)\n"
HERE = os.path.dirname(os.path.abspath(__file__))


async def waiter():
    await asyncio.sleep(0.06)  # LINE: wait


async def one_round(i):
    code = compile(BODY, os.path.join(HERE, f"freed_module_{i}.py"), "exec")
    exec(code, {})
    freed = id(code)
    del code
    fn = types.FunctionType(waiter.__code__.replace(co_name="waiter"),
                            globals())
    reused = id(fn.__code__) == freed
    await asyncio.gather(*(fn() for _ in range(3)))  # LINE: gather
    return reused


async def main(rounds):
    reused = 0
    for i in range(rounds):
        reused += await one_round(i)
    return reused


if __name__ == "__main__":
    rounds = int(sys.argv[1])
    reused = asyncio.run(main(rounds))
    with open(sys.argv[2], "w") as f:
        json.dump({"rounds": rounds, "reused": reused}, f)
