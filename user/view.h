/* SPDX-License-Identifier: BSD-2-Clause */
/* `scalene-bpf view`: reading a profile back and showing it. */
#ifndef VIEW_H
#define VIEW_H

#include <stdio.h>

struct options;
struct json_object;

int view_main(const struct options *o);
/* Prints the terminal table of a parsed profile to f; 0 or -EINVAL when the
 * document is not a profile (the reason printed to err). */
int view_print_cli(struct json_object *doc, FILE *f, FILE *err, double threshold, int all_lines,
		   int width);

#endif /* VIEW_H */
