// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/hmap.h"

struct hmap {
	size_t key_size;
	size_t cap; /* power of two */
	size_t count;
	size_t used; /* live + tombstones */
	uint8_t *keys;
	void **vals;
	uint8_t *state; /* 0 empty, 1 live, 2 deleted */
};

/* FNV-1a, then a final mix so that nearby keys spread over the table. */
uint64_t hash_bytes(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

static int hmap_alloc(struct hmap *h, size_t cap)
{
	h->keys = calloc(cap, h->key_size);
	h->vals = calloc(cap, sizeof(void *));
	h->state = calloc(cap, 1);
	if (!h->keys || !h->vals || !h->state) {
		free(h->keys);
		free(h->vals);
		free(h->state);
		return -ENOMEM;
	}
	h->cap = cap;
	h->count = 0;
	h->used = 0;
	return 0;
}

struct hmap *hmap__new(size_t key_size)
{
	struct hmap *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->key_size = key_size;
	if (hmap_alloc(h, 16)) {
		free(h);
		errno = ENOMEM;
		return NULL;
	}
	return h;
}

void hmap__free(struct hmap *h)
{
	if (!h)
		return;
	free(h->keys);
	free(h->vals);
	free(h->state);
	free(h);
}

static size_t hmap_find(const struct hmap *h, const void *key, int *found)
{
	size_t mask = h->cap - 1, i = hash_bytes(key, h->key_size) & mask;
	size_t tomb = (size_t)-1;

	for (;;) {
		if (h->state[i] == 0) {
			*found = 0;
			return tomb != (size_t)-1 ? tomb : i;
		}
		if (h->state[i] == 1 && !memcmp(h->keys + i * h->key_size, key, h->key_size)) {
			*found = 1;
			return i;
		}
		if (h->state[i] == 2 && tomb == (size_t)-1)
			tomb = i;
		i = (i + 1) & mask;
	}
}

void *hmap__get(const struct hmap *h, const void *key)
{
	int found;
	size_t i = hmap_find(h, key, &found);

	return found ? h->vals[i] : NULL;
}

static int hmap_grow(struct hmap *h)
{
	struct hmap old = *h;
	size_t i;
	int err;

	err = hmap_alloc(h, h->count * 2 + 16 > old.cap ? old.cap * 2 : old.cap);
	if (err) {
		*h = old;
		return err;
	}
	for (i = 0; i < old.cap; i++) {
		if (old.state[i] == 1)
			hmap__put(h, old.keys + i * old.key_size, old.vals[i]);
	}
	free(old.keys);
	free(old.vals);
	free(old.state);
	return 0;
}

int hmap__put(struct hmap *h, const void *key, void *val)
{
	size_t i;
	int found, err;

	if ((h->used + 1) * 4 >= h->cap * 3) {
		err = hmap_grow(h);
		if (err)
			return err;
	}
	i = hmap_find(h, key, &found);
	if (!found) {
		if (h->state[i] == 0)
			h->used++;
		h->state[i] = 1;
		memcpy(h->keys + i * h->key_size, key, h->key_size);
		h->count++;
	}
	h->vals[i] = val;
	return 0;
}

void *hmap__del(struct hmap *h, const void *key)
{
	int found;
	size_t i = hmap_find(h, key, &found);

	if (!found)
		return NULL;
	h->state[i] = 2;
	h->count--;
	return h->vals[i];
}

size_t hmap__count(const struct hmap *h)
{
	return h->count;
}

int hmap__next(const struct hmap *h, size_t *it, const void **key, void **val)
{
	while (*it < h->cap) {
		size_t i = (*it)++;

		if (h->state[i] == 1) {
			if (key)
				*key = h->keys + i * h->key_size;
			if (val)
				*val = h->vals[i];
			return 1;
		}
	}
	return 0;
}
