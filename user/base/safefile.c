// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/creds.h"
#include "base/safefile.h"

static void dir_of(const char *path, char *dir, size_t n)
{
	char tmp[PATH_MAX];

	snprintf(tmp, sizeof(tmp), "%s", path);
	snprintf(dir, n, "%s", dirname(tmp));
}

static int make_temp(const char *path, char *tmp, size_t n)
{
	char dir[PATH_MAX];
	int fd;

	dir_of(path, dir, sizeof(dir));
	if ((size_t)snprintf(tmp, n, "%s/.scalene-bpf-XXXXXX", dir) >= n)
		return -ENAMETOOLONG;
	/* mkstemp: O_CREAT|O_EXCL, never follows a planted name. */
	fd = mkstemp(tmp);
	return fd < 0 ? -errno : fd;
}

int outfile_check(const char *path, const struct user_creds *c)
{
	struct fs_creds saved;
	char tmp[PATH_MAX];
	struct stat st;
	int fd, err = 0;

	creds_fs_user(c, &saved);
	if (!stat(path, &st) && S_ISDIR(st.st_mode)) {
		err = -EISDIR;
		goto out;
	}
	fd = make_temp(path, tmp, sizeof(tmp));
	if (fd < 0) {
		err = fd;
		goto out;
	}
	close(fd);
	unlink(tmp);
out:
	creds_fs_self(&saved);
	return err;
}

int outfile_stream(const char *path, outfile_emit_fn emit, void *ctx, const struct user_creds *c)
{
	struct fs_creds saved;
	char tmp[PATH_MAX];
	int fd, err;

	/* The file is made and renamed as the user; emit runs as before. */
	creds_fs_user(c, &saved);
	fd = make_temp(path, tmp, sizeof(tmp));
	creds_fs_self(&saved);
	if (fd < 0)
		return fd;
	err = emit(fd, ctx);
	if (!err && fchmod(fd, 0644))
		err = -errno;
	if (!err && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	creds_fs_user(c, &saved);
	/* rename replaces a symlink at path, never writes through it. */
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	creds_fs_self(&saved);
	return err;
}

struct buf_ctx {
	const char *data;
	size_t len;
};

static int emit_buf(int fd, void *ctx)
{
	const struct buf_ctx *b = ctx;
	size_t off = 0;
	ssize_t n;

	while (off < b->len) {
		n = write(fd, b->data + off, b->len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		off += n;
	}
	return 0;
}

int outfile_write(const char *path, const char *data, size_t len, const struct user_creds *c)
{
	struct buf_ctx b = { data, len };

	return outfile_stream(path, emit_buf, &b, c);
}
