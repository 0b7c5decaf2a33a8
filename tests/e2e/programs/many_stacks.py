"""Walks pseudo-random call chains through many functions of a module it
writes next to itself (so that the module is profiled with the program):
nearly every sample lands on a stack of its own.  argv[1]: seconds to run
(default 4)."""
import importlib
import os
import sys
import time

N = 300
DEPTH = 10
SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 4.0

here = os.path.dirname(os.path.abspath(__file__))
parts = ["def spin():\n    x = 0\n    for i in range(3000):\n        x += i\n    return x\n"]
for i in range(N):
    parts.append(
        f"def f{i}(d, r):\n"
        f"    if d == 0:\n"
        f"        return spin()\n"
        f"    r = (r * 1103515245 + 12345) & 0x7fffffff\n"
        f"    return F[r % {N}](d - 1, r)\n")
parts.append(f"F = [{', '.join(f'f{i}' for i in range(N))}]\n")
with open(os.path.join(here, "many_stacks_gen.py"), "w") as f:
    f.write("\n".join(parts))
sys.path.insert(0, here)
gen = importlib.import_module("many_stacks_gen")

end = time.monotonic() + SECONDS
seed = 1
while time.monotonic() < end:
    gen.F[seed % N](DEPTH, seed)
    seed += 1
print(seed)
