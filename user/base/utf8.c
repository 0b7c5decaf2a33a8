// SPDX-License-Identifier: BSD-2-Clause
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	uint32_t c;
	size_t len, i;

	if (!n)
		return 0;
	if (s[0] < 0x80)
		len = 1, c = s[0];
	else if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, c = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, c = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, c = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && c < 0x800) || (len == 4 && c < 0x10000) || c > 0x10ffff ||
	    (c >= 0xd800 && c <= 0xdfff))
		return 0;
	if (cp)
		*cp = c;
	return len;
}

size_t utf8_seq_len(const unsigned char *s, size_t n)
{
	return utf8_decode(s, n, NULL);
}

bool utf8_is_control(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}

/* Length of the character at p (left bytes) when it is kept as is; 0 when
 * it is replaced, with the bytes it takes in *skip. */
static size_t kept_len(const unsigned char *p, size_t left, unsigned int flags, size_t *skip)
{
	uint32_t cp;
	size_t n = utf8_decode(p, left, &cp);

	*skip = n ? n : 1;
	if (!n || !cp)
		return 0;
	if ((flags & UTF8_CLEAN_CONTROLS) && utf8_is_control(cp) &&
	    !(cp == '\t' && (flags & UTF8_CLEAN_KEEP_TAB)))
		return 0;
	return n;
}

char *utf8_clean(const char *s, size_t len, unsigned int flags)
{
	const unsigned char *p = (const unsigned char *)s;
	const char *rep = flags & UTF8_CLEAN_ASCII ? "?" : "\xef\xbf\xbd";
	size_t rlen = strlen(rep), skip, n;
	/* A replacement is at most three bytes for the one it replaces. */
	char *out = malloc(len * 3 + 1), *o = out;

	if (!out)
		return NULL;
	while (len) {
		n = kept_len(p, len, flags, &skip);
		if (n) {
			memcpy(o, p, n);
			o += n;
		} else {
			memcpy(o, rep, rlen);
			o += rlen;
		}
		p += skip;
		len -= skip;
	}
	*o = '\0';
	return out;
}

bool utf8_is_clean(const char *s, unsigned int flags)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t left = strlen(s), skip;

	for (; left; p += skip, left -= skip) {
		if (!kept_len(p, left, flags, &skip))
			return false;
	}
	return true;
}
