"""A small program with a bit of everything a profile shows.

- pure-Python arithmetic (Python time),
- compression and hashing in C libraries (native time),
- a sleep (system time: the thread is blocked),
- a second thread doing its own work.
"""
import hashlib
import threading
import time
import zlib


def python_loop(n):
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


def native_work(data):
    digest = hashlib.sha256(data).hexdigest()
    packed = zlib.compress(data, 6)
    return digest, len(packed)


def background():
    words = []
    for i in range(400_000):
        words.append(str(i))
    return ",".join(words)


def main():
    data = bytes(range(256)) * 40_000
    worker = threading.Thread(target=background)
    worker.start()
    python_loop(2_000_000)
    native_work(data)
    time.sleep(0.3)
    worker.join()


if __name__ == "__main__":
    main()
