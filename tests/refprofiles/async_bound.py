import asyncio


async def short_waits():
    for _ in range(20):
        await asyncio.sleep(0.01)


async def long_wait():
    await asyncio.sleep(1.5)


async def compute_then_wait():
    total = sum(range(20_000_000))
    await asyncio.sleep(0.5)
    return total


async def main():
    return await asyncio.gather(short_waits(), long_wait(), compute_then_wait())


if __name__ == "__main__":
    print("the coroutines returned:", asyncio.run(main()))
