/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * user/base/hmap.c: the open-addressing map behind every profile table.  Many keys
 * (growth), deletions (tombstones) followed by reinsertion, churn that would
 * loop forever if tombstones filled the table, odd key sizes, iteration.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "testlib.h"
#include "base/hmap.h"

#define MANY 100000

/* Values are never NULL in these tests: the key's number + 1. */
static void *val_of(uint64_t k)
{
	return (void *)(uintptr_t)(k + 1);
}

static void test_free_null(void)
{
	hmap__free(NULL);
	CHECK(1);
}

static void test_empty(void)
{
	struct hmap *h = hmap__new(sizeof(uint64_t));
	uint64_t k = 42;
	size_t it = 0;

	CHECK(h != NULL);
	if (!h)
		return;
	CHECK_EQ_INT(hmap__count(h), 0);
	CHECK(hmap__get(h, &k) == NULL);
	CHECK(hmap__del(h, &k) == NULL);
	CHECK_EQ_INT(hmap__next(h, &it, NULL, NULL), 0);
	hmap__free(h);
}

static void test_put_get_many(void)
{
	struct hmap *h = hmap__new(sizeof(uint64_t));
	uint64_t k;
	int bad = 0;

	for (k = 0; k < MANY; k++) {
		/* Spread keys: consecutive ones and ones that differ only high up. */
		uint64_t key = k * 0x100000000ULL + k;

		CHECK_EQ_INT(hmap__put(h, &key, val_of(k)), 0);
	}
	CHECK_EQ_INT(hmap__count(h), MANY);
	for (k = 0; k < MANY; k++) {
		uint64_t key = k * 0x100000000ULL + k;

		bad += hmap__get(h, &key) != val_of(k);
	}
	CHECK_EQ_INT(bad, 0);
	k = (uint64_t)MANY * 0x100000001ULL;
	CHECK(hmap__get(h, &k) == NULL);
	hmap__free(h);
}

static void test_replace_keeps_count(void)
{
	struct hmap *h = hmap__new(sizeof(uint64_t));
	uint64_t k = 7;

	CHECK_EQ_INT(hmap__put(h, &k, val_of(1)), 0);
	CHECK_EQ_INT(hmap__put(h, &k, val_of(2)), 0);
	CHECK_EQ_INT(hmap__count(h), 1);
	CHECK(hmap__get(h, &k) == val_of(2));
	CHECK(hmap__del(h, &k) == val_of(2));
	CHECK_EQ_INT(hmap__count(h), 0);
	CHECK(hmap__del(h, &k) == NULL);
	hmap__free(h);
}

static void test_delete_then_reinsert(void)
{
	struct hmap *h = hmap__new(sizeof(uint64_t));
	uint64_t k;
	int bad = 0;

	for (k = 0; k < MANY; k++)
		hmap__put(h, &k, val_of(k));
	/* Every even key goes: tombstones all over the table. */
	for (k = 0; k < MANY; k += 2)
		bad += hmap__del(h, &k) != val_of(k);
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(hmap__count(h), MANY / 2);
	for (k = 0; k < MANY; k++)
		bad += hmap__get(h, &k) != (k % 2 ? val_of(k) : NULL);
	CHECK_EQ_INT(bad, 0);
	/* Back in, with new values; then everything must be found once. */
	for (k = 0; k < MANY; k += 2)
		CHECK_EQ_INT(hmap__put(h, &k, val_of(k + 1000000)), 0);
	CHECK_EQ_INT(hmap__count(h), MANY);
	for (k = 0; k < MANY; k++)
		bad += hmap__get(h, &k) != (k % 2 ? val_of(k) : val_of(k + 1000000));
	CHECK_EQ_INT(bad, 0);
	hmap__free(h);
}

/* A small live set with endless turnover: each key is used once, so every
 * deletion leaves a tombstone.  A table that never reclaims them would end
 * with no empty slot and a lookup that never returns. */
static void test_churn_reclaims_tombstones(void)
{
	struct hmap *h = hmap__new(sizeof(uint64_t));
	uint64_t k, missing = UINT64_MAX;
	int bad = 0;

	for (k = 0; k < 1000000; k++) {
		hmap__put(h, &k, val_of(k));
		if (k >= 8) {
			uint64_t old = k - 8;

			bad += hmap__del(h, &old) != val_of(old);
		}
	}
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(hmap__count(h), 8);
	CHECK(hmap__get(h, &missing) == NULL);
	for (k = 1000000 - 8; k < 1000000; k++)
		CHECK(hmap__get(h, &k) == val_of(k));
	hmap__free(h);
}

static void test_iterate_visits_each_live_key_once(void)
{
	struct hmap *h = hmap__new(sizeof(uint64_t));
	unsigned char *seen = calloc(MANY, 1);
	const void *key;
	void *val;
	size_t it = 0, n = 0;
	uint64_t k;
	int bad = 0;

	for (k = 0; k < MANY; k++)
		hmap__put(h, &k, val_of(k));
	for (k = 0; k < MANY; k += 3)
		hmap__del(h, &k);
	while (hmap__next(h, &it, &key, &val)) {
		uint64_t kk;

		memcpy(&kk, key, sizeof(kk));
		if (kk >= MANY || kk % 3 == 0 || seen[kk] || val != val_of(kk))
			bad++;
		else
			seen[kk] = 1;
		n++;
	}
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(n, hmap__count(h));
	CHECK_EQ_INT(n, MANY - (MANY + 2) / 3);
	/* Once at the end, it stays at the end. */
	CHECK_EQ_INT(hmap__next(h, &it, &key, &val), 0);
	free(seen);
	hmap__free(h);
}

/* Deleting the entry just returned must not disturb the iteration. */
static void test_delete_while_iterating(void)
{
	struct hmap *h = hmap__new(sizeof(uint64_t));
	const void *key;
	size_t it = 0, n = 0;
	uint64_t k;

	for (k = 0; k < 5000; k++)
		hmap__put(h, &k, val_of(k));
	while (hmap__next(h, &it, &key, NULL)) {
		uint64_t kk;

		memcpy(&kk, key, sizeof(kk));
		CHECK(hmap__del(h, &kk) == val_of(kk));
		n++;
	}
	CHECK_EQ_INT(n, 5000);
	CHECK_EQ_INT(hmap__count(h), 0);
	hmap__free(h);
}

/* Keys of odd sizes, compared bytewise: a 3-byte key and a 24-byte struct. */
struct key24 {
	const char *a;
	const char *b;
	int x, y;
};

static void test_odd_key_sizes(void)
{
	struct hmap *h3 = hmap__new(3), *h24 = hmap__new(sizeof(struct key24));
	static const char s1[] = "one", s2[] = "two";
	unsigned char k3[3];
	int i, bad = 0;

	for (i = 0; i < 20000; i++) {
		k3[0] = i & 0xff, k3[1] = (i >> 8) & 0xff, k3[2] = (i >> 16) & 0xff;
		hmap__put(h3, k3, val_of(i));
	}
	CHECK_EQ_INT(hmap__count(h3), 20000);
	for (i = 0; i < 20000; i++) {
		k3[0] = i & 0xff, k3[1] = (i >> 8) & 0xff, k3[2] = (i >> 16) & 0xff;
		bad += hmap__get(h3, k3) != val_of(i);
	}
	CHECK_EQ_INT(bad, 0);
	for (i = 0; i < 1000; i++) {
		struct key24 k = { i % 2 ? s1 : s2, s2, i, -i };

		hmap__put(h24, &k, val_of(i));
	}
	CHECK_EQ_INT(hmap__count(h24), 1000);
	{
		struct key24 k = { s1, s2, 1, -1 }, other = { s2, s2, 1, -1 };

		CHECK(hmap__get(h24, &k) == val_of(1));
		CHECK(hmap__get(h24, &other) == NULL);
	}
	hmap__free(h3);
	hmap__free(h24);
}

static void test_hash_bytes(void)
{
	uint64_t a = 1, b = 2;

	CHECK(hash_bytes("abc", 3) == hash_bytes("abc", 3));
	CHECK(hash_bytes("abc", 3) != hash_bytes("abd", 3));
	CHECK(hash_bytes("abc", 3) != hash_bytes("abc", 2));
	CHECK(hash_bytes(&a, sizeof(a)) != hash_bytes(&b, sizeof(b)));
	/* Nearby keys differ in their low bits, which pick the slot. */
	CHECK((hash_bytes(&a, sizeof(a)) & 0xf) != (hash_bytes(&b, sizeof(b)) & 0xf) ||
	      (hash_bytes(&a, sizeof(a)) & 0xf0) != (hash_bytes(&b, sizeof(b)) & 0xf0));
}

int main(void)
{
	RUN_TEST(test_free_null);
	RUN_TEST(test_empty);
	RUN_TEST(test_put_get_many);
	RUN_TEST(test_replace_keeps_count);
	RUN_TEST(test_delete_then_reinsert);
	RUN_TEST(test_churn_reclaims_tombstones);
	RUN_TEST(test_iterate_visits_each_live_key_once);
	RUN_TEST(test_delete_while_iterating);
	RUN_TEST(test_odd_key_sizes);
	RUN_TEST(test_hash_bytes);
	return test_summary("hmap");
}
