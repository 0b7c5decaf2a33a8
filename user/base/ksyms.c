// SPDX-License-Identifier: BSD-2-Clause
/* Kernel symbols from /proc/kallsyms (ksyms.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/strtab.h"
#include "base/ksyms.h"

struct ksym {
	uint64_t addr;
	const char *name;   /* into text */
	const char *module; /* interned */
};

struct ksyms {
	struct ksym *syms;
	size_t n;
	char *text; /* the file, its names cut out in place */
	struct strtab *modules;
};

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The whole file: /proc files have no size to ask for. */
static char *slurp(const char *path)
{
	size_t len = 0, cap = 1 << 22;
	char *buf = malloc(cap), *grown;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t got;

	if (fd < 0 || !buf)
		goto fail;
	for (;;) {
		if (cap - len < 65536) {
			grown = realloc(buf, cap * 2);
			if (!grown)
				goto fail;
			buf = grown;
			cap *= 2;
		}
		got = read(fd, buf + len, cap - len - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			goto fail;
		if (!got)
			break;
		len += got;
	}
	buf[len] = '\0';
	close(fd);
	return buf;
fail:
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

/* One "ADDR TYPE NAME[\t[MODULE]]" line at p (cut out in place): its
 * symbol in *s when it is a function's; the next line. */
static char *parse_line(struct ksyms *k, char *p, struct ksym *s, int *ok)
{
	char *nl = strchr(p, '\n'), *end, *name, *mod = NULL;
	uint64_t a;
	char type;

	*ok = 0;
	if (nl)
		*nl = '\0';
	a = strtoull(p, &end, 16);
	if (end == p || end[0] != ' ' || !end[1] || end[2] != ' ')
		goto next;
	type = end[1];
	/* Functions only (text, and weak text); zero: hidden from us. */
	if (!a || (type != 't' && type != 'T' && type != 'w' && type != 'W'))
		goto next;
	name = end + 3;
	end = name + strcspn(name, " \t");
	if (*end) {
		mod = strchr(end + 1, '[');
		if (mod) {
			mod++;
			mod[strcspn(mod, "]")] = '\0';
		}
	}
	*end = '\0';
	s->addr = a;
	s->name = name;
	s->module = strtab__intern(k->modules, mod ? mod : "");
	*ok = s->module ? 1 : -1;
next:
	return nl ? nl + 1 : NULL;
}

struct ksyms *ksyms__load(const char *path)
{
	struct ksyms *k = calloc(1, sizeof(*k));
	size_t cap = 0;
	char *p;
	int err = 0, ok;

	if (!k)
		return NULL;
	k->modules = strtab__new();
	k->text = slurp(path ? path : "/proc/kallsyms");
	if (!k->modules || !k->text) {
		err = k->modules ? errno : ENOMEM;
		goto out;
	}
	for (p = k->text; p && *p;) {
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
		p = parse_line(k, p, &k->syms[k->n], &ok);
		if (ok < 0) {
			err = ENOMEM;
			goto out;
		}
		k->n += ok;
	}
	qsort(k->syms, k->n, sizeof(*k->syms), ksym_cmp);
out:
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
	free(k->text);
	strtab__free(k->modules);
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

int ksyms__find(const struct ksyms *k, const char *name, uint64_t *start, uint64_t *end)
{
	size_t i, j;

	for (i = 0; i < k->n; i++) {
		if (k->syms[i].module[0] || strcmp(k->syms[i].name, name))
			continue;
		for (j = i + 1; j < k->n && k->syms[j].addr == k->syms[i].addr; j++)
			;
		*start = k->syms[i].addr;
		*end = j < k->n ? k->syms[j].addr : 0;
		return 0;
	}
	return -ENOENT;
}
