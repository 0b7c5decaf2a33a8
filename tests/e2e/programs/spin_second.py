acc = 0
for _ in range(100):
    for i in range(20_000): acc ^= i  # LINE: hot
