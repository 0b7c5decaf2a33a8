// SPDX-License-Identifier: BSD-2-Clause
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <json-c/json.h>

#include "utf8.h"
#include "viewutil.h"

#define NUM_LIMIT 1e15

double vj_num(struct json_object *o, const char *key)
{
	struct json_object *v;
	double d;

	if (!json_object_object_get_ex(o, key, &v))
		return 0;
	if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
		return 0;
	d = json_object_get_double(v);
	if (!isfinite(d))
		return 0;
	return d > NUM_LIMIT ? NUM_LIMIT : d < -NUM_LIMIT ? -NUM_LIMIT : d;
}

const char *vj_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static struct json_object *typed(struct json_object *o, const char *key, enum json_type t)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, t))
		return NULL;
	return v;
}

struct json_object *vj_array(struct json_object *o, const char *key)
{
	return typed(o, key, json_type_array);
}

struct json_object *vj_object(struct json_object *o, const char *key)
{
	return typed(o, key, json_type_object);
}

void vj_put_safe(FILE *f, const char *s, int max)
{
	size_t left = strlen(s), n;
	int cols = 0;

	while (left && *s != '\n' && *s != '\r') {
		int w = vj_char_cols(s, left, &n);

		if (cols + (w > 1 ? w : 1) > max)
			break;
		if (*s == '\t' || w < 0)
			fputc(*s == '\t' ? ' ' : '?', f);
		else
			fwrite(s, 1, n, f);
		cols += w > 1 ? w : 1;
		s += n;
		left -= n;
	}
}

void vj_unescape_line(const char *s, char *out, size_t n)
{
	size_t o = 0;

	if (!n)
		return;
	while (*s && o + 1 < n) {
		if (!strncmp(s, "\\u0026", 6) || !strncmp(s, "\\u003c", 6) ||
		    !strncmp(s, "\\u003e", 6)) {
			out[o++] = s[5] == '6' ? '&' : (s[5] == 'c' ? '<' : '>');
			s += 6;
			continue;
		}
		out[o++] = *s++;
	}
	out[o] = '\0';
}

double vj_num_at(struct json_object *a, size_t i)
{
	struct json_object *v = json_object_array_get_idx(a, i);
	double d;

	if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
		return 0;
	d = json_object_get_double(v);
	if (!isfinite(d))
		return 0;
	return d > NUM_LIMIT ? NUM_LIMIT : d < -NUM_LIMIT ? -NUM_LIMIT : d;
}

static uint32_t decode(const unsigned char *p, size_t n)
{
	static const unsigned char mask[] = { 0, 0x7f, 0x1f, 0x0f, 0x07 };
	uint32_t cp = p[0] & mask[n];
	size_t i;

	for (i = 1; i < n; i++)
		cp = cp << 6 | (p[i] & 0x3f);
	return cp;
}

/* Ranges a terminal draws two columns wide: East Asian wide and full-width
 * forms, and the emoji blocks (some of their characters are narrow on some
 * terminals: counting them as two only ever makes a line shorter). */
static bool wide(uint32_t cp)
{
	static const uint32_t ranges[][2] = {
		{ 0x1100, 0x115f },   { 0x231a, 0x231b },   { 0x2329, 0x232a },
		{ 0x23e9, 0x23f3 },   { 0x25fd, 0x25fe },   { 0x2600, 0x27bf },
		{ 0x2b1b, 0x2b55 },   { 0x2e80, 0x303e },   { 0x3041, 0x33ff },
		{ 0x3400, 0x4dbf },   { 0x4e00, 0x9fff },   { 0xa000, 0xa4cf },
		{ 0xa960, 0xa97f },   { 0xac00, 0xd7a3 },   { 0xf900, 0xfaff },
		{ 0xfe10, 0xfe19 },   { 0xfe30, 0xfe6f },   { 0xff00, 0xff60 },
		{ 0xffe0, 0xffe6 },   { 0x16fe0, 0x18cff }, { 0x1b000, 0x1b2ff },
		{ 0x1f000, 0x1faff }, { 0x20000, 0x3fffd },
	};
	size_t i;

	for (i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		if (cp < ranges[i][0])
			return false;
		if (cp <= ranges[i][1])
			return true;
	}
	return false;
}

int vj_char_cols(const char *s, size_t left, size_t *len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = utf8_seq_len(p, left);
	uint32_t cp;

	*len = n ? n : 1;
	if (!n || *p < 0x20 || *p == 0x7f)
		return -1;
	if (n == 1)
		return 1;
	cp = decode(p, n);
	/* C1; LRM, RLM; line and paragraph separators; LRE..RLO; LRI..PDI. */
	if (cp <= 0x9f || cp == 0x200e || cp == 0x200f || (cp >= 0x2028 && cp <= 0x202e) ||
	    (cp >= 0x2066 && cp <= 0x2069))
		return -1;
	return wide(cp) ? 2 : 1;
}
