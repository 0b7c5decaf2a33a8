/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * --all --continuous: the folders of the intervals' profiles under the
 * output directory (intervals/NNNNNN-YYYYMMDDTHHMMSSZ/, one per interval,
 * its processes' profiles and an index.json of them), and the bound on the disk
 * they take: past it the oldest folders go first, each said in the log.
 */
#ifndef INTERVALS_H
#define INTERVALS_H

#include <stdint.h>

struct json_object;
struct user_creds;

struct intervals;

/* dir: the output directory (made already); max_bytes: what the interval
 * folders may take together.  NULL with errno set. */
struct intervals *intervals__new(const char *dir, const struct user_creds *creds,
				 uint64_t max_bytes);
void intervals__free(struct intervals *iv);
/* Starts the next interval at start_wall (Unix time, s): its folder is made
 * when its first file is written.  Returns its number (from 1). */
int intervals__start(struct intervals *iv, double start_wall);
/* The current interval's number. */
int intervals__number(const struct intervals *iv);
/* The path of a file named name in the current interval's folder (made as
 * the user if it is not there yet); 0 or -errno. */
int intervals__path(struct intervals *iv, const char *name, char *buf, size_t n);
/* A file written into the current folder: its size counts toward the bound. */
void intervals__wrote(struct intervals *iv, const char *path);
/* Ends the current interval: removes the oldest folders while all of them
 * take more than the bound (never the one just written). */
void intervals__end(struct intervals *iv);
/* For index.json: the interval count, the folders removed and the bytes
 * kept. */
struct json_object *intervals__json(const struct intervals *iv);

#endif /* INTERVALS_H */
