# SPDX-License-Identifier: BSD-2-Clause
"""Allocates until the sampler's probes have fired, then forks children that
allocate too (each reaching the probes inherited from the parent), and exits
with the number of children that did not exit cleanly.  Writes how each
child ended to argv[1] (JSON)."""
import json
import os
import sys


def churn(n):
    acc = 0
    for i in range(n):
        acc ^= i * 1_000_003  # a new int each time: ~32 MB of allocations
    return acc


churn(1_000_000)
ended = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        churn(1_000_000)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    ended.append({"exit": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
                  "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None})
with open(sys.argv[1], "w") as f:
    json.dump(ended, f)
sys.exit(sum(e != {"exit": 0, "signal": None} for e in ended))
