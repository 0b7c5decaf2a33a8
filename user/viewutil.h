/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Typed access to an untrusted profile document, shared by the terminal
 * view, the HTML page and the exports: a field of the wrong type reads as
 * absent, numbers are finite and bounded.
 */
#ifndef VIEWUTIL_H
#define VIEWUTIL_H

#include <stddef.h>
#include <stdio.h>

struct json_object;

/* A number field, 0 when absent, not a number or not finite; clamped to
 * +-1e15 so that casts and printing stay defined for any input. */
double vj_num(struct json_object *o, const char *key);
/* A string field or NULL. */
const char *vj_str(struct json_object *o, const char *key);
/* An array / object field or NULL. */
struct json_object *vj_array(struct json_object *o, const char *key);
struct json_object *vj_object(struct json_object *o, const char *key);

/* Writes s to f with control characters (C0, DEL, C1) and invalid UTF-8
 * shown as '?', tabs as spaces, up to the first line break, whole characters
 * only, at most max columns. */
void vj_put_safe(FILE *f, const char *s, int max);
/* Scalene stores &, <, > in line text as the six characters \u0026 etc.;
 * this gives them back. */
void vj_unescape_line(const char *s, char *out, size_t n);

#endif /* VIEWUTIL_H */
