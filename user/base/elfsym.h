/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Symbols and program headers of one ELF file, read with libelf.
 *
 * The files are those of a profiled process and so untrusted: a corrupt or
 * truncated file makes elf_file__open() fail (or a lookup return an error),
 * never crash.  An open elf_file keeps its file descriptor until freed.
 */
#ifndef ELFSYM_H
#define ELFSYM_H

#include <stdint.h>

struct elf_file;
struct procmaps;

/* Returns NULL and sets errno (EINVAL for a file that is not a usable ELF). */
struct elf_file *elf_file__open(const char *path);
void elf_file__free(struct elf_file *e);

/* The n bytes at file offset off into buf: 0, -EINVAL (not all within the
 * file), -EIO (read short), or -errno. */
int elf_file__read(const struct elf_file *e, uint64_t off, void *buf, size_t n);

/* ET_EXEC, ET_DYN, ... from the ELF header. */
int elf_file__type(const struct elf_file *e);

/* The contents of section `name` (valid until elf_file__free): 0, or
 * -ENOENT / -EINVAL. */
int elf_file__section(const struct elf_file *e, const char *name, const void **data, size_t *size);

/* Where the function holding vaddr starts, from the unwind data's sorted
 * table (.eh_frame_hdr): for code no symbol names.  0, or -ENOENT. */
int elf_file__func_start(const struct elf_file *e, uint64_t vaddr, uint64_t *start);

/* The unwind data's sorted table (.eh_frame_hdr): count pairs of 4-byte
 * values relative to base, each a function's start and its FDE's address
 * (the encoding linkers write; others give -ENOENT).  0 or -ENOENT. */
int elf_file__fde_table(const struct elf_file *e, const int32_t **table, uint32_t *count,
			uint64_t *base);

/* libelf's handle of the file (for libdw), valid until elf_file__free. */
typedef struct Elf Elf;
Elf *elf_file__elf(const struct elf_file *e);

/* The first DT_NEEDED entry that starts with prefix (valid until
 * elf_file__free), or NULL. */
const char *elf_file__needed(const struct elf_file *e, const char *prefix);

/* DT_RUNPATH, else DT_RPATH, as written (':'-separated, $ORIGIN unexpanded;
 * valid until elf_file__free), or NULL. */
const char *elf_file__search_path(const struct elf_file *e);

/*
 * The pointer the dynamic loader leaves at link-time address vaddr before
 * the program runs, as a link-time address: the addend of a relative
 * relocation there, or, in a position-dependent file without one, the bytes
 * of the file.  0, -ENOTSUP (a relocation against a symbol), -ENOENT (none
 * known), or -errno.
 */
int elf_file__pointer_at(const struct elf_file *e, uint64_t vaddr, uint64_t *value);

/*
 * Looks name up in .symtab, then in .dynsym (defined symbols only).
 * Returns 0 or -ENOENT; value and size may be NULL.
 */
int elf_file__find_symbol(const struct elf_file *e, const char *name, uint64_t *value,
			  uint64_t *size);

/* p_vaddr and p_offset of the first PT_LOAD; 0 or -ENOENT. */
int elf_file__first_load(const struct elf_file *e, uint64_t *vaddr, uint64_t *offset);

/*
 * Writes the [p_vaddr, p_vaddr + p_memsz) ranges of the executable PT_LOADs,
 * at most max of them, and returns how many it wrote (or -EINVAL).
 */
int elf_file__exec_ranges(const struct elf_file *e, uint64_t (*ranges)[2], int max);

/*
 * The end (p_vaddr + p_memsz) of the last writable PT_LOAD: 0 or -ENOENT.
 * The bytes from there to the end of its page are mapped with it and belong
 * to nothing the file defines.
 */
int elf_file__writable_end(const struct elf_file *e, uint64_t *end);

/*
 * Converts a file offset to a link-time virtual address through the PT_LOAD
 * that maps it: 0 or -ENOENT.
 */
int elf_file__offset_to_vaddr(const struct elf_file *e, uint64_t off, uint64_t *vaddr);

/*
 * Converts a link-time virtual address to its file offset through the
 * PT_LOAD whose file bytes hold it: 0 or -ENOENT.
 */
int elf_file__vaddr_to_offset(const struct elf_file *e, uint64_t vaddr, uint64_t *off);

/*
 * Finds the function (STT_FUNC or STT_GNU_IFUNC with a size, from .symtab and
 * .dynsym) whose [st_value, st_value + st_size) holds vaddr.  *name stays
 * valid until elf_file__free().  Returns 0 or -ENOENT.
 */
int elf_file__symbolize(const struct elf_file *e, uint64_t vaddr, const char **name,
			uint64_t *offset);

/*
 * The load bias of e as mapped at path in m: the start of the mapping of path
 * whose file offset is (first PT_LOAD p_offset & ~0xfff), minus
 * (first PT_LOAD p_vaddr & ~0xfff).  The runtime address of a symbol is
 * bias + st_value.  Returns 0 or -ENOENT.
 */
int procmaps_load_bias(const struct procmaps *m, const char *path, const struct elf_file *e,
		       uint64_t *bias);

#endif /* ELFSYM_H */
