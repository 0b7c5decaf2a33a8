/* SPDX-License-Identifier: BSD-2-Clause */
/* Writing a file on behalf of the user who asked (creds.h). */
#ifndef SAFEFILE_H
#define SAFEFILE_H

#include <stddef.h>

struct user_creds;

/* Checks that path can be written by the user, before a run. */
int outfile_check(const char *path, const struct user_creds *c);
/* Writes data to path as the user: a new file in the same directory, then
 * renamed over path, so that a symlink or a file planted there is never
 * followed or clobbered in place.  0 or -errno. */
int outfile_write(const char *path, const char *data, size_t len, const struct user_creds *c);

/* The same, the content written to the open file by emit (0 or -errno). */
typedef int (*outfile_emit_fn)(int fd, void *ctx);
int outfile_stream(const char *path, outfile_emit_fn emit, void *ctx, const struct user_creds *c);

#endif /* SAFEFILE_H */
