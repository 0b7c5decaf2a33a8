# SPDX-License-Identifier: BSD-2-Clause
"""An object-heavy cooperative scheduler, in the spirit of the classic
operating-system simulation benchmarks: task control blocks in a priority
list, messages passed between tasks through linked mailboxes, tasks that
block, wake and hand the processor to each other.  Mostly attribute access,
method calls and small allocations.
"""
import benchclock

READY, WAITING, HELD = 0, 1, 2


class Message:
    __slots__ = ("next", "sender", "kind", "payload")

    def __init__(self, sender, kind, payload):
        self.next = None
        self.sender = sender
        self.kind = kind
        self.payload = payload


class Mailbox:
    __slots__ = ("head", "tail", "count")

    def __init__(self):
        self.head = self.tail = None
        self.count = 0

    def put(self, msg):
        msg.next = None
        if self.tail is None:
            self.head = msg
        else:
            self.tail.next = msg
        self.tail = msg
        self.count += 1

    def take(self):
        msg = self.head
        if msg is not None:
            self.head = msg.next
            if self.head is None:
                self.tail = None
            self.count -= 1
        return msg


class Task:
    def __init__(self, kernel, ident, priority):
        self.kernel = kernel
        self.ident = ident
        self.priority = priority
        self.state = READY
        self.mailbox = Mailbox()
        self.next_task = None
        self.steps = 0

    def runnable(self):
        return self.state == READY or (self.state == WAITING and self.mailbox.count > 0)

    def step(self):
        raise NotImplementedError


class Producer(Task):
    """Makes jobs and sends them to the router until its quota is used."""

    def __init__(self, kernel, ident, priority, quota, router):
        super().__init__(kernel, ident, priority)
        self.quota = quota
        self.router = router
        self.seed = 12345

    def step(self):
        if self.quota == 0:
            self.state = HELD
            return
        self.quota -= 1
        self.seed = (self.seed * 1103515245 + 12345) & 0x7FFFFFFF
        payload = [(self.seed >> shift) & 0xFF for shift in (0, 5, 10, 15, 20)]
        self.kernel.send(self, self.router, "job", payload)


class Router(Task):
    """Routes each job to a worker chosen from its payload."""

    def __init__(self, kernel, ident, priority):
        super().__init__(kernel, ident, priority)
        self.workers = []
        self.state = WAITING

    def step(self):
        msg = self.mailbox.take()
        if msg is None:
            self.state = WAITING
            return
        worker = self.workers[sum(msg.payload) % len(self.workers)]
        self.kernel.send(self, worker, msg.kind, msg.payload)


class Worker(Task):
    """Processes jobs; every few jobs asks a device for a slow operation."""

    def __init__(self, kernel, ident, priority, device):
        super().__init__(kernel, ident, priority)
        self.device = device
        self.state = WAITING
        self.total = 0

    def step(self):
        msg = self.mailbox.take()
        if msg is None:
            self.state = WAITING
            return
        if msg.kind == "done":
            self.total += msg.payload
            return
        acc = 0
        for i, v in enumerate(msg.payload):
            acc = (acc * 31 + v * (i + 1)) % 65521
        if acc % 4 == 0:
            self.kernel.send(self, self.device, "io", acc)
        else:
            self.total += acc


class Device(Task):
    """Answers requests after holding each one for a few scheduler turns."""

    def __init__(self, kernel, ident, priority, latency):
        super().__init__(kernel, ident, priority)
        self.latency = latency
        self.pending = None
        self.countdown = 0
        self.state = WAITING

    def step(self):
        if self.pending is None:
            self.pending = self.mailbox.take()
            if self.pending is None:
                self.state = WAITING
                return
            self.countdown = self.latency
        if self.countdown > 0:
            self.countdown -= 1
            return
        msg, self.pending = self.pending, None
        self.kernel.send(self, msg.sender, "done", msg.payload ^ 0x5A5A)


class Kernel:
    def __init__(self):
        self.tasks = None  # singly linked, highest priority first
        self.switches = 0
        self.messages = 0

    def add(self, task):
        prev, cur = None, self.tasks
        while cur is not None and cur.priority >= task.priority:
            prev, cur = cur, cur.next_task
        task.next_task = cur
        if prev is None:
            self.tasks = task
        else:
            prev.next_task = task
        return task

    def send(self, sender, receiver, kind, payload):
        receiver.mailbox.put(Message(sender, kind, payload))
        if receiver.state == WAITING:
            receiver.state = READY
        self.messages += 1

    def run(self):
        while True:
            task = self.tasks
            while task is not None and not task.runnable():
                task = task.next_task
            if task is None:
                return
            task.state = READY
            task.step()
            task.steps += 1
            self.switches += 1


def simulate(jobs):
    kernel = Kernel()
    router = kernel.add(Router(kernel, "router", 30))
    devices = [kernel.add(Device(kernel, f"dev{i}", 40 + i, 2 + i)) for i in range(2)]
    for i in range(4):
        router.workers.append(kernel.add(Worker(kernel, f"w{i}", 20 + i, devices[i % 2])))
    kernel.add(Producer(kernel, "producer", 10, jobs, router))
    kernel.run()
    total = sum(w.total for w in router.workers)
    return f"{total}:{kernel.switches}:{kernel.messages}"


if __name__ == "__main__":
    benchclock.run(simulate, max(100, int(130_000 * benchclock.scale())))
