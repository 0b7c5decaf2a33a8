// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer harness of `scalene-bpf view`: the input bytes go through the
 * profile reader (view_parse), and a document it accepts through every
 * view: the terminal table at several widths with colour on and off, the
 * HTML page and each export, all into memory.  Besides the sanitizers'
 * findings, the terminal output is checked where that is cheap: without
 * colour no control byte but the newline, no C1, valid UTF-8; with colour
 * only SGR escapes; never a row wider than asked; and the messages are
 * terminal-safe too.  The same bytes go through the index reader of a
 * system-wide run's directory (host_index__parse), and an index it accepts
 * through the host's terminal view (checked the same way) and page.  A
 * broken invariant aborts, which libFuzzer reports.
 *
 *   make fuzz                                   (a few minutes per harness)
 *   build/fuzz/fuzz_view tests/fuzz/corpus/view (fuzzing by hand)
 *   build/fuzz/fuzz_view CRASH_FILE             (replaying one input)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "view/hostindex.h"
#include "view/view.h"
#include "view/viewutil.h"

#define FAIL(...)                                                 \
	do {                                                      \
		fprintf(stderr, "fuzz_view: invariant broken: "); \
		fprintf(stderr, __VA_ARGS__);                     \
		fputc('\n', stderr);                              \
		abort();                                          \
	} while (0)

/* Length of the SGR escape at s ("ESC [ digits and ; m"), or 0. */
static size_t sgr_len(const char *s, size_t n)
{
	size_t i = 2;

	if (n < 3 || s[0] != '\033' || s[1] != '[')
		return 0;
	while (i < n && ((s[i] >= '0' && s[i] <= '9') || s[i] == ';'))
		i++;
	return i < n && s[i] == 'm' ? i + 1 : 0;
}

/* Terminal output: only printable UTF-8, newlines and (with colour) SGR
 * escapes; no row wider than width (width <= 0: not checked). */
static void check_terminal(const char *what, const char *s, size_t n, int width, int color)
{
	size_t i = 0;
	int cols = 0;

	while (i < n) {
		size_t len, esc = color ? sgr_len(s + i, n - i) : 0;
		int w;

		if (esc) {
			i += esc;
			continue;
		}
		if (s[i] == '\n') {
			cols = 0;
			i++;
			continue;
		}
		w = vj_char_cols(s + i, n - i, &len);
		if (w < 0)
			FAIL("%s: byte 0x%02x at %zu (colour %d)", what, (unsigned char)s[i], i,
			     color);
		cols += w;
		if (width > 0 && cols > width)
			FAIL("%s: a row wider than %d columns at byte %zu", what, width, i);
		i += len;
	}
}

static void run_cli(struct json_object *doc, int width, int color, int all, double threshold)
{
	struct view_opts vo = { threshold, all != 0, width, color != 0 };
	char *out = NULL, *err = NULL;
	size_t outlen = 0, errlen = 0;
	FILE *fo = open_memstream(&out, &outlen), *fe = open_memstream(&err, &errlen);

	if (!fo || !fe)
		abort();
	view_print_cli(doc, fo, fe, &vo);
	fclose(fo);
	fclose(fe);
	check_terminal("view --cli", out, outlen, width, color);
	check_terminal("view --cli messages", err, errlen, 0, 0);
	free(out);
	free(err);
}

/* Output that is not for a terminal: only the sanitizers judge it. */
static void run_other(struct json_object *doc, int which)
{
	char *out = NULL, *err = NULL;
	size_t outlen = 0, errlen = 0;
	FILE *fo = open_memstream(&out, &outlen), *fe = open_memstream(&err, &errlen);

	if (!fo || !fe)
		abort();
	if (which == 0)
		view_write_html(doc, "fuzz.json", NULL, fo, fe);
	else
		export_write(doc, (enum export_format)(which - 1), "fuzz.json", fo, fe);
	fclose(fo);
	fclose(fe);
	check_terminal("html/export messages", err, errlen, 0, 0);
	free(out);
	free(err);
}

/* The bytes as DIR/index.json: the reader, then the host's views. */
static void run_index(const uint8_t *data, size_t size, int odd)
{
	static const int widths[] = { 40, 100, 0 };
	char *out = NULL, *err = NULL;
	size_t outlen = 0, errlen = 0, i;
	FILE *fo, *fe = open_memstream(&err, &errlen);
	struct host_index *hi;

	if (!fe)
		abort();
	hi = host_index__parse((const char *)data, size, "fuzz/index.json", fe);
	fclose(fe);
	check_terminal("index messages", err, errlen, 0, 0);
	free(err);
	if (!hi)
		return;
	for (i = 0; i < sizeof(widths) / sizeof(widths[0]); i++) {
		int w = widths[i] ? widths[i] : odd;
		struct view_opts vo = { 1, false, w, (i & 1) != 0 };

		fo = open_memstream(&out, &outlen);
		if (!fo)
			abort();
		view_print_host_cli(hi, "fuzz", fo, &vo);
		fclose(fo);
		check_terminal("view DIR", out, outlen, w, (i & 1) != 0);
		free(out);
		out = NULL;
	}
	fo = open_memstream(&out, &outlen);
	fe = open_memstream(&err, &errlen);
	if (!fo || !fe)
		abort();
	view_write_host_html(hi, "fuzz/index.html", fo, fe);
	fclose(fo);
	fclose(fe);
	check_terminal("view --html DIR messages", err, errlen, 0, 0);
	free(out);
	free(err);
	host_index__free(hi);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum export_format formats[] = { EXPORT_FOLDED, EXPORT_SPEEDSCOPE,
						      EXPORT_PPROF };
	char *err = NULL;
	size_t errlen = 0, i;
	FILE *fe = open_memstream(&err, &errlen);
	struct json_object *doc;
	/* A width that depends on the input, so that every width gets tried
	 * over a run; and the fixed ones of a narrow and a usual terminal. */
	int odd = 1 + (int)((size * 7 + (size ? data[size / 2] : 0)) % 320);

	if (!fe)
		abort();
	doc = view_parse((const char *)data, size, "fuzz.json", fe);
	fclose(fe);
	check_terminal("view_parse messages", err, errlen, 0, 0);
	free(err);
	run_index(data, size, odd);
	if (!doc)
		return 0;
	run_cli(doc, 40, 0, 0, 1);
	run_cli(doc, 100, 1, 0, 1);
	run_cli(doc, odd, odd & 1, 1, 0);
	run_other(doc, 0);
	for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		run_other(doc, 1 + (int)formats[i]);
	json_object_put(doc);
	return 0;
}
