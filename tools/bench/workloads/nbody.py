# SPDX-License-Identifier: BSD-2-Clause
"""N-body simulation: tight float loops over lists, no allocation per step.

A star with four planets on roughly circular orbits, advanced with a
symplectic Euler step.  The checksum is the total energy after the run.
"""
import math

import benchclock


def make_system():
    # name: (distance, mass); orbital speed from v = sqrt(G M / r), G = 1.
    star_mass = 1000.0
    planets = [(4.0, 0.8), (7.0, 1.5), (11.0, 0.3), (17.0, 2.4)]
    bodies = [[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, star_mass]]
    for i, (r, m) in enumerate(planets):
        angle = i * 1.3
        v = math.sqrt(star_mass / r)
        bodies.append([r * math.cos(angle), r * math.sin(angle), 0.05 * i,
                   -v * math.sin(angle), v * math.cos(angle), 0.0, m])
    # Move to the centre-of-mass frame so the system does not drift.
    total = sum(b[6] for b in bodies)
    for k in (3, 4, 5):
        p = sum(b[k] * b[6] for b in bodies)
        for b in bodies:
            b[k] -= p / total
    return bodies


def energy(bodies):
    e = 0.0
    for i, a in enumerate(bodies):
        e += 0.5 * a[6] * (a[3] * a[3] + a[4] * a[4] + a[5] * a[5])
        for b in bodies[i + 1:]:
            dx, dy, dz = a[0] - b[0], a[1] - b[1], a[2] - b[2]
            e -= a[6] * b[6] / math.sqrt(dx * dx + dy * dy + dz * dz)
    return e


def advance(bodies, pairs, dt, steps):
    for _ in range(steps):
        for a, b in pairs:
            dx = a[0] - b[0]
            dy = a[1] - b[1]
            dz = a[2] - b[2]
            d2 = dx * dx + dy * dy + dz * dz
            mag = dt / (d2 * math.sqrt(d2))
            ma = a[6] * mag
            mb = b[6] * mag
            a[3] -= dx * mb
            a[4] -= dy * mb
            a[5] -= dz * mb
            b[3] += dx * ma
            b[4] += dy * ma
            b[5] += dz * ma
        for body in bodies:
            body[0] += dt * body[3]
            body[1] += dt * body[4]
            body[2] += dt * body[5]


def simulate(steps):
    bodies = make_system()
    pairs = [(bodies[i], bodies[j]) for i in range(len(bodies)) for j in range(i + 1, len(bodies))]
    advance(bodies, pairs, 0.0005, steps)
    return f"{energy(bodies):.6f}"


if __name__ == "__main__":
    benchclock.run(simulate, max(100, int(260_000 * benchclock.scale())))
