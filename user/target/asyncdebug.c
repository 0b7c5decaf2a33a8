// SPDX-License-Identifier: BSD-2-Clause
/* _asyncio's published offsets (see asyncdebug.h). */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/elfsym.h"
#include "base/procmaps.h"
#include "target/asyncdebug.h"

#define SECTION ".AsyncioDebug"
#define NFIELDS 13
/* No object it describes comes near this: a thread state is about 1 KiB,
 * the interpreter state a few hundred. */
#define MAX_OBJECT (1u << 20)

static int bad(char *why, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, n, fmt, ap);
	va_end(ap);
	return -EPROTO;
}

/* Each field of one object: a pointer-sized field (or a one-byte flag) that
 * lies inside the object's published size. */
static int check_object(const char *what, uint64_t size, const uint64_t *offs,
			const char *const *names, const unsigned *widths, int n, char *why,
			size_t nwhy)
{
	int i;

	if (!size || size > MAX_OBJECT)
		return bad(why, nwhy, "%s: its size, %llu, is not one this reader takes", what,
			   (unsigned long long)size);
	for (i = 0; i < n; i++)
		if (offs[i] > size - widths[i])
			return bad(why, nwhy, "%s.%s at %llu lies outside its %llu bytes", what,
				   names[i], (unsigned long long)offs[i], (unsigned long long)size);
	return 0;
}

int asyncdebug__parse(const void *data, size_t size, struct asyncio_debug *d, char *why,
		      size_t nwhy)
{
	static const char *const task_names[] = { "task_name",	  "task_awaited_by",
						  "task_is_task", "task_awaited_by_is_set",
						  "task_coro",	  "task_node" };
	static const unsigned task_widths[] = { 8, 8, 1, 1, 8, 16 };
	static const char *const interp_names[] = { "asyncio_tasks_head" };
	static const unsigned list_head[] = { 16 };
	static const char *const tstate_names[] = { "asyncio_running_loop", "asyncio_running_task",
						    "asyncio_tasks_head" };
	static const unsigned tstate_widths[] = { 8, 8, 16 };
	uint64_t v[NFIELDS];
	int err;

	/* 3.14 and 3.15 publish 13 fields; a table of another size is a
	 * layout this reader was not written for. */
	if (size != sizeof(v))
		return bad(why, nwhy, "its %s section has %zu bytes, not the %zu this reader knows",
			   SECTION, size, sizeof(v));
	memcpy(v, data, sizeof(v));
	memset(d, 0, sizeof(*d));
	d->task_size = v[0];
	d->task_name = v[1];
	d->task_awaited_by = v[2];
	d->task_is_task = v[3];
	d->task_awaited_by_is_set = v[4];
	d->task_coro = v[5];
	d->task_node = v[6];
	d->interp_size = v[7];
	d->interp_tasks_head = v[8];
	d->tstate_size = v[9];
	d->tstate_running_loop = v[10];
	d->tstate_running_task = v[11];
	d->tstate_tasks_head = v[12];
	err = check_object("Task", d->task_size, &v[1], task_names, task_widths, 6, why, nwhy);
	if (!err)
		err = check_object("PyInterpreterState", d->interp_size, &v[8], interp_names,
				   list_head, 1, why, nwhy);
	if (!err)
		err = check_object("_PyThreadStateImpl", d->tstate_size, &v[10], tstate_names,
				   tstate_widths, 3, why, nwhy);
	return err;
}

static int read_file(int pid, const char *path, struct asyncio_debug *d, char *why, size_t nwhy)
{
	char p[PATH_MAX + 64];
	struct elf_file *e;
	const void *data;
	size_t size;
	int err;

	if (procmaps__file_in_root(p, sizeof(p), pid, path))
		return -ENAMETOOLONG;
	e = elf_file__open(p);
	if (!e) {
		err = -errno;
		snprintf(why, nwhy, "cannot open %s: %s", path, strerror(errno));
		return err;
	}
	err = elf_file__section(e, SECTION, &data, &size);
	if (err)
		err = -ENOENT;
	else
		err = asyncdebug__parse(data, size, d, why, nwhy);
	elf_file__free(e);
	if (!err)
		snprintf(d->file, sizeof(d->file), "%s", path);
	return err;
}

static bool asyncio_module(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "_asyncio.", 9) && strstr(base, ".so");
}

int asyncdebug__find(const struct py_proc *pp, struct asyncio_debug *d, char *why, size_t nwhy)
{
	struct procmaps *m;
	const char *last = "";
	size_t i;
	int err;

	why[0] = '\0';
	if (pp->minor < 14) {
		snprintf(why, nwhy, "Python before 3.14 publishes none");
		return -ENOENT;
	}
	err = read_file(pp->pid, pp->path, d, why, nwhy);
	if (err != -ENOENT && err != -ENAMETOOLONG)
		return err;
	m = procmaps__load(pp->pid);
	if (!m) {
		err = -errno;
		snprintf(why, nwhy, "cannot read its memory map: %s", strerror(errno));
		return err;
	}
	err = -ENOENT;
	for (i = 0; i < procmaps__count(m); i++) {
		const struct map_entry *e = procmaps__get(m, i);

		/* Each file once: its mappings are listed one after another. */
		if (!e->path[0] || !strcmp(e->path, last) || !asyncio_module(e->path))
			continue;
		last = e->path;
		err = read_file(pp->pid, e->path, d, why, nwhy);
		if (err != -ENOENT)
			break;
	}
	procmaps__free(m);
	if (err == -ENOENT)
		snprintf(why, nwhy, "no file it maps has %s (_asyncio not imported yet?)", SECTION);
	return err;
}
