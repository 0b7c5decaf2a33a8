/* SPDX-License-Identifier: BSD-2-Clause */
/* UTF-8 validation shared by the JSON writer and the terminal view. */
#ifndef UTF8_H
#define UTF8_H

#include <stddef.h>

/* Length of the well-formed UTF-8 sequence at s (at most n bytes), or 0 for
 * an invalid one: bad lead or continuation bytes, overlong forms, surrogates,
 * code points past U+10FFFF. */
size_t utf8_seq_len(const unsigned char *s, size_t n);

#endif /* UTF8_H */
