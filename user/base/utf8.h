/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * UTF-8 decoding and cleaning, the one place for both: the JSON writer, the
 * source scanner, the terminal view, the HTML page and the exports.
 */
#ifndef UTF8_H
#define UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Decodes the well-formed UTF-8 sequence at s (at most n bytes): its length,
 * with the code point in *cp when cp is not NULL, or 0 for an invalid one:
 * bad lead or continuation bytes, overlong forms, surrogates, code points
 * past U+10FFFF. */
size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);

/* utf8_decode without the code point. */
size_t utf8_seq_len(const unsigned char *s, size_t n);

/* Whether cp is a control character: C0 (tab included), DEL, C1. */
bool utf8_is_control(uint32_t cp);

enum utf8_clean_flags {
	/* Controls (utf8_is_control) are replaced too, not only invalid
	 * bytes and NUL... */
	UTF8_CLEAN_CONTROLS = 1 << 0,
	/* ... but a tab is kept. */
	UTF8_CLEAN_KEEP_TAB = 1 << 1,
	/* '?' as the replacement instead of U+FFFD. */
	UTF8_CLEAN_ASCII = 1 << 2,
};

/* A copy of the len bytes at s (malloc'd, NUL-terminated; NULL when out of
 * memory) that is valid UTF-8 without NUL: each invalid byte, NUL and, with
 * UTF8_CLEAN_CONTROLS, each control character becomes one replacement. */
char *utf8_clean(const char *s, size_t len, unsigned int flags);

/* Whether utf8_clean(s, strlen(s), flags) would change nothing. */
bool utf8_is_clean(const char *s, unsigned int flags);

#endif /* UTF8_H */
