# SPDX-License-Identifier: BSD-2-Clause
"""Numpy: k-means clustering, a power iteration on a dense matrix and a
spectral filter with FFTs, driven by a Python loop over many mid-sized array
operations (so that time is spent both in numpy's C loops and BLAS and in the
interpreter between calls).  BLAS threads are held to one by the driver
(OPENBLAS_NUM_THREADS=1 and friends), so the workload is single-threaded and
pinned like the others.  Needs numpy: the driver runs every cell with the
interpreter of build/bench-venv, where tools/bench/requirements.txt put it.
"""
import numpy as np

import benchclock


def kmeans(points, k, steps):
    centres = points[:k].copy()
    for _ in range(steps):
        # Squared distances of every point to every centre, then reassignment.
        d = ((points[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
        owner = d.argmin(axis=1)
        for j in range(k):
            members = points[owner == j]
            if len(members):
                centres[j] = members.mean(axis=0)
    return centres


def power_iteration(m, steps):
    v = np.ones(m.shape[0]) / np.sqrt(m.shape[0])
    for _ in range(steps):
        w = m @ v
        v = w / np.linalg.norm(w)
    return float(v @ (m @ v))


def spectral_filter(signal, keep, passes):
    out = signal
    for _ in range(passes):
        f = np.fft.rfft(out)
        f[keep:] = 0
        out = np.fft.irfft(f, n=len(signal))
        out = np.sort(out)[::-1].copy() if passes % 7 == 0 else out + 0.001
    return float(np.abs(out).sum())


def compute(reps):
    rng = np.random.default_rng(12345)
    acc = 0.0
    for r in range(reps):
        points = rng.normal(size=(20000, 3)) + (r % 3)
        centres = kmeans(points, 12, 12)
        acc += float(np.round(np.sort(centres[:, 0]).sum(), 6))
        a = rng.random((300, 300))
        acc += round(power_iteration(a + a.T, 150), 6)
        sig = np.sin(np.linspace(0, 200 * np.pi, 1 << 16)) + rng.normal(scale=0.1, size=1 << 16)
        acc += round(spectral_filter(sig, 2000, 40), 3)
        for _ in range(50):
            a = np.sort(rng.random(20000))
            acc += float(np.searchsorted(a, 0.5))
    return f"{acc:.3f}"


if __name__ == "__main__":
    benchclock.run(compute, max(1, int(12 * benchclock.scale())))
