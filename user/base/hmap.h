/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An open-addressing hash map from fixed-size keys (compared bytewise) to
 * pointers.  Written here because the profiler needs many small maps keyed by
 * plain structs and no Debian C library offers a compact one without GLib.
 */
#ifndef HMAP_H
#define HMAP_H

#include <stddef.h>
#include <stdint.h>

struct hmap;

struct hmap *hmap__new(size_t key_size);
void hmap__free(struct hmap *h);
/* Returns the value stored under key, or NULL. */
void *hmap__get(const struct hmap *h, const void *key);
/* Stores val under key, replacing any old value; 0 or -ENOMEM. */
int hmap__put(struct hmap *h, const void *key, void *val);
/* Removes key; returns its value or NULL. */
void *hmap__del(struct hmap *h, const void *key);
size_t hmap__count(const struct hmap *h);
/* Iteration: *it starts at 0; returns 0 at the end. */
int hmap__next(const struct hmap *h, size_t *it, const void **key, void **val);

uint64_t hash_bytes(const void *p, size_t n);

#endif /* HMAP_H */
