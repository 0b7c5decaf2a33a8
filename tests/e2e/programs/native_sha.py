"""A pure-Python line against a line that hashes in OpenSSL.

hashlib releases the GIL for large buffers and runs OpenSSL's SHA-256, so the
`native` line's time is native code; the `python` line only runs bytecode.
Each part takes about argv[1] CPU seconds (calibrated at start-up).
"""
import hashlib
import sys
import time

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 0.5
buf = b"x" * (16 << 20)  # written now, so hashing takes no page faults


def calibrate():
    t = time.thread_time()
    acc = 0
    for i in range(200_000): acc ^= i  # LINE: calibrate_py
    py = (time.thread_time() - t) / 200_000
    t = time.thread_time()
    hashlib.sha256(buf).digest()  # LINE: calibrate_native
    return py, time.thread_time() - t


def python_part(n):
    acc = 0
    for i in range(n): acc ^= i  # LINE: python
    return acc


def native_part(k):
    for _ in range(k): hashlib.sha256(buf).digest()  # LINE: native


per_iter, per_hash = calibrate()
python_part(int(seconds / per_iter))
native_part(max(2, int(seconds / per_hash)))
