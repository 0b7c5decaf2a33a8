/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `scalene-bpf view FILE|DIR`: a profile, or a system-wide run's folder,
 * shown in the terminal, written as HTML pages (opened in a browser where
 * there is a display), or exported (--format).
 */
#ifndef VIEW_CMD_H
#define VIEW_CMD_H

struct options;
struct user_creds;

/* The exit status. */
int view_main(const struct options *o);
/* The pprof export of the profile in the file json, written to out as the
 * user (--all --continuous, for each profile it writes): 0, -EINVAL when
 * the profile has no stacks, or -errno after a message. */
int view_export_pprof(const char *json, const char *out, const struct user_creds *creds);

#endif /* VIEW_CMD_H */
