// SPDX-License-Identifier: BSD-2-Clause
/* Kernel symbols from /proc/kallsyms (ksyms.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strtab.h"
#include "symbolize/ksyms.h"

struct ksym {
	uint64_t addr;
	const char *name, *module; /* interned */
};

struct ksyms {
	struct ksym *syms;
	size_t n;
	struct strtab *names;
};

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

struct ksyms *ksyms__load(const char *path)
{
	struct ksyms *k = calloc(1, sizeof(*k));
	char line[512], name[256], module[128];
	size_t cap = 0;
	uint64_t a;
	char type;
	FILE *f;
	int err = 0;

	if (!k)
		return NULL;
	k->names = strtab__new();
	f = fopen(path ? path : "/proc/kallsyms", "re");
	if (!k->names || !f) {
		err = k->names ? errno : ENOMEM;
		goto out;
	}
	while (fgets(line, sizeof(line), f)) {
		int got = sscanf(line, "%" SCNx64 " %c %255s [%127[^]]]", &a, &type, name, module);
		struct ksym *s;

		/* Functions only (text, and weak text); zero: hidden from us. */
		if (got < 3 || !a || (type != 't' && type != 'T' && type != 'w' && type != 'W'))
			continue;
		if (k->n == cap) {
			size_t c = cap ? cap * 2 : 65536;
			struct ksym *grown = reallocarray(k->syms, c, sizeof(*grown));

			if (!grown) {
				err = ENOMEM;
				goto out;
			}
			k->syms = grown;
			cap = c;
		}
		s = &k->syms[k->n];
		s->addr = a;
		s->name = strtab__intern(k->names, name);
		s->module = strtab__intern(k->names, got == 4 ? module : "");
		if (!s->name || !s->module) {
			err = ENOMEM;
			goto out;
		}
		k->n++;
	}
	qsort(k->syms, k->n, sizeof(*k->syms), ksym_cmp);
out:
	if (f)
		fclose(f);
	if (err) {
		ksyms__free(k);
		errno = err;
		return NULL;
	}
	return k;
}

void ksyms__free(struct ksyms *k)
{
	if (!k)
		return;
	free(k->syms);
	strtab__free(k->names);
	free(k);
}

size_t ksyms__count(const struct ksyms *k)
{
	return k->n;
}

const char *ksyms__resolve(const struct ksyms *k, uint64_t addr, const char **module,
			   uint64_t *offset)
{
	size_t lo = 0, hi = k->n;

	/* The last symbol at or below addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	*module = k->syms[lo - 1].module;
	*offset = addr - k->syms[lo - 1].addr;
	return k->syms[lo - 1].name;
}
