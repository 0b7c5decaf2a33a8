/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Kernel symbols from /proc/kallsyms: the kernel's text and its modules',
 * sorted once, for the kernel frames of --native's samples and for the
 * places of the kernel's uprobe code (the loader).  Addresses are
 * zero there unless the reader may see them (kernel.kptr_restrict): the
 * table is then empty and frames go unnamed.
 */
#ifndef KSYMS_H
#define KSYMS_H

#include <stddef.h>
#include <stdint.h>

struct ksyms;

/* Reads the file (NULL: /proc/kallsyms).  NULL and errno. */
struct ksyms *ksyms__load(const char *path);
void ksyms__free(struct ksyms *k);
size_t ksyms__count(const struct ksyms *k);

/* The function holding addr: its name (valid until ksyms__free), module
 * ("" for the kernel's own text) and addr's offset into it; NULL when none
 * does. */
const char *ksyms__resolve(const struct ksyms *k, uint64_t addr, const char **module,
			   uint64_t *offset);

/* The kernel's own function `name`: its start and end (the next function's
 * start, 0 for the last).  0, or -ENOENT. */
int ksyms__find(const struct ksyms *k, const char *name, uint64_t *start, uint64_t *end);

#endif /* KSYMS_H */
