# SPDX-License-Identifier: BSD-2-Clause
"""A matrix product on two BLAS threads: OpenBLAS runs part of it on a worker
thread of its own, which has no Python frame.  Runs for about SECONDS."""
import os
import sys
import time

os.environ["OPENBLAS_NUM_THREADS"] = "2"
import numpy  # noqa: E402

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0

a = numpy.random.default_rng(1).random((600, 600))
t0 = time.time()
while time.time() - t0 < SECONDS:
    a @ a  # LINE: blas
