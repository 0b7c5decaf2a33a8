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

Where the number of suspended tasks changes all the time, the clocks are
not the truth: the idle time is split evenly over the tasks suspended at
each moment.  A program then brackets the awaits with enter(), which
counts the tasks waiting at each line, and add(); watch_idle() looks, at
random moments from a thread of its own, whether the loop's thread waits in
its selector and, if so, adds each line's count over all the waiting tasks:
the lines' shares of the idle time (idle_shares).

loop_start() and loop_end(), on the thread that runs the loop, measure how
long the loop was idle in between: the wall time less the thread's CPU time
(the loop is either running callbacks, or blocked in the selector).
"""
import asyncio
import json
import random
import sys
import threading
import time


def current_task():
    """The running task.  3.14's C current_task() does not see a
    pure-Python task (asyncio.tasks._PyTask) run: the Python one does."""
    task = asyncio.current_task()
    if task is None and hasattr(asyncio.tasks, "_py_current_task"):
        task = asyncio.tasks._py_current_task()
    return task


def all_tasks(loop):
    """The loop's tasks, pure-Python ones included (3.14's C all_tasks()
    leaves them out)."""
    tasks = set(asyncio.all_tasks(loop))
    if hasattr(asyncio.tasks, "_py_all_tasks"):
        tasks |= set(asyncio.tasks._py_all_tasks(loop))
    return tasks


class Truth:
    def __init__(self):
        self.now = time.monotonic
        self.await_s = {}
        self.names = {}
        self.counts = []
        self.extra = {}
        self._watching = False
        self.at = {}
        self.idle = {}
        self.idle_looks = 0

    def enter(self, line):
        """The current task is about to wait at line: counts it there and
        returns the clock for add()."""
        self.at[line] = self.at.get(line, 0) + 1
        return self.now()

    def add(self, line, t0):
        """Adds now - t0 seconds to line, for the current task."""
        self.await_s[line] = self.await_s.get(line, 0.0) + self.now() - t0
        if line in self.at:
            self.at[line] -= 1
        task = current_task()
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
            self.counts.append(sum(1 for t in all_tasks(loop) if not t.done()))
            loop.call_later(period * rng.uniform(0.5, 1.5), look)

        loop.call_soon(look)

    def watch_idle(self, period=0.002):
        """Until stop(): the idle shares of the lines, sampled from another
        thread while this one (the loop's) waits in its selector, asleep
        there (not a selector call that returns at once)."""
        loop_thread = threading.get_ident()
        stat = f"/proc/self/task/{threading.get_native_id()}/stat"
        rng = random.Random(9)
        self._idle_watching = True

        def sleeping():
            try:
                with open(stat) as f:
                    return f.read().rsplit(")", 1)[1].split()[0] == "S"
            except (OSError, IndexError):
                return False

        def run():
            while self._idle_watching:
                time.sleep(period * rng.uniform(0.5, 1.5))
                f = sys._current_frames().get(loop_thread)
                if f is None or not f.f_code.co_filename.endswith(
                        "selectors.py") or not sleeping():
                    continue
                n = sum(self.at.values())
                if n <= 0:
                    continue
                for k, v in self.at.items():
                    self.idle[k] = self.idle.get(k, 0.0) + v / n
                self.idle_looks += 1

        self._idle_thread = threading.Thread(target=run, daemon=True)
        self._idle_thread.start()

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
        if getattr(self, "_idle_watching", False):
            self._idle_watching = False
            self._idle_thread.join()

    def doc(self):
        """What write() writes, as a dict."""
        doc = {"await_s": self.await_s,
               "task_names": {k: sorted(v) for k, v in self.names.items()},
               **self.extra}
        if self.counts:
            doc["concurrency_mean"] = sum(self.counts) / len(self.counts)
            doc["concurrency_peak"] = max(self.counts)
            doc["concurrency_looks"] = len(self.counts)
        if self.idle_looks:
            doc["idle_shares"] = {k: 100.0 * v / self.idle_looks
                                  for k, v in self.idle.items()}
            doc["idle_looks"] = self.idle_looks
        return doc

    def write(self, path):
        with open(path, "w") as f:
            json.dump(self.doc(), f, indent=1)
