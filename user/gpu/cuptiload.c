// SPDX-License-Identifier: BSD-2-Clause
/*
 * Finding the program's CUPTI (cuptiload.h says where it looks).  Runs once,
 * inside cuInit() on the thread that initialises CUDA: it opens files and
 * reads the link map, nothing more.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuptiload.h"

/* Folders of the CUDA toolkit that hold libcupti, under its root. */
static const char *const toolkit_dirs[] = { "extras/CUPTI/lib64", "lib64", "lib" };
/* The majors tried by name when nothing says which (the newest first). */
#define NEWEST_MAJOR 13
#define OLDEST_MAJOR 11

/* The places tried, for the message when none opens. */
struct search {
	char *list;
	size_t size, used;
};

static void tried(struct search *s, const char *place)
{
	if (s->used < s->size)
		s->used += snprintf(s->list + s->used, s->size - s->used, "%s%s",
				    s->used ? ", " : "", place);
}

/* The first loaded object whose file name starts with `prefix`
 * ("libcudart.so"), into path. */
struct find_loaded {
	const char *prefix;
	char *path;
	size_t len;
	int found;
};

static int find_loaded_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct find_loaded *f = arg;
	const char *base;

	if (!info->dlpi_name || !info->dlpi_name[0])
		return 0;
	base = strrchr(info->dlpi_name, '/');
	base = base ? base + 1 : info->dlpi_name;
	if (strncmp(base, f->prefix, strlen(f->prefix)))
		return 0;
	snprintf(f->path, f->len, "%s", info->dlpi_name);
	f->found = 1;
	return 1;
}

static int loaded(const char *prefix, char *path, size_t len)
{
	struct find_loaded f = { prefix, path, len, 0 };

	dl_iterate_phdr(find_loaded_cb, &f);
	return f.found;
}

/* N of a "libX.so.N[.M...]" file name; 0 when it has none. */
static int so_major(const char *path)
{
	const char *so = strstr(path, ".so.");

	return so ? atoi(so + 4) : 0;
}

/* The driver's CUDA major (12 for 12.4), from the libcuda that called us
 * (loaded with RTLD_LOCAL by the runtime: by its handle; the call needs no
 * initialised driver). */
static int driver_major(void)
{
	void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	int (*get)(int *);
	int v = 0;

	*(void **)&get = dlsym(cuda ? cuda : RTLD_DEFAULT, "cuDriverGetVersion");
	if (cuda)
		dlclose(cuda);
	return get && !get(&v) && v > 0 ? v / 1000 : 0;
}

static void *try_open(struct search *s, const char *path, int flags)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | flags);

	if (!h)
		tried(s, path);
	return h;
}

/* dir/name, when it exists; its real path into path. */
static void *try_dir(struct search *s, const char *dir, const char *name, char *path,
		     size_t pathlen)
{
	char p[PATH_MAX + 64], real[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	if (!realpath(p, real)) {
		tried(s, p);
		return NULL;
	}
	snprintf(path, pathlen, "%s", real);
	return try_open(s, real, 0);
}

static int fill(void *h, struct cupti_api *api, const char *path, char *why, size_t whylen)
{
	static const struct {
		const char *name;
		size_t off;
	} fns[] = {
#define FN(f) { "cupti" #f, offsetof(struct cupti_api, f) }
		FN(GetVersion),
		FN(GetResultString),
		FN(Subscribe),
		FN(Unsubscribe),
		FN(EnableCallback),
		FN(ActivityEnable),
		FN(ActivityRegisterCallbacks),
		FN(ActivitySetAttribute),
		FN(ActivityRegisterTimestampCallback),
		FN(ActivityFlushAll),
		FN(ActivityGetNextRecord),
		FN(ActivityGetNumDroppedRecords),
#undef FN
	};
	size_t i;

	for (i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		void *f = dlsym(h, fns[i].name);

		if (!f) {
			snprintf(why, whylen, "%s has no %s", path, fns[i].name);
			return -ENOSYS;
		}
		memcpy((char *)api + fns[i].off, &f, sizeof(f));
	}
#ifdef CUPTI_SUBSCRIBER_NAME_MAX_LEN
	*(void **)&api->Subscribe_v2 = dlsym(h, "cuptiSubscribe_v2");
#endif
	return 0;
}

int cupti_load(struct cupti_api *api, enum gpu_cupti_from *from, char *path, size_t pathlen,
	       char *why, size_t whylen)
{
	char tried_list[4096];
	struct search s = { tried_list, sizeof(tried_list), 0 };
	char rt[PATH_MAX], dir[PATH_MAX], name[64];
	const char *home = getenv("CUDA_HOME");
	void *h = NULL;
	int major = 0, m, lo, hi;
	size_t i;

	why[0] = path[0] = tried_list[0] = '\0';
	memset(api, 0, sizeof(*api));
	/* 1. Loaded already: the same handle. */
	if (loaded("libcupti.so", path, pathlen) && (h = try_open(&s, path, RTLD_NOLOAD)))
		*from = GPU_CUPTI_LOADED;
	/* 2. Next to the CUDA runtime. */
	if (!h && loaded("libcudart.so", rt, sizeof(rt))) {
		static const char *const beside[] = { ".", "../extras/CUPTI/lib64",
						      "../../cuda_cupti/lib" };
		char *slash = strrchr(rt, '/');

		major = so_major(rt);
		snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - rt) : 1, slash ? rt : ".");
		if (major)
			snprintf(name, sizeof(name), "libcupti.so.%d", major);
		else
			snprintf(name, sizeof(name), "libcupti.so");
		for (i = 0; !h && i < sizeof(beside) / sizeof(beside[0]); i++) {
			char sub[PATH_MAX + 32];

			snprintf(sub, sizeof(sub), "%s/%s", dir, beside[i]);
			h = try_dir(&s, sub, name, path, pathlen);
		}
		if (h)
			*from = GPU_CUPTI_BY_RUNTIME;
	}
	/* 3. By name: the runtime's major, else the driver's and below. */
	if (!h) {
		hi = major ? major : driver_major();
		hi = hi ? hi : NEWEST_MAJOR;
		lo = major ? major : OLDEST_MAJOR;
		for (m = hi; !h && m >= lo; m--) {
			snprintf(name, sizeof(name), "libcupti.so.%d", m);
			h = try_open(&s, name, 0);
		}
		if (!h && !major)
			h = try_open(&s, "libcupti.so", 0);
		if (h) {
			*from = GPU_CUPTI_BY_NAME;
			snprintf(path, pathlen, "%s", name);
		}
	}
	/* 4. The toolkit's folders. */
	for (i = 0; !h && i < 2 * (sizeof(toolkit_dirs) / sizeof(toolkit_dirs[0])); i++) {
		const char *root = i % 2 == 0 ? home : "/usr/local/cuda";

		if (!root || !*root || (i % 2 == 1 && home && !strcmp(home, root)))
			continue;
		if (snprintf(dir, sizeof(dir), "%s/%s", root, toolkit_dirs[i / 2]) >=
		    (int)sizeof(dir))
			continue;
		h = try_dir(&s, dir, "libcupti.so", path, pathlen);
		if (h)
			*from = GPU_CUPTI_TOOLKIT;
	}
#ifdef SBG_CUPTI_BUILD_DIR
	/* 5. Where this build found one. */
	if (!h && (h = try_dir(&s, SBG_CUPTI_BUILD_DIR, "libcupti.so", path, pathlen)))
		*from = GPU_CUPTI_BUILD_DIR;
#endif
	if (!h) {
		snprintf(why, whylen, "no CUPTI found (tried %s)", tried_list);
		return -ENOENT;
	}
	return fill(h, api, path, why, whylen);
}
