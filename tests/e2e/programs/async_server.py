"""A line-echo server and its clients over a local TCP socket, in one event
loop.

asyncio.start_server serves 127.0.0.1; each of four clients connects, then
goes round: sleeps 20 to 60 ms (seeded) on the `client_sleep` line, sends a
line, waits for the echo on the `client_read` line.  The server's handler
(one task per connection) waits for each line on the `handler_read` line:
it waits as long as its client sleeps.  So the server-side waiting is on
`handler_read`, about as much as the clients' sleeping, while the echo
comes back quickly.  The main task waits for the clients on `gather`.

Runs argv[1] seconds or, when argv[1] is not a number, until the file it
names exists (to be attached to: it says "ready" on stdout once the
clients are connected); writes to argv[2] (JSON) the time each marked await
took by the tasks' own clocks (time.monotonic), with the tasks' names, and
how many lines the server echoed.
"""
import asyncio
import os
import random
import sys

from async_truth import Truth

CLIENTS = 4
truth = Truth()
echoed = 0


async def handle(reader, writer):
    global echoed
    while True:
        t = truth.now()
        line = await reader.readline()  # LINE: handler_read
        truth.add("handler_read", t)
        if not line:
            break
        writer.write(line)
        await writer.drain()
        echoed += 1
    writer.close()


def over(arg, end):
    return truth.now() >= end or (end == float("inf") and os.path.exists(arg))


async def client(i, port, arg, end, connected):
    rng = random.Random(i)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    connected.append(i)
    while not over(arg, end):
        t = truth.now()
        await asyncio.sleep(rng.uniform(0.020, 0.060))  # LINE: client_sleep
        truth.add("client_sleep", t)
        writer.write(b"ping %d\n" % i)
        await writer.drain()
        t = truth.now()
        reply = await reader.readline()  # LINE: client_read
        truth.add("client_read", t)
        assert reply == b"ping %d\n" % i, reply
    writer.close()
    await writer.wait_closed()


async def ready(connected):
    while len(connected) < CLIENTS:
        await asyncio.sleep(0.01)
    print("ready", flush=True)


async def main(arg):
    end = truth.now() + float(arg) if arg[0].isdigit() else float("inf")
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    connected = []
    clients = [asyncio.create_task(client(i, port, arg, end, connected),
                                   name=f"client-{i}")
               for i in range(CLIENTS)]
    if end == float("inf"):
        await ready(connected)
    t = truth.now()
    await asyncio.gather(*clients)  # LINE: gather
    truth.add("gather", t)
    server.close()
    await server.wait_closed()


asyncio.run(main(sys.argv[1]))
truth.extra["echoed"] = echoed
truth.write(sys.argv[2])
