// SPDX-License-Identifier: BSD-2-Clause
/*
 * /proc/PID/maps parser.  The format (fs/proc/task_mmu.c, show_map_vma):
 *
 *   start-end perms offset major:minor inode<padding>path
 *
 * with start, end, offset, major and minor in hex and inode in decimal.  The
 * path is optional and runs to the end of the line, so it may hold spaces.
 * No Debian library parses this, hence the hand-written scanner below; it
 * avoids sscanf() so that overflowing numbers are rejected, not clamped.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/procmaps.h"

struct procmaps {
	struct map_entry *entries;
	size_t count, cap;
	size_t skipped;
};

static const char empty_path[] = "";
static const char deleted_suffix[] = " (deleted)";

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Reads one or more digits in base 16 or 10 at *s, no larger than max. */
static bool scan_num(const char **s, unsigned int base, uint64_t max, uint64_t *out)
{
	const char *p = *s;
	uint64_t v = 0;
	int d;

	for (; (d = hex_digit(*p)) >= 0 && (unsigned int)d < base; p++) {
		if (v > (max - d) / base)
			return false;
		v = v * base + d;
	}
	if (p == *s)
		return false;
	*s = p;
	*out = v;
	return true;
}

static bool scan_char(const char **s, char c)
{
	if (**s != c)
		return false;
	(*s)++;
	return true;
}

static bool scan_flag(const char **s, char set, char unset, uint8_t *out)
{
	if (**s == set)
		*out = 1;
	else if (**s == unset)
		*out = 0;
	else
		return false;
	(*s)++;
	return true;
}

/* Fills e from one line (without its newline); path still points into line. */
static bool parse_line(const char *line, struct map_entry *e)
{
	const char *s = line;
	uint64_t major, minor;

	memset(e, 0, sizeof(*e));
	if (!scan_num(&s, 16, UINT64_MAX, &e->start) || !scan_char(&s, '-') ||
	    !scan_num(&s, 16, UINT64_MAX, &e->end) || !scan_char(&s, ' '))
		return false;
	if (!scan_flag(&s, 'r', '-', &e->r) || !scan_flag(&s, 'w', '-', &e->w) ||
	    !scan_flag(&s, 'x', '-', &e->x) || !scan_flag(&s, 'p', 's', &e->p) ||
	    !scan_char(&s, ' '))
		return false;
	if (!scan_num(&s, 16, UINT64_MAX, &e->offset) || !scan_char(&s, ' ') ||
	    !scan_num(&s, 16, UINT32_MAX, &major) || !scan_char(&s, ':') ||
	    !scan_num(&s, 16, UINT32_MAX, &minor) || !scan_char(&s, ' ') ||
	    !scan_num(&s, 10, UINT64_MAX, &e->inode))
		return false;
	if (*s != '\0' && *s != ' ')
		return false;
	while (*s == ' ')
		s++;
	if (e->start >= e->end)
		return false;
	e->dev_major = (uint32_t)major;
	e->dev_minor = (uint32_t)minor;
	e->path = s;
	return true;
}

static int add_entry(struct procmaps *m, const struct map_entry *e)
{
	struct map_entry *n;
	size_t len = strlen(e->path), sfx = sizeof(deleted_suffix) - 1;
	char *path = NULL;

	if (m->count == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;

		n = reallocarray(m->entries, cap, sizeof(*n));
		if (!n)
			return -ENOMEM;
		m->entries = n;
		m->cap = cap;
	}
	if (len) {
		path = strdup(e->path);
		if (!path)
			return -ENOMEM;
	}
	n = &m->entries[m->count++];
	*n = *e;
	n->path = path ? path : empty_path;
	n->deleted = len > sfx && !strcmp(e->path + len - sfx, deleted_suffix);
	return 0;
}

static void free_path(struct map_entry *e)
{
	if (e->path != empty_path)
		free((char *)e->path);
}

static int cmp_entry(const void *a, const void *b)
{
	const struct map_entry *x = a, *y = b;

	if (x->start != y->start)
		return (x->start > y->start) - (x->start < y->start);
	return (x->end > y->end) - (x->end < y->end);
}

/*
 * The kernel writes the lines in address order without overlaps; sort anyway
 * and drop overlapping ranges so that a hostile file cannot break the binary
 * search in procmaps__find().
 */
static void sort_and_prune(struct procmaps *m)
{
	size_t i, kept = 0;

	if (!m->count)
		return;
	qsort(m->entries, m->count, sizeof(*m->entries), cmp_entry);
	for (i = 0; i < m->count; i++) {
		if (kept && m->entries[i].start < m->entries[kept - 1].end) {
			free_path(&m->entries[i]);
			m->skipped++;
			continue;
		}
		m->entries[kept++] = m->entries[i];
	}
	m->count = kept;
}

struct procmaps *procmaps__parse(FILE *f)
{
	struct procmaps *m;
	struct map_entry e;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int err = 0;

	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	errno = 0; /* so that a read error below reports its own cause */
	while ((len = getline(&line, &cap, f)) > 0) {
		if (line[len - 1] == '\n')
			line[--len] = '\0';
		/* An embedded NUL would silently cut the path short. */
		if (memchr(line, '\0', len) || !parse_line(line, &e)) {
			m->skipped++;
			continue;
		}
		err = add_entry(m, &e);
		if (err)
			goto cleanup;
	}
	if (ferror(f)) {
		err = errno ? -errno : -EIO;
		goto cleanup;
	}
	sort_and_prune(m);
cleanup:
	free(line);
	if (err) {
		procmaps__free(m);
		errno = -err;
		return NULL;
	}
	return m;
}

struct procmaps *procmaps__load(int pid)
{
	struct procmaps *m;
	char path[64];
	FILE *f;
	int err;

	if (pid < 0) {
		errno = EINVAL;
		return NULL;
	}
	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/maps");
	f = fopen(path, "re");
	if (!f)
		return NULL;
	m = procmaps__parse(f);
	err = errno;
	fclose(f);
	errno = err;
	return m;
}

int procmaps__file_in_root(char *buf, size_t n, int pid, const char *path)
{
	int len = snprintf(buf, n, "/proc/%d/root%s", pid, path);

	return len < 0 || (size_t)len >= n ? -ENAMETOOLONG : 0;
}

void procmaps__free(struct procmaps *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->count; i++)
		free_path(&m->entries[i]);
	free(m->entries);
	free(m);
}

size_t procmaps__count(const struct procmaps *m)
{
	return m->count;
}

size_t procmaps__skipped(const struct procmaps *m)
{
	return m->skipped;
}

const struct map_entry *procmaps__get(const struct procmaps *m, size_t i)
{
	return i < m->count ? &m->entries[i] : NULL;
}

const struct map_entry *procmaps__find(const struct procmaps *m, uint64_t addr)
{
	size_t lo = 0, hi = m->count;

	/* Find the last entry whose start <= addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->entries[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= m->entries[lo - 1].end)
		return NULL;
	return &m->entries[lo - 1];
}
