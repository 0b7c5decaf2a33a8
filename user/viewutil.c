// SPDX-License-Identifier: BSD-2-Clause
#include <math.h>
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
	const unsigned char *p = (const unsigned char *)s;
	size_t left = strlen(s);
	int cols = 0;

	while (*p && cols < max) {
		size_t n;

		if (*p == '\n' || *p == '\r')
			break;
		n = utf8_seq_len(p, left);
		/* C1 controls, U+0080..U+009F, act as escapes on some terminals. */
		if (n == 2 && p[0] == 0xc2 && p[1] <= 0x9f)
			n = 0;
		if (*p == '\t') {
			fputc(' ', f);
		} else if (n == 0 || *p < 0x20 || *p == 0x7f) {
			fputc('?', f);
			n = n ? n : 1;
		} else {
			fwrite(p, 1, n, f);
		}
		left -= n ? n : 1;
		p += n ? n : 1;
		cols++;
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
