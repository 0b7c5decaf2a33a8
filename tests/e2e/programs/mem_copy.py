"""Copies a known volume: ROUNDS copies of a 64 MiB buffer on one line.
argv[1] (JSON): the volume copied, in MiB."""
import json
import sys

MiB = 1 << 20
ROUNDS = 20
src = bytearray(64 * MiB)
for _ in range(ROUNDS):
    dst = bytes(src)  # LINE: copy
with open(sys.argv[1], "w") as f:
    json.dump({"copied_mb": 64 * ROUNDS}, f)
