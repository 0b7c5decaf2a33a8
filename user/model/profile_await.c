// SPDX-License-Identifier: BSD-2-Clause
/* Await time in the profile model (profile.h: profile__add_await). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hmap.h"
#include "model/profile.h"
#include "model/profile_int.h"
#include "base/strtab.h"

static void await_credit(struct line_stats *st, const struct await_in *a)
{
	struct await_stats *aw = st->aw;
	int i;

	if (!aw) {
		aw = st->aw = calloc(1, sizeof(*aw));
		if (!aw)
			return;
	}
	aw->ns += a->ns;
	if (aw->last_snapshot != a->snapshot) {
		aw->last_snapshot = a->snapshot;
		aw->conc_sum += a->concurrency;
		aw->conc_n++;
		if (a->concurrency > aw->conc_peak)
			aw->conc_peak = a->concurrency;
	}
	if (!a->task_name)
		return;
	for (i = 0; i < aw->nnames; i++) {
		if (aw->names[i] == a->task_name)
			return;
	}
	if (aw->nnames < AWAIT_NAMES_MAX)
		aw->names[aw->nnames++] = a->task_name;
	else
		aw->names_dropped++;
}

/* An await stack's identity: its frames down to the waiting one, and the
 * task's name (as Scalene shows it: "[await] func (Task-3)"). */
struct await_key {
	uint64_t hash;
	const char *task_name;
};

static void await_stack_add(struct profile *p, const struct await_in *a, int at)
{
	struct await_key k = { hash_bytes(&a->frames[at], (a->nframes - at) * sizeof(*a->frames)),
			       a->task_name };
	struct await_stack *st, *grown;
	struct frame_ref *fr;
	intptr_t idx;
	int i, n = a->nframes - at;

	if (!p->await_by_key && !(p->await_by_key = hmap__new(sizeof(k))))
		return;
	idx = (intptr_t)hmap__get(p->await_by_key, &k);
	if (idx) {
		st = &p->await_stacks[idx - 1];
		st->count++;
		st->ns += a->ns;
		return;
	}
	if (p->nawait_stacks >= MAX_AWAIT_STACKS) {
		p->await_stacks_dropped++;
		return;
	}
	grown = profile_grow(p->await_stacks, p->nawait_stacks, sizeof(*grown));
	fr = malloc(n * sizeof(*fr));
	if (!grown || !fr) {
		free(fr);
		return;
	}
	p->await_stacks = grown;
	for (i = 0; i < n; i++)
		fr[i] = a->frames[a->nframes - 1 - i];
	st = &p->await_stacks[p->nawait_stacks];
	*st = (struct await_stack){
		.frames = fr, .nframes = n, .task_name = a->task_name, .count = 1, .ns = a->ns
	};
	if (hmap__put(p->await_by_key, &k, (void *)(intptr_t)(p->nawait_stacks + 1))) {
		free(fr);
		return;
	}
	p->nawait_stacks++;
}

static bool same_frame(const struct frame_ref *x, const struct frame_ref *y)
{
	return x->filename == y->filename && x->qualname == y->qualname && x->line == y->line;
}

/* Await time no profiled file takes, by where its task waited. */
static void await_unattributed(struct profile *p, const struct await_in *a)
{
	const struct frame_ref *task, *waits;
	int i;

	p->await_unattributed_ns += a->ns;
	if (a->nframes < 1)
		return;
	task = &a->frames[a->nframes - 1];
	waits = &a->frames[0];
	for (i = 0; i < p->nawait_outside; i++) {
		struct await_outside *o = &p->await_outside[i];

		if (same_frame(&o->task, task) && same_frame(&o->waits, waits)) {
			o->ns += a->ns;
			return;
		}
	}
	if (p->nawait_outside == MAX_AWAIT_OUTSIDE) {
		p->await_outside_other_ns += a->ns;
		return;
	}
	p->await_outside[p->nawait_outside++] =
		(struct await_outside){ .task = *task, .waits = *waits, .ns = a->ns };
}

void profile__add_await(struct profile *p, const struct await_in *a)
{
	struct file_stats *f;
	struct line_stats *st;
	struct func_stats *fs;
	int at = profile_attributed_frame(p, a->frames, a->nframes);

	if (at < 0) {
		await_unattributed(p, a);
		return;
	}
	f = profile_file_get(p, a->frames[at].filename);
	st = f ? profile_line_get(f, a->frames[at].line > 0 ? a->frames[at].line
							    : a->frames[at].firstlineno)
	       : NULL;
	if (!st) {
		p->await_unattributed_ns += a->ns;
		return;
	}
	p->await_ns += a->ns;
	await_credit(st, a);
	fs = profile_func_get(p, f, a->frames, a->nframes, at);
	if (fs)
		await_credit(&fs->st, a);
	await_stack_add(p, a, at);
}

double profile__await_ns(const struct profile *p)
{
	return p->await_ns;
}

double profile__await_unattributed_ns(const struct profile *p)
{
	return p->await_unattributed_ns;
}

const struct await_outside *profile__await_outside(const struct profile *p, int *n,
						   double *other_ns)
{
	*n = p->nawait_outside;
	*other_ns = p->await_outside_other_ns;
	return p->await_outside;
}

int profile__nawait_stacks(const struct profile *p)
{
	return p->nawait_stacks;
}

const struct await_stack *profile__await_stack(const struct profile *p, int i)
{
	return i >= 0 && i < p->nawait_stacks ? &p->await_stacks[i] : NULL;
}

uint64_t profile__await_stacks_dropped(const struct profile *p)
{
	return p->await_stacks_dropped;
}

/* Await time restarts (profile__restart): the stacks keep their places. */
void profile_await_restart(struct profile *p)
{
	int i;

	p->await_ns = p->await_unattributed_ns = 0;
	memset(p->await_outside, 0, sizeof(p->await_outside));
	p->nawait_outside = 0;
	p->await_outside_other_ns = 0;
	for (i = 0; i < p->nawait_stacks; i++) {
		p->await_stacks[i].count = 0;
		p->await_stacks[i].ns = 0;
	}
	p->await_stacks_dropped = 0;
}
