# SPDX-License-Identifier: BSD-2-Clause
"""Ray tracer: float arithmetic on small objects (vectors, rays, shapes).

Renders spheres over a checkered floor with two point lights, shadows and
one level of mirror reflection.  Allocation-heavy on purpose: every vector
operation makes a new object, as straightforward Python code does.
"""
import math

import benchclock


class Vec:
    __slots__ = ("x", "y", "z")

    def __init__(self, x, y, z):
        self.x = x
        self.y = y
        self.z = z

    def __add__(self, o):
        return Vec(self.x + o.x, self.y + o.y, self.z + o.z)

    def __sub__(self, o):
        return Vec(self.x - o.x, self.y - o.y, self.z - o.z)

    def scaled(self, k):
        return Vec(self.x * k, self.y * k, self.z * k)

    def dot(self, o):
        return self.x * o.x + self.y * o.y + self.z * o.z

    def length(self):
        return math.sqrt(self.dot(self))

    def unit(self):
        n = self.length()
        return Vec(self.x / n, self.y / n, self.z / n)

    def times(self, o):
        return Vec(self.x * o.x, self.y * o.y, self.z * o.z)


class Ray:
    __slots__ = ("origin", "direction")

    def __init__(self, origin, direction):
        self.origin = origin
        self.direction = direction.unit()

    def at(self, t):
        return self.origin + self.direction.scaled(t)


class Material:
    def __init__(self, colour, diffuse, specular, shininess, mirror):
        self.colour = colour
        self.diffuse = diffuse
        self.specular = specular
        self.shininess = shininess
        self.mirror = mirror

    def colour_at(self, point):
        return self.colour


class Checkered(Material):
    def colour_at(self, point):
        cell = int(math.floor(point.x * 0.5)) + int(math.floor(point.z * 0.5))
        return self.colour if cell % 2 == 0 else Vec(0.15, 0.15, 0.15)


class Sphere:
    def __init__(self, centre, radius, material):
        self.centre = centre
        self.radius = radius
        self.material = material

    def hit(self, ray):
        oc = ray.origin - self.centre
        b = oc.dot(ray.direction)
        c = oc.dot(oc) - self.radius * self.radius
        disc = b * b - c
        if disc < 0:
            return None
        root = math.sqrt(disc)
        t = -b - root
        if t > 1e-6:
            return t
        t = -b + root
        return t if t > 1e-6 else None

    def normal(self, point):
        return (point - self.centre).unit()


class Floor:
    def __init__(self, height, material):
        self.height = height
        self.material = material

    def hit(self, ray):
        dy = ray.direction.y
        if abs(dy) < 1e-9:
            return None
        t = (self.height - ray.origin.y) / dy
        return t if t > 1e-6 else None

    def normal(self, point):
        return Vec(0.0, 1.0, 0.0)


class Scene:
    def __init__(self):
        self.shapes = [
            Floor(-1.0, Checkered(Vec(0.9, 0.9, 0.9), 0.8, 0.1, 8, 0.2)),
            Sphere(Vec(0.0, 0.0, 6.0), 1.0, Material(Vec(0.9, 0.2, 0.2), 0.7, 0.5, 40, 0.3)),
            Sphere(Vec(-2.2, 0.3, 7.5), 1.3, Material(Vec(0.2, 0.8, 0.3), 0.8, 0.3, 20, 0.0)),
            Sphere(Vec(2.0, -0.4, 5.0), 0.6, Material(Vec(0.3, 0.3, 0.9), 0.6, 0.8, 80, 0.5)),
        ]
        self.lights = [(Vec(-5.0, 6.0, 0.0), Vec(0.8, 0.8, 0.8)),
                   (Vec(4.0, 3.0, 2.0), Vec(0.4, 0.35, 0.3))]
        self.ambient = Vec(0.08, 0.08, 0.1)
        self.sky = Vec(0.5, 0.7, 1.0)

    def nearest(self, ray):
        best_t, best = None, None
        for shape in self.shapes:
            t = shape.hit(ray)
            if t is not None and (best_t is None or t < best_t):
                best_t, best = t, shape
        return best_t, best

    def shadowed(self, point, light_pos):
        to_light = light_pos - point
        dist = to_light.length()
        ray = Ray(point, to_light)
        for shape in self.shapes:
            t = shape.hit(ray)
            if t is not None and t < dist:
                return True
        return False

    def trace(self, ray, depth):
        t, shape = self.nearest(ray)
        if shape is None:
            return self.sky.scaled(0.5 + 0.5 * ray.direction.y)
        point = ray.at(t)
        normal = shape.normal(point)
        mat = shape.material
        base = mat.colour_at(point)
        colour = self.ambient.times(base)
        for light_pos, light_colour in self.lights:
            if self.shadowed(point, light_pos):
                continue
            to_light = (light_pos - point).unit()
            lambert = normal.dot(to_light)
            if lambert <= 0:
                continue
            colour = colour + base.times(light_colour).scaled(mat.diffuse * lambert)
            half = (to_light - ray.direction).unit()
            spec = max(0.0, normal.dot(half)) ** mat.shininess
            colour = colour + light_colour.scaled(mat.specular * spec)
        if mat.mirror > 0 and depth > 0:
            d = ray.direction
            reflected = d - normal.scaled(2 * d.dot(normal))
            bounce = self.trace(Ray(point, reflected), depth - 1)
            colour = colour.scaled(1 - mat.mirror) + bounce.scaled(mat.mirror)
        return colour


def render(width, height):
    scene = Scene()
    eye = Vec(0.0, 0.5, -1.0)
    total = 0
    for row in range(height):
        y = 1.0 - 2.0 * (row + 0.5) / height
        for col in range(width):
            x = (2.0 * (col + 0.5) / width - 1.0) * width / height
            c = scene.trace(Ray(eye, Vec(x, y, 1.5)), 2)
            total += int(min(c.x, 1.0) * 255) + int(min(c.y, 1.0) * 255) + int(min(c.z, 1.0) * 255)
    return total


if __name__ == "__main__":
    side = max(8, int(260 * benchclock.scale() ** 0.5))
    benchclock.run(render, side, side)
