/* SPDX-License-Identifier: BSD-2-Clause */
/* Interned strings: equal strings get one pointer, valid until the table is
 * freed, so they can be compared and used as map keys by address. */
#ifndef STRTAB_H
#define STRTAB_H

struct strtab;

struct strtab *strtab__new(void);
void strtab__free(struct strtab *t);
/* The interned copy of s, or NULL when out of memory. */
const char *strtab__intern(struct strtab *t, const char *s);

#endif /* STRTAB_H */
