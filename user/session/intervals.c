// SPDX-License-Identifier: BSD-2-Clause
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "base/creds.h"
#include "base/log.h"
#include "session/intervals.h"

/* An interval's folder, kept until the bound takes it. */
struct folder {
	char name[48];
	uint64_t bytes;
};

struct intervals {
	char *dir; /* DIR/intervals */
	const struct user_creds *creds;
	uint64_t max_bytes, bytes;
	struct folder *kept; /* oldest first */
	int nkept, cap;
	int number; /* the current interval's */
	bool made;  /* its folder exists */
	uint64_t removed, removed_bytes;
};

/* A folder made as the user; 0 or -errno. */
static int make_as_user(const struct user_creds *creds, const char *path)
{
	struct fs_creds saved;
	int err = 0;

	creds_fs_user(creds, &saved);
	if (mkdir(path, 0755) && errno != EEXIST)
		err = -errno;
	creds_fs_self(&saved);
	return err;
}

struct intervals *intervals__new(const char *dir, const struct user_creds *creds,
				 uint64_t max_bytes)
{
	struct intervals *iv = calloc(1, sizeof(*iv));
	int err;

	if (!iv || asprintf(&iv->dir, "%s/intervals", dir) < 0) {
		free(iv);
		errno = ENOMEM;
		return NULL;
	}
	iv->creds = creds;
	iv->max_bytes = max_bytes;
	err = make_as_user(creds, iv->dir);
	if (err) {
		pr_warn("cannot make %s: %s; choose another directory with -o\n", iv->dir,
			strerror(-err));
		intervals__free(iv);
		errno = -err;
		return NULL;
	}
	return iv;
}

void intervals__free(struct intervals *iv)
{
	if (!iv)
		return;
	free(iv->kept);
	free(iv->dir);
	free(iv);
}

int intervals__start(struct intervals *iv, double start_wall)
{
	time_t t = (time_t)start_wall;
	struct folder *f;
	struct tm tm;

	if (iv->nkept == iv->cap) {
		int cap = iv->cap ? iv->cap * 2 : 64;

		f = realloc(iv->kept, cap * sizeof(*f));
		if (!f)
			return -ENOMEM;
		iv->kept = f;
		iv->cap = cap;
	}
	f = &iv->kept[iv->nkept++];
	memset(f, 0, sizeof(*f));
	gmtime_r(&t, &tm);
	/* Sorted by name in time order, whatever the number's width. */
	snprintf(f->name, sizeof(f->name), "%06d-%04d%02d%02dT%02d%02d%02dZ", ++iv->number,
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
	iv->made = false;
	return iv->number;
}

int intervals__number(const struct intervals *iv)
{
	return iv->number;
}

static struct folder *current(struct intervals *iv)
{
	return iv->nkept ? &iv->kept[iv->nkept - 1] : NULL;
}

int intervals__path(struct intervals *iv, const char *name, char *buf, size_t n)
{
	struct folder *f = current(iv);
	int err;

	if (!f)
		return -EINVAL;
	if (snprintf(buf, n, "%s/%s", iv->dir, f->name) >= (int)n)
		return -ENAMETOOLONG;
	if (!iv->made) {
		err = make_as_user(iv->creds, buf);
		if (err)
			return err;
		iv->made = true;
	}
	if (snprintf(buf, n, "%s/%s/%s", iv->dir, f->name, name) >= (int)n)
		return -ENAMETOOLONG;
	return 0;
}

void intervals__wrote(struct intervals *iv, const char *path)
{
	struct folder *f = current(iv);
	struct stat st;

	if (!f || stat(path, &st))
		return;
	f->bytes += st.st_size;
	iv->bytes += st.st_size;
}

/* Removes the oldest folder and what it holds. */
static void remove_oldest(struct intervals *iv)
{
	struct folder *f = &iv->kept[0];
	struct fs_creds saved;
	char path[PATH_MAX], file[PATH_MAX + 256];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%s", iv->dir, f->name);
	creds_fs_user(iv->creds, &saved);
	d = opendir(path);
	while (d && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(file, sizeof(file), "%s/%s", path, de->d_name);
		unlink(file);
	}
	if (d)
		closedir(d);
	rmdir(path);
	creds_fs_self(&saved);
	pr_warn("removed %s/%s (%.1f MB): the intervals' profiles took more than --max-disk "
		"(%.0f MB)\n",
		iv->dir, f->name, f->bytes / 1e6, iv->max_bytes / 1e6);
	iv->bytes -= f->bytes;
	iv->removed++;
	iv->removed_bytes += f->bytes;
	memmove(iv->kept, iv->kept + 1, (iv->nkept - 1) * sizeof(*iv->kept));
	iv->nkept--;
}

void intervals__end(struct intervals *iv)
{
	while (iv->nkept > 1 && iv->bytes > iv->max_bytes)
		remove_oldest(iv);
}

struct json_object *intervals__json(const struct intervals *iv)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "intervals", json_object_new_int(iv->number));
	json_object_object_add(o, "folders_kept", json_object_new_int(iv->nkept));
	json_object_object_add(o, "folders_removed", json_object_new_int64((int64_t)iv->removed));
	json_object_object_add(o, "bytes_kept", json_object_new_int64((int64_t)iv->bytes));
	json_object_object_add(o, "bytes_removed",
			       json_object_new_int64((int64_t)iv->removed_bytes));
	json_object_object_add(o, "max_bytes", json_object_new_int64((int64_t)iv->max_bytes));
	return o;
}
