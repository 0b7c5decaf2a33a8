/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `scalene-bpf view FILE|DIR`: a profile, or a system-wide run's folder,
 * shown in the terminal, written as HTML pages (opened in a browser where
 * there is a display), or exported (--format).
 */
#ifndef VIEW_CMD_H
#define VIEW_CMD_H

struct options;

/* The exit status. */
int view_main(const struct options *o);

#endif /* VIEW_CMD_H */
