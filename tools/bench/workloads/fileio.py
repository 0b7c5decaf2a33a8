# SPDX-License-Identifier: BSD-2-Clause
"""I/O-bound: many small files written, read back and deleted in a temporary
directory, with a short sleep every few files, as a program that polls or
talks to a slow device does.  Most of the run is system time and sleeping.
"""
import os
import tempfile
import time

import benchclock


def churn(files, sleep_every):
    digest = 0
    with tempfile.TemporaryDirectory(prefix="bench-io-") as d:
        for i in range(files):
            path = os.path.join(d, f"f{i % 64}.txt")
            with open(path, "w") as f:
                for j in range(8):
                    f.write(f"record {i} {j} {'x' * (i % 50)}\n")
            with open(path) as f:
                for line in f:
                    digest = (digest * 33 + len(line)) % 1000003
            st = os.stat(path)
            digest ^= st.st_size
            if i % 128 == 127:
                for k in range(64):
                    try:
                        os.unlink(os.path.join(d, f"f{k}.txt"))
                    except FileNotFoundError:
                        pass
            if i % sleep_every == 0:
                time.sleep(0.001)
    return digest


if __name__ == "__main__":
    benchclock.run(churn, max(64, int(2000 * benchclock.scale())), 10)
