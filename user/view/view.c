// SPDX-License-Identifier: BSD-2-Clause
/*
 * Reading a profile back: the JSON of a profile (ours or Scalene's), parsed
 * from untrusted input with a bound on its size and depth, for the views.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "view/view.h"

#define JSON_DEPTH 64
#define PARSE_CHUNK (1 << 24)

struct json_object *view_parse(const char *data, size_t len, const char *name, FILE *err)
{
	enum json_tokener_error jerr = json_tokener_continue;
	struct json_object *doc = NULL;
	struct json_tokener *tok;
	bool trailing = false;
	size_t off = 0;

	if (len == 0) {
		fprintf(err, "scalene-bpf: %s is empty\n", name);
		return NULL;
	}
	if (len > VIEW_MAX_PROFILE_BYTES) {
		fprintf(err, "scalene-bpf: %s is too large to be a profile\n", name);
		return NULL;
	}
	tok = json_tokener_new_ex(JSON_DEPTH);
	if (!tok) {
		fprintf(err, "scalene-bpf: out of memory reading %s\n", name);
		return NULL;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	while (off < len) {
		size_t n = len - off < PARSE_CHUNK ? len - off : PARSE_CHUNK;

		doc = json_tokener_parse_ex(tok, data + off, (int)n);
		jerr = json_tokener_get_error(tok);
		if (jerr != json_tokener_continue)
			break;
		off += n;
	}
	/* A document that is a bare number ends only where the input does:
	 * the terminating NUL tells the tokener so. */
	if (jerr == json_tokener_continue) {
		doc = json_tokener_parse_ex(tok, "", 1);
		jerr = json_tokener_get_error(tok);
		if (jerr != json_tokener_success)
			jerr = json_tokener_continue;
	} else if (jerr == json_tokener_success) {
		/* Anything after the document but white space is an error. */
		const char *p = data + off + json_tokener_get_parse_end(tok);

		while (p < data + len && strchr(" \t\r\n", *p))
			p++;
		if (p < data + len)
			trailing = true;
	}
	if (trailing)
		fprintf(err, "scalene-bpf: %s has more after the JSON document\n", name);
	else if (jerr == json_tokener_continue)
		fprintf(err,
			"scalene-bpf: %s: truncated JSON (is the profile still being "
			"written?)\n",
			name);
	else if (jerr == json_tokener_error_depth)
		fprintf(err, "scalene-bpf: %s: JSON nested deeper than a profile (%d levels)\n",
			name, JSON_DEPTH);
	else if (jerr != json_tokener_success)
		fprintf(err, "scalene-bpf: %s is not valid JSON: %s (at byte %zu)\n", name,
			json_tokener_error_desc(jerr), off + json_tokener_get_parse_end(tok));
	if (trailing || jerr != json_tokener_success) {
		json_object_put(doc);
		doc = NULL;
	}
	json_tokener_free(tok);
	return doc;
}
