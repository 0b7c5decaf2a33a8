// SPDX-License-Identifier: BSD-2-Clause
/*
 * The reader of another process's Python objects (user/symbolize/pyobj.c), pointed at
 * this process's own memory: objects laid out by hand from each version's
 * table, and an arena of random words where every pointer leads back into
 * the arena (a torn or hostile heap), which must give errors, never a
 * crash, a hang or more reads than the budget allows.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/types.h>

#include "cpython.h"
#include "symbolize/pyobj.h"
#include "target/python.h"
#include "testlib.h"

static struct py_proc proc(const struct py_offsets *off)
{
	struct py_proc pp;

	memset(&pp, 0, sizeof(pp));
	pp.pid = getpid();
	pp.off = off;
	pp.minor = off->minor;
	return pp;
}

/* A type object named name, in buf (zeroed, big enough for any table's
 * fields). */
static void make_type(uint8_t *buf, const struct py_offsets *o, const char *name)
{
	uint64_t p = (uint64_t)(uintptr_t)name;

	memset(buf, 0, 1024);
	memcpy(buf + o->type_name, &p, 8);
}

static void put(uint8_t *obj, size_t off, uint64_t v)
{
	memcpy(obj + off, &v, 8);
}

static _Alignas(16) uint8_t set_type[1024], long_type[1024], wr_type[1024], none_type[1024];

/* A set of three members, a small int, a weak reference: read back on
 * every version's layout. */
static void test_set_long_weakref(void)
{
	const struct py_offsets *const *t;

	for (t = py_offsets_table; *t; t++) {
		const struct py_offsets *o = *t;
		struct py_proc pp = proc(o);
		static _Alignas(16) uint8_t set[256], table[8 * 32], num[64], ref[64], none[32];
		uint64_t members[8], target = 0;
		struct pyobj po;
		size_t n = 0;
		int64_t v = 0;

		CHECK_EQ_INT(pyobj__init(&po, &pp), 0);
		make_type(set_type, o, "set");
		make_type(long_type, o, "int");
		make_type(wr_type, o, o->minor == 9 ? "weakref" : "weakref.ReferenceType");
		make_type(none_type, o, "NoneType");
		memset(set, 0, sizeof(set));
		memset(table, 0, sizeof(table));
		put(set, o->object_type, (uintptr_t)set_type);
		put(set, o->set_mask, 7);
		put(set, o->set_table, (uintptr_t)table);
		put(table, 1 * o->setentry_size + o->setentry_key, (uintptr_t)num);
		put(table, 4 * o->setentry_size + o->setentry_key, (uintptr_t)ref);
		put(table, 6 * o->setentry_size + o->setentry_key, (uintptr_t)none);
		CHECK_EQ_INT(pyobj__set_members(&po, (uintptr_t)set, members, 8, &n), 0);
		CHECK_EQ_INT(n, 3);
		CHECK(n == 3 && members[0] == (uintptr_t)num && members[1] == (uintptr_t)ref);
		/* Too small a buffer: the first ones and -E2BIG. */
		CHECK_EQ_INT(pyobj__set_members(&po, (uintptr_t)set, members, 2, &n), -E2BIG);
		CHECK_EQ_INT(n, 2);

		memset(num, 0, sizeof(num));
		put(num, o->object_type, (uintptr_t)long_type);
		/* 12345 in one digit: ob_size 1, or (3.12+) lv_tag 1 << 3. */
		put(num, o->long_size, o->minor >= 12 ? 1 << 3 : 1);
		memcpy(num + o->long_digits, &(uint32_t){ 12345 }, 4);
		CHECK_EQ_INT(pyobj__long(&po, (uintptr_t)num, &v), 0);
		CHECK_EQ_INT(v, 12345);
		/* Negative: ob_size -1, or a sign of 2 in the tag. */
		put(num, o->long_size, o->minor >= 12 ? (1 << 3) | 2 : (uint64_t)-1);
		CHECK_EQ_INT(pyobj__long(&po, (uintptr_t)num, &v), 0);
		CHECK_EQ_INT(v, -12345);
		CHECK_EQ_INT(pyobj__long(&po, (uintptr_t)set, &v), -EINVAL);

		memset(ref, 0, sizeof(ref));
		memset(none, 0, sizeof(none));
		put(none, o->object_type, (uintptr_t)none_type);
		put(ref, o->object_type, (uintptr_t)wr_type);
		put(ref, o->weakref_object, (uintptr_t)num);
		CHECK_EQ_INT(pyobj__weakref_target(&po, (uintptr_t)ref, &target), 0);
		CHECK(target == (uintptr_t)num);
		/* A dead reference points at None. */
		put(ref, o->weakref_object, (uintptr_t)none);
		CHECK_EQ_INT(pyobj__weakref_target(&po, (uintptr_t)ref, &target), -ENOENT);
		pyobj__fini(&po);
	}
}

#define ARENA_WORDS 8192

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Random words, a third of them pointers into the arena (some at type-like
 * places), small numbers, and noise: every reader on every address of it
 * returns, within its budget. */
static void test_hostile_arena(void)
{
	static _Alignas(16) uint64_t arena[ARENA_WORDS + 128];
	static const char *const names[] = { "dict", "set", "int", "weakref", "str" };
	const struct py_offsets *const *t;
	int round;

	for (t = py_offsets_table; *t; t++) {
		struct py_proc pp = proc(*t);
		struct pyobj po;

		CHECK_EQ_INT(pyobj__init(&po, &pp), 0);
		po.keys = (struct pyobj_dictkeys){ true, 8, 32, 40, 24, 8, 16 };
		for (round = 0; round < 200; round++) {
			uint64_t addr, val, members[64];
			size_t i, n;
			int64_t v;
			char buf[64];
			uint64_t budget = 256;

			for (i = 0; i < ARENA_WORDS; i++) {
				uint64_t r = rnd();

				switch (r % 4) {
				case 0:
				case 1:
					arena[i] = (uintptr_t)&arena[(r >> 8) % ARENA_WORDS];
					break;
				case 2:
					arena[i] = (r >> 8) % 64;
					break;
				default:
					arena[i] = r;
				}
			}
			/* Now and then a word names a real type (its name is a
			 * C string the arena points at). */
			for (i = 0; i < 16; i++)
				arena[rnd() % ARENA_WORDS] = (uintptr_t)names[rnd() % 5];
			addr = (uintptr_t)&arena[rnd() % ARENA_WORDS];
			po.budget = budget;
			po.reads = 0;
			pyobj__dict_get(&po, addr, "data", &val);
			pyobj__attr(&po, addr, "_coro", &val);
			pyobj__set_members(&po, addr, members, 64, &n);
			pyobj__weakref_target(&po, addr, &val);
			pyobj__long(&po, addr, &v);
			pyobj__str_eq(&po, addr, "tasks");
			pyobj__str(&po, addr, buf, sizeof(buf));
			CHECK(po.reads <= budget);
			/* The type cache holds what was read; start it over
			 * now and then, as a long run does when it fills. */
			if (round % 50 == 49) {
				pyobj__fini(&po);
				CHECK_EQ_INT(pyobj__init(&po, &pp), 0);
				po.keys = (struct pyobj_dictkeys){ true, 8, 32, 40, 24, 8, 16 };
			}
		}
		pyobj__fini(&po);
	}
}

int main(void)
{
	RUN_TEST(test_set_long_weakref);
	RUN_TEST(test_hostile_arena);
	return test_summary("pyobj");
}
