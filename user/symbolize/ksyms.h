/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Kernel symbols from /proc/kallsyms, for the kernel frames of --native's
 * samples: the kernel's text and its modules', sorted once.  Addresses are
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

#endif /* KSYMS_H */
