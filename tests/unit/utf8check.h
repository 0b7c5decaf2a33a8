/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An independent UTF-8 checker for the tests (RFC 3629: shortest form only,
 * no surrogates, nothing past U+10FFFF), so that the code under test is never
 * its own judge.
 */
#ifndef UTF8CHECK_H
#define UTF8CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline bool utf8_valid(const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	while (i < len) {
		unsigned char b = s[i];
		size_t need;
		uint32_t cp, min;

		if (b < 0x80) {
			i++;
			continue;
		}
		if ((b & 0xe0) == 0xc0)
			need = 1, cp = b & 0x1f, min = 0x80;
		else if ((b & 0xf0) == 0xe0)
			need = 2, cp = b & 0x0f, min = 0x800;
		else if ((b & 0xf8) == 0xf0)
			need = 3, cp = b & 0x07, min = 0x10000;
		else
			return false;
		if (len - i - 1 < need)
			return false;
		for (size_t k = 1; k <= need; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += need + 1;
	}
	return true;
}

/* The characters of valid UTF-8 text: its bytes that do not continue one
 * (the views' text is one column a character, but for East Asian wide
 * characters and combining marks, which these tests do not use). */
static inline size_t utf8_chars(const char *str)
{
	size_t n = 0;

	for (; *str; str++)
		n += ((unsigned char)*str & 0xc0) != 0x80;
	return n;
}

#endif /* UTF8CHECK_H */
