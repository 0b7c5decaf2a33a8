# SPDX-License-Identifier: BSD-2-Clause
"""An asyncio service: a JSON echo server on 127.0.0.1 (asyncio.start_server)
and 50 concurrent client tasks in the same event loop, each sending small
JSON requests over its own connection, waiting for the answer, then
pausing 5-25 ms before the next (clients that do not hammer).  The
handler does a little CPU work per request (json loads and dumps, a digest
of the payload) and one request in three awaits asyncio.sleep of 1-5 ms, a
stand-in for a call to a downstream service.  So the loop alternates between
running callbacks and waiting in its selector with every task parked at an
await: the case where await attribution reads the loop's tasks while it
waits, and what that costs the program.
"""
import asyncio
import json

import benchclock

CLIENTS = 50
HOST = "127.0.0.1"


def digest(payload):
    """A small computation on the request: a rolling hash of the words and
    a few arithmetic rounds over the numbers."""
    h = 2166136261
    for word in payload["words"]:
        for ch in word:
            h = ((h ^ ord(ch)) * 16777619) & 0xFFFFFFFF
    acc = 0
    for i, v in enumerate(payload["values"]):
        acc = (acc * 31 + v * v + i) % 1_000_003
    return h ^ acc


async def handle(reader, writer):
    """One connection: a request per line, an answer per line."""
    while True:
        line = await reader.readline()
        if not line:
            break
        req = json.loads(line)
        answer = {"id": req["id"], "client": req["client"], "digest": digest(req["payload"])}
        if req["id"] % 3 == 0:
            # Downstream I/O: 1-5 ms, fixed by the request (same work every run).
            await asyncio.sleep(0.001 * (1 + (req["id"] + req["client"]) % 5))
            answer["downstream"] = True
        writer.write(json.dumps(answer).encode() + b"\n")
        await writer.drain()
    writer.close()
    await writer.wait_closed()


def make_request(client, n, seed):
    words = [f"w{(seed >> s) & 0xFF:02x}{client}" for s in range(0, 24, 3)]
    values = [(seed * (k + 1)) % 9973 for k in range(16)]
    return {"id": n, "client": client, "payload": {"words": words, "values": values}}


async def client(port, ident, requests):
    """One client task: a connection, then requests one at a time."""
    reader, writer = await asyncio.open_connection(HOST, port)
    seed = 12345 + ident
    total = 0
    for n in range(requests):
        seed = (seed * 1103515245 + 12345) & 0x7FFFFFFF
        writer.write(json.dumps(make_request(ident, n, seed)).encode() + b"\n")
        await writer.drain()
        answer = json.loads(await reader.readline())
        if answer["id"] != n or answer["client"] != ident:
            raise RuntimeError(f"client {ident}: answer {answer} to request {n}")
        total = (total + answer["digest"]) % 1_000_000_007
        await asyncio.sleep(0.005 * (1 + (seed >> 7) % 5))
    writer.close()
    await writer.wait_closed()
    return total


async def serve(requests):
    server = await asyncio.start_server(handle, HOST, 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        totals = await asyncio.gather(*(client(port, i, requests) for i in range(CLIENTS)))
    return sum(totals) % 1_000_000_007


def run(requests):
    return asyncio.run(serve(requests))


if __name__ == "__main__":
    benchclock.run(run, max(4, int(200 * benchclock.scale())))
