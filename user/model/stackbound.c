// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/hmap.h"
#include "model/profile.h"
#include "model/stackbound.h"

struct ranked {
	const struct stack_stats *st;
	double w;
	int index;
};

static double weight(const struct stack_stats *st, enum stack_weight by)
{
	return by == STACK_BY_BYTES ? st->malloc_bytes
	       : by == STACK_BY_GPU ? st->gpu_ns
				    : (double)st->count;
}

static double entry_weight(const struct stack_entry *e, enum stack_weight by)
{
	return by == STACK_BY_BYTES ? e->malloc_bytes
	       : by == STACK_BY_GPU ? e->gpu_ns
				    : (double)e->count;
}

static int cmp_ranked(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->w != y->w)
		return x->w < y->w ? 1 : -1;
	return (x->index > y->index) - (x->index < y->index);
}

struct sort_ctx {
	const struct stack_entry *e;
	enum stack_weight by;
};

static int cmp_perm(const void *a, const void *b, void *ctx)
{
	const struct sort_ctx *c = ctx;
	int i = *(const int *)a, j = *(const int *)b;
	double wx = entry_weight(&c->e[i], c->by), wy = entry_weight(&c->e[j], c->by);

	if (wx != wy)
		return wx < wy ? 1 : -1;
	return (i > j) - (i < j);
}

/* Frames an entry takes: its own, the marker of a cut, the truncation
 * marker and the native leaf. */
static int entry_frames(const struct stack_entry *e)
{
	return e->depth + e->cut + e->rep->truncated + e->rep->overflow +
	       (!e->cut && e->rep->native_sym);
}

/* The entry of st at depth d (d < 0: whole). */
static void entry_at(struct stack_entry *e, const struct stack_stats *st, int d)
{
	memset(e, 0, sizeof(*e));
	e->rep = st;
	e->depth = d < 0 || st->nframes <= d ? st->nframes : d;
	e->cut = d >= 0 && st->nframes > d;
}

static bool entry_same(const struct stack_entry *a, const struct stack_entry *b)
{
	if (a->depth != b->depth || a->cut != b->cut || a->rep->truncated != b->rep->truncated ||
	    a->rep->overflow != b->rep->overflow)
		return false;
	if (!a->cut && (a->rep->native_sym != b->rep->native_sym ||
			a->rep->native_module != b->rep->native_module))
		return false;
	return !memcmp(a->rep->frames, b->rep->frames, a->depth * sizeof(*a->rep->frames));
}

static uint64_t entry_hash(const struct stack_entry *e)
{
	uint64_t h = hash_bytes(e->rep->frames, e->depth * sizeof(*e->rep->frames));

	h ^= (uint64_t)e->depth * 0x9e3779b97f4a7c15ull;
	if (e->cut)
		h = ~h;
	if (e->rep->truncated)
		h ^= 0x5bd1e995ull;
	if (e->rep->overflow)
		h ^= 0xc2b2ae35ull;
	if (!e->cut)
		h ^= hash_bytes(&e->rep->native_sym, sizeof(e->rep->native_sym));
	return h;
}

static void entry_add(struct stack_entry *e, const struct stack_stats *st)
{
	e->members++;
	e->count += st->count;
	e->python_ns += st->python_ns;
	e->native_ns += st->native_ns;
	e->system_ns += st->system_ns;
	e->gil_ns += st->gil_ns;
	e->malloc_bytes += st->malloc_bytes;
	e->gpu_ns += st->gpu_ns;
}

/* Groups r[0 .. n) at depth d.  With out, fills out[] with the entries and
 * returns their number; without, returns the number, or -1 as soon as it
 * passes max entries or max frames. */
static int group(const struct ranked *r, int n, int d, int max, int max_frames, int *slots,
		 size_t nslots, struct stack_entry *out, int *member_entry)
{
	struct stack_entry tmp[1], *g = out;
	struct stack_entry *seen;
	int i, ng = 0, frames = 0;

	/* Without out, the entries are kept in a scratch array of max + 1. */
	seen = out ? out : calloc(max + 1, sizeof(*seen));
	if (!seen)
		return -ENOMEM;
	g = seen;
	for (i = 0; i < (int)nslots; i++)
		slots[i] = -1;
	for (i = 0; i < n; i++) {
		size_t s;

		entry_at(tmp, r[i].st, d);
		for (s = entry_hash(tmp) & (nslots - 1); slots[s] >= 0;
		     s = (s + 1) & (nslots - 1)) {
			if (entry_same(&g[slots[s]], tmp))
				break;
		}
		if (slots[s] < 0) {
			if (!out && (ng == max || frames + entry_frames(tmp) > max_frames)) {
				free(seen);
				return -1;
			}
			g[ng] = *tmp;
			frames += entry_frames(tmp);
			slots[s] = ng++;
		}
		entry_add(&g[slots[s]], r[i].st);
		if (member_entry)
			member_entry[i] = slots[s];
	}
	if (!out)
		free(seen);
	return ng;
}

int stack_bound__compute(const struct stack_stats *const *st, int n, enum stack_weight by,
			 const struct stack_bound_limits *lim, struct stack_bound *out)
{
	struct ranked *r;
	int *slots = NULL;
	size_t nslots = 1;
	int i, k = 0, whole, frames = 0, left, lo, hi, maxd = 0, ng;

	memset(out, 0, sizeof(*out));
	out->merge_depth = -1;
	r = malloc((n ? n : 1) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		double w = weight(st[i], by);

		if (w <= 0)
			continue;
		r[k].st = st[i];
		r[k].w = w;
		r[k].index = i;
		out->total_weight += w;
		k++;
	}
	qsort(r, k, sizeof(*r), cmp_ranked);
	/* Room for every whole stack, the merged entries and a single one. */
	out->e = calloc(k + 1, sizeof(*out->e));
	out->entry_of = malloc(((size_t)(n > 0 ? n : 0) + 1) * sizeof(*out->entry_of));
	if (!out->e || !out->entry_of) {
		free(r);
		stack_bound__free(out);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		out->entry_of[i] = -1;
	for (whole = 0; whole < k && whole < lim->whole; whole++) {
		struct stack_entry *e = &out->e[whole];

		entry_at(e, r[whole].st, -1);
		if (frames + entry_frames(e) > lim->frames / 2)
			break;
		frames += entry_frames(e);
		entry_add(e, r[whole].st);
		out->entry_of[r[whole].index] = whole;
	}
	out->whole = out->n = whole;
	if (whole == k)
		goto done;
	left = lim->frames - frames;
	for (i = whole; i < k; i++) {
		out->merged_stacks++;
		out->merged_weight += r[i].w;
		if (r[i].st->nframes > maxd)
			maxd = r[i].st->nframes;
	}
	while (nslots < 2 * (size_t)(k - whole))
		nslots *= 2;
	slots = malloc(nslots * sizeof(*slots));
	if (!slots) {
		free(r);
		stack_bound__free(out);
		return -ENOMEM;
	}
	/* The entries only get more and bigger with depth: the deepest cut that
	 * fits is found by bisection. */
	lo = -1;
	hi = maxd;
	while (lo < hi) {
		int mid = lo + (hi - lo + 1) / 2;

		ng = group(r + whole, k - whole, mid, lim->merged, left, slots, nslots, NULL, NULL);
		if (ng == -ENOMEM) {
			free(slots);
			free(r);
			stack_bound__free(out);
			return -ENOMEM;
		}
		if (ng >= 0)
			lo = mid;
		else
			hi = mid - 1;
	}
	if (lo >= 0) {
		struct sort_ctx sc = { out->e + whole, by };
		int *member = malloc(((size_t)(k - whole) + 1) * sizeof(*member));
		int *perm = malloc(((size_t)(k - whole) + 1) * sizeof(*perm));
		int *pos = malloc(((size_t)(k - whole) + 1) * sizeof(*pos));
		struct stack_entry *sorted = malloc(((size_t)(k - whole) + 1) * sizeof(*sorted));

		if (!member || !perm || !pos || !sorted) {
			free(member);
			free(perm);
			free(pos);
			free(sorted);
			free(slots);
			free(r);
			stack_bound__free(out);
			return -ENOMEM;
		}
		out->merge_depth = lo;
		ng = group(r + whole, k - whole, lo, 0, 0, slots, nslots, out->e + whole, member);
		/* Heaviest first; where each stack went follows. */
		for (i = 0; i < ng; i++)
			perm[i] = i;
		qsort_r(perm, ng, sizeof(*perm), cmp_perm, &sc);
		for (i = 0; i < ng; i++) {
			sorted[i] = out->e[whole + perm[i]];
			pos[perm[i]] = i;
		}
		memcpy(out->e + whole, sorted, ng * sizeof(*sorted));
		for (i = whole; i < k; i++)
			out->entry_of[r[i].index] = whole + pos[member[i - whole]];
		free(member);
		free(perm);
		free(pos);
		free(sorted);
		out->n += ng;
	} else {
		struct stack_entry *e = &out->e[whole];

		out->merge_depth = 0;
		entry_at(e, r[whole].st, 0);
		e->cut = true;
		e->all = true;
		for (i = whole; i < k; i++) {
			entry_add(e, r[i].st);
			out->entry_of[r[i].index] = whole;
		}
		out->n++;
	}
done:
	free(slots);
	free(r);
	return 0;
}

void stack_bound__free(struct stack_bound *b)
{
	free(b->e);
	free(b->entry_of);
	b->e = NULL;
	b->entry_of = NULL;
	b->n = 0;
}
