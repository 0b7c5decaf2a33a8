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

/* Writes s to f with what must not reach a terminal (see vj_char_cols:
 * C0, DEL, C1, invalid UTF-8, bidi controls, line separators) shown as '?',
 * tabs as spaces, up to the first line break, whole characters only, at
 * most max columns (wide characters count two). */
void vj_put_safe(FILE *f, const char *s, int max);
/* Scalene stores &, <, > in line text as the six characters \u0026 etc.;
 * this gives them back. */
void vj_unescape_line(const char *s, char *out, size_t n);

/* Element i of an array as a number, with vj_num's rules. */
double vj_num_at(struct json_object *a, size_t i);
/* The character at s (left bytes): its length in *len (at least 1) and the
 * columns a terminal gives it (2 for wide East Asian characters and emoji,
 * counted generously so that a line never ends up wider than counted), or
 * -1 when it must not reach a terminal: invalid UTF-8, C0, DEL, C1, and the
 * invisible characters that reorder or break text (bidi controls, line and
 * paragraph separators). */
int vj_char_cols(const char *s, size_t left, size_t *len);

#endif /* VIEWUTIL_H */
