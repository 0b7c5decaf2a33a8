"""What the asyncio test programs know of their own waiting, written as JSON
for the tests to compare the profile with.

A program reads the clock around each await it marks (`# LINE: name`) and
adds the seconds to that line, with the name of the task that waited:

    t = truth.now()
    await asyncio.sleep(d)  # LINE: short
    truth.add("short", t)

The timing stays in the program's own lines: a helper that awaited on the
program's behalf would be the innermost frame instead of the marked line.

watch() counts, every few milliseconds from a loop callback (no task runs
then, so every unfinished task is suspended), how many tasks are pending:
the concurrency the profile should report while they wait.

loop_start() and loop_end(), on the thread that runs the loop, measure how
long the loop was idle in between: the wall time less the thread's CPU time
(the loop is either running callbacks, or blocked in the selector).
"""
import asyncio
import json
import random
import time


class Truth:
    def __init__(self):
        self.now = time.monotonic
        self.await_s = {}
        self.names = {}
        self.counts = []
        self.extra = {}
        self._watching = False

    def add(self, line, t0):
        """Adds now - t0 seconds to line, for the current task."""
        self.await_s[line] = self.await_s.get(line, 0.0) + self.now() - t0
        task = asyncio.current_task()
        if task is not None:
            self.names.setdefault(line, set()).add(task.get_name())

    def watch(self, period=0.005):
        """Counts the pending tasks every period (jittered: a fixed period
        near a multiple of the profiler's would always look at the same
        phase of the program's rounds) until stop()."""
        loop = asyncio.get_running_loop()
        rng = random.Random(5)
        self._watching = True

        def look():
            if not self._watching:
                return
            self.counts.append(sum(1 for t in asyncio.all_tasks(loop)
                                   if not t.done()))
            loop.call_later(period * rng.uniform(0.5, 1.5), look)

        loop.call_soon(look)

    @staticmethod
    def _runqueue_s():
        """Time this thread has waited for a CPU while runnable (the
        kernel's schedstat): not idle, only preempted on a busy machine."""
        try:
            with open("/proc/thread-self/schedstat") as f:
                return int(f.read().split()[1]) / 1e9
        except (OSError, ValueError, IndexError):
            return 0.0

    def loop_start(self):
        self._loop0 = (self.now(), time.thread_time(), self._runqueue_s())

    def loop_end(self):
        wall = self.now() - self._loop0[0]
        cpu = time.thread_time() - self._loop0[1]
        waited = self._runqueue_s() - self._loop0[2]
        self.extra["loop_wall_s"] = wall
        self.extra["loop_cpu_s"] = cpu
        self.extra["loop_runqueue_s"] = waited
        # Idle: neither running nor waiting for a CPU (in the selector).
        self.extra["loop_idle_s"] = wall - cpu - waited

    def stop(self):
        self._watching = False

    def write(self, path):
        doc = {"await_s": self.await_s,
               "task_names": {k: sorted(v) for k, v in self.names.items()},
               **self.extra}
        if self.counts:
            doc["concurrency_mean"] = sum(self.counts) / len(self.counts)
            doc["concurrency_peak"] = max(self.counts)
            doc["concurrency_looks"] = len(self.counts)
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
