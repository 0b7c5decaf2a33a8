// SPDX-License-Identifier: BSD-2-Clause
#include <stdlib.h>
#include <string.h>

#include "base/hmap.h"
#include "base/strtab.h"

struct str_node {
	struct str_node *next; /* same hash */
	char s[];
};

struct strtab {
	struct hmap *by_hash;
};

struct strtab *strtab__new(void)
{
	struct strtab *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->by_hash = hmap__new(sizeof(uint64_t));
	if (!t->by_hash) {
		free(t);
		return NULL;
	}
	return t;
}

void strtab__free(struct strtab *t)
{
	size_t it = 0;
	void *v;

	if (!t)
		return;
	while (hmap__next(t->by_hash, &it, NULL, &v)) {
		struct str_node *n = v;

		while (n) {
			struct str_node *next = n->next;

			free(n);
			n = next;
		}
	}
	hmap__free(t->by_hash);
	free(t);
}

const char *strtab__intern(struct strtab *t, const char *s)
{
	size_t len = strlen(s);
	uint64_t h = hash_bytes(s, len);
	struct str_node *head = hmap__get(t->by_hash, &h), *n;

	for (n = head; n; n = n->next) {
		if (!strcmp(n->s, s))
			return n->s;
	}
	n = malloc(sizeof(*n) + len + 1);
	if (!n)
		return NULL;
	memcpy(n->s, s, len + 1);
	n->next = head;
	if (hmap__put(t->by_hash, &h, n)) {
		free(n);
		return NULL;
	}
	return n->s;
}
