// SPDX-License-Identifier: BSD-2-Clause
/*
 * ELF symbols and program headers through libelf.
 *
 * libelf bounds-checks symbol indexes, string offsets and notes against the
 * data it read; what it cannot know (a NOBITS symbol table, a string table
 * link that points at some other section, sizes that overflow) is checked
 * here.  The file is read with ELF_C_READ rather than mmap so that a binary
 * truncated while open gives read errors instead of SIGBUS.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/elfsym.h"
#include "base/hmap.h"
#include "base/procmaps.h"

#define PAGE_MASK_4K (~(uint64_t)0xfff)

enum {
	TAB_SYMTAB,
	TAB_DYNSYM,
	TAB_NR
};

struct symtab {
	Elf_Data *data; /* NULL when the file has no such table */
	size_t strndx;
	size_t count;
};

struct func {
	uint64_t start, size;
	const char *name; /* points into libelf's copy of the string table */
	int rank;	  /* lower is preferred among aliases */
};

/* A slot of the name index: which symbol (0: empty) and its name's hash. */
struct name_slot {
	uint32_t sym; /* 1 + its index, SLOT_DYNSYM set for .dynsym */
	uint32_t hash;
};
#define SLOT_DYNSYM 0x80000000u

struct elf_file {
	int fd;
	uint64_t file_size;
	Elf *elf;
	int type;
	GElf_Phdr *phdrs;
	size_t nphdrs;
	struct symtab tabs[TAB_NR];
	/*
	 * Built on first use (elf_file__symbolize, elf_file__find_symbol), as
	 * most opened files need one or neither: recognising an interpreter
	 * looks up a dozen names, symbolizing native frames addresses.  Sorting
	 * libpython's functions took 1-2 ms, and each lookup was a scan of both
	 * tables.
	 */
	bool funcs_done, names_done;
	int funcs_err, names_err;
	struct func *funcs;
	size_t nfuncs;
	struct name_slot *names;
	size_t names_mask;
};

/* Whether [off, off + size) lies within the file. */
static bool in_file(const struct elf_file *e, uint64_t off, uint64_t size)
{
	return off <= e->file_size && size <= e->file_size - off;
}

/*
 * libelf accepts some truncated files (a section header table cut short
 * reads as no sections at all), so the tables are checked against the file
 * size.
 */
static bool tables_in_file(const struct elf_file *e, const GElf_Ehdr *ehdr, size_t nphdrs,
			   size_t nshdrs)
{
	/* libelf reports no sections when their table does not fit the file. */
	if (ehdr->e_shnum ? nshdrs != ehdr->e_shnum : ehdr->e_shoff && !nshdrs)
		return false;
	if (nphdrs &&
	    (ehdr->e_phentsize < sizeof(Elf32_Phdr) || nphdrs > UINT64_MAX / ehdr->e_phentsize ||
	     !in_file(e, ehdr->e_phoff, nphdrs * ehdr->e_phentsize)))
		return false;
	if (nshdrs &&
	    (ehdr->e_shentsize < sizeof(Elf32_Shdr) || nshdrs > UINT64_MAX / ehdr->e_shentsize ||
	     !in_file(e, ehdr->e_shoff, nshdrs * ehdr->e_shentsize)))
		return false;
	return true;
}

static int load_phdrs(struct elf_file *e)
{
	size_t i, n;

	if (elf_getphdrnum(e->elf, &n))
		return -EINVAL;
	if (!n)
		return 0;
	e->phdrs = calloc(n, sizeof(*e->phdrs));
	if (!e->phdrs)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(e->elf, (int)i, &e->phdrs[i]))
			return -EINVAL;
		/* A cut-off segment means a truncated file. */
		if (e->phdrs[i].p_type == PT_LOAD &&
		    !in_file(e, e->phdrs[i].p_offset, e->phdrs[i].p_filesz))
			return -EINVAL;
	}
	e->nphdrs = n;
	return 0;
}

static int load_symtab(struct elf_file *e, Elf_Scn *scn, const GElf_Shdr *sh, struct symtab *t)
{
	GElf_Shdr strsh;
	Elf_Scn *strscn;
	Elf_Data *data;
	size_t entsz;

	if (t->data)
		return 0; /* only the first table of each kind counts */
	if (sh->sh_type == SHT_NOBITS || !sh->sh_size)
		return 0;
	if (!in_file(e, sh->sh_offset, sh->sh_size))
		return -EINVAL;
	data = elf_getdata(scn, NULL);
	if (!data)
		return -EINVAL;
	if (!data->d_buf || !data->d_size)
		return 0;
	strscn = elf_getscn(e->elf, sh->sh_link);
	if (!strscn || !gelf_getshdr(strscn, &strsh) || strsh.sh_type != SHT_STRTAB ||
	    !in_file(e, strsh.sh_offset, strsh.sh_size))
		return -EINVAL;
	entsz = gelf_fsize(e->elf, ELF_T_SYM, 1, EV_CURRENT);
	if (!entsz)
		return -EINVAL;
	if (data->d_size / entsz > INT_MAX) /* gelf_getsym() takes an int */
		return -EINVAL;
	t->data = data;
	t->strndx = sh->sh_link;
	t->count = data->d_size / entsz;
	return 0;
}

static int load_sections(struct elf_file *e)
{
	Elf_Scn *scn = NULL;
	size_t n, seen = 0;
	GElf_Shdr sh;
	int err;

	if (elf_getshdrnum(e->elf, &n))
		return -EINVAL;
	while ((scn = elf_nextscn(e->elf, scn))) {
		seen++;
		if (!gelf_getshdr(scn, &sh))
			return -EINVAL;
		err = 0;
		if (sh.sh_type == SHT_SYMTAB) {
			err = load_symtab(e, scn, &sh, &e->tabs[TAB_SYMTAB]);
		} else if (sh.sh_type == SHT_DYNSYM) {
			err = load_symtab(e, scn, &sh, &e->tabs[TAB_DYNSYM]);
		}
		if (err)
			return err;
	}
	/* elf_nextscn() also ends on an error; section 0 is not visited. */
	if (n && seen != n - 1)
		return -EINVAL;
	return 0;
}

static int leading_underscores(const char *s)
{
	int n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

static int bind_rank(int bind)
{
	if (bind == STB_GLOBAL)
		return 0;
	if (bind == STB_WEAK)
		return 1;
	return 2;
}

/* By address; among aliases the preferred name first, so that dedup keeps it. */
static int cmp_func(const void *a, const void *b)
{
	const struct func *x = a, *y = b;
	int ux, uy;

	if (x->start != y->start)
		return (x->start > y->start) - (x->start < y->start);
	if (x->rank != y->rank)
		return (x->rank > y->rank) - (x->rank < y->rank);
	ux = leading_underscores(x->name);
	uy = leading_underscores(y->name);
	if (ux != uy)
		return (ux > uy) - (ux < uy);
	return strcmp(x->name, y->name);
}

static int collect_funcs(struct elf_file *e)
{
	size_t total = 0, i, t, kept = 0;
	const char *name;
	struct func *f;
	GElf_Sym sym;
	int type;

	for (t = 0; t < TAB_NR; t++)
		total += e->tabs[t].count;
	if (!total)
		return 0;
	e->funcs = calloc(total, sizeof(*e->funcs));
	if (!e->funcs)
		return -ENOMEM;
	for (t = 0; t < TAB_NR; t++) {
		for (i = 0; i < e->tabs[t].count; i++) {
			if (!gelf_getsym(e->tabs[t].data, (int)i, &sym))
				break;
			type = GELF_ST_TYPE(sym.st_info);
			if ((type != STT_FUNC && type != STT_GNU_IFUNC) || !sym.st_size ||
			    sym.st_shndx == SHN_UNDEF || sym.st_value > UINT64_MAX - sym.st_size)
				continue;
			name = elf_strptr(e->elf, e->tabs[t].strndx, sym.st_name);
			if (!name || !*name)
				continue;
			f = &e->funcs[e->nfuncs++];
			f->start = sym.st_value;
			f->size = sym.st_size;
			f->name = name;
			f->rank = bind_rank(GELF_ST_BIND(sym.st_info));
		}
	}
	if (!e->nfuncs)
		return 0;
	qsort(e->funcs, e->nfuncs, sizeof(*e->funcs), cmp_func);
	/* .symtab and .dynsym repeat each other; keep one name per address. */
	for (i = 0; i < e->nfuncs; i++) {
		if (kept && e->funcs[kept - 1].start == e->funcs[i].start) {
			if (e->funcs[i].size > e->funcs[kept - 1].size)
				e->funcs[kept - 1].size = e->funcs[i].size;
			continue;
		}
		e->funcs[kept++] = e->funcs[i];
	}
	e->nfuncs = kept;
	return 0;
}

struct elf_file *elf_file__open(const char *path)
{
	size_t nphdrs, nshdrs;
	struct elf_file *e;
	GElf_Ehdr ehdr;
	struct stat st;
	int err;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		errno = ENOTSUP;
		return NULL;
	}
	/*
	 * Mapped device nodes (GPU drivers map some) must not even be opened:
	 * opening one can have side effects.
	 */
	if (stat(path, &st))
		return NULL;
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (e->fd < 0) {
		err = -errno;
		goto cleanup;
	}
	if (fstat(e->fd, &st)) {
		err = -errno;
		goto cleanup;
	}
	if (!S_ISREG(st.st_mode)) {
		err = -EINVAL;
		goto cleanup;
	}
	e->file_size = st.st_size;
	e->elf = elf_begin(e->fd, ELF_C_READ, NULL);
	if (!e->elf || elf_kind(e->elf) != ELF_K_ELF || !gelf_getehdr(e->elf, &ehdr) ||
	    elf_getphdrnum(e->elf, &nphdrs) || elf_getshdrnum(e->elf, &nshdrs) ||
	    !tables_in_file(e, &ehdr, nphdrs, nshdrs)) {
		err = -EINVAL;
		goto cleanup;
	}
	e->type = ehdr.e_type;
	err = load_phdrs(e);
	if (err)
		goto cleanup;
	err = load_sections(e);
cleanup:
	if (err) {
		elf_file__free(e);
		errno = -err;
		return NULL;
	}
	return e;
}

void elf_file__free(struct elf_file *e)
{
	if (!e)
		return;
	free(e->funcs);
	free(e->names);
	free(e->phdrs);
	if (e->elf)
		elf_end(e->elf);
	if (e->fd >= 0)
		close(e->fd);
	free(e);
}

int elf_file__read(const struct elf_file *e, uint64_t off, void *buf, size_t n)
{
	ssize_t got;

	if (!in_file(e, off, n))
		return -EINVAL;
	got = pread(e->fd, buf, n, (off_t)off);
	if (got < 0)
		return -errno;
	return (size_t)got == n ? 0 : -EIO;
}

int elf_file__type(const struct elf_file *e)
{
	return e->type;
}

/* The section called name: its header and its bytes. */
static int section_of(const struct elf_file *e, const char *name, GElf_Shdr *out, const void **data,
		      size_t *size)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(e->elf, &shstrndx))
		return -EINVAL;
	while ((scn = elf_nextscn(e->elf, scn)) != NULL) {
		GElf_Shdr sh;
		Elf_Data *d;
		const char *n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		n = elf_strptr(e->elf, shstrndx, sh.sh_name);
		if (!n || strcmp(n, name))
			continue;
		/* Checked against the file size: libelf trusts the header. */
		if (!in_file(e, sh.sh_offset, sh.sh_size))
			return -EINVAL;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf)
			return -ENOENT;
		*out = sh;
		*data = d->d_buf;
		*size = d->d_size;
		return 0;
	}
	return -ENOENT;
}

int elf_file__section(const struct elf_file *e, const char *name, const void **data, size_t *size)
{
	GElf_Shdr sh;

	return section_of(e, name, &sh, data, size);
}

/* .eh_frame_hdr's encodings (the LSB's DWARF extensions): a table of 4-byte
 * signed values relative to the section's start is what linkers write. */
#define EH_PE_OMIT 0xff
#define EH_PE_DATAREL_SDATA4 0x3b

int elf_file__fde_table(const struct elf_file *e, const int32_t **table, uint32_t *count,
			uint64_t *base)
{
	const uint8_t *h;
	size_t size;
	GElf_Shdr sh;
	int skip;

	if (section_of(e, ".eh_frame_hdr", &sh, (const void **)&h, &size) || size < 12 ||
	    h[0] != 1 || h[2] == EH_PE_OMIT || h[3] != EH_PE_DATAREL_SDATA4)
		return -ENOENT;
	/* eh_frame_ptr, then fde_count: 4-byte encodings only. */
	skip = (h[1] & 0x0f) == 0x0b || (h[1] & 0x0f) == 0x03 ? 4 : -1;
	if (skip < 0 || ((h[2] & 0x0f) != 0x03 && (h[2] & 0x0f) != 0x0b))
		return -ENOENT;
	memcpy(count, h + 4 + skip, sizeof(*count));
	if (!*count || (size - 8 - skip) / 8 < *count)
		return -ENOENT;
	*table = (const int32_t *)(const void *)(h + 8 + skip);
	*base = sh.sh_addr;
	return 0;
}

int elf_file__func_start(const struct elf_file *e, uint64_t vaddr, uint64_t *start)
{
	const int32_t *t;
	uint64_t base;
	uint32_t count;
	size_t lo, hi;

	if (elf_file__fde_table(e, &t, &count, &base))
		return -ENOENT;
	/* The last entry whose function starts at or below vaddr. */
	lo = 0;
	hi = count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (base + (int64_t)t[2 * mid] <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -ENOENT;
	*start = base + (int64_t)t[2 * (lo - 1)];
	return 0;
}

Elf *elf_file__elf(const struct elf_file *e)
{
	return e->elf;
}

/* The string of the first dynamic entry with tag `tag` whose string starts
 * with prefix, or NULL. */
static const char *dyn_string(const struct elf_file *e, int64_t tag, const char *prefix)
{
	Elf_Scn *scn = NULL;
	size_t plen = strlen(prefix);

	while ((scn = elf_nextscn(e->elf, scn)) != NULL) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			return NULL;
		n = data->d_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			GElf_Dyn dyn;
			const char *name;

			if (!gelf_getdyn(data, (int)i, &dyn) || dyn.d_tag == DT_NULL)
				break;
			if (dyn.d_tag != tag)
				continue;
			name = elf_strptr(e->elf, sh.sh_link, dyn.d_un.d_val);
			if (name && !strncmp(name, prefix, plen))
				return name;
		}
	}
	return NULL;
}

const char *elf_file__needed(const struct elf_file *e, const char *prefix)
{
	return dyn_string(e, DT_NEEDED, prefix);
}

const char *elf_file__search_path(const struct elf_file *e)
{
	const char *p = dyn_string(e, DT_RUNPATH, "");

	return p ? p : dyn_string(e, DT_RPATH, "");
}

#ifndef R_AARCH64_RELATIVE
#define R_AARCH64_RELATIVE 1027
#endif

int elf_file__pointer_at(const struct elf_file *e, uint64_t vaddr, uint64_t *value)
{
	Elf_Scn *scn = NULL;
	uint64_t off;

	while ((scn = elf_nextscn(e->elf, scn)) != NULL) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			return -EINVAL;
		n = data->d_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			GElf_Rela r;
			uint32_t type;

			if (!gelf_getrela(data, (int)i, &r))
				return -EINVAL;
			if (r.r_offset != vaddr)
				continue;
			type = GELF_R_TYPE(r.r_info);
			if (type != R_X86_64_RELATIVE && type != R_AARCH64_RELATIVE)
				return -ENOTSUP;
			*value = (uint64_t)r.r_addend;
			return 0;
		}
	}
	/* No relocation: a position-dependent file holds the address itself. */
	if (e->type != ET_EXEC)
		return -ENOENT;
	if (elf_file__vaddr_to_offset(e, vaddr, &off))
		return -ENOENT;
	return elf_file__read(e, off, value, sizeof(*value));
}

/* The name of symbol `slot` (as stored in the index) and the symbol. */
static const char *slot_symbol(const struct elf_file *e, uint32_t slot, GElf_Sym *sym)
{
	const struct symtab *t = &e->tabs[slot & SLOT_DYNSYM ? TAB_DYNSYM : TAB_SYMTAB];
	uint32_t i = (slot & ~SLOT_DYNSYM) - 1;

	if (!gelf_getsym(t->data, (int)i, sym))
		return NULL;
	return elf_strptr(e->elf, t->strndx, sym->st_name);
}

static uint32_t name_hash(const char *name)
{
	uint64_t h = hash_bytes(name, strlen(name));

	return (uint32_t)(h ^ (h >> 32));
}

/* Every defined, named symbol of .symtab then .dynsym by name; the first of a
 * name is kept, as a scan of the tables in that order would find it. */
static int index_names(struct elf_file *e)
{
	size_t total = 0, size = 16, t, i, k;
	struct name_slot *slot;
	const char *name;
	GElf_Sym sym;
	uint32_t h;

	for (t = 0; t < TAB_NR; t++)
		total += e->tabs[t].data ? e->tabs[t].count : 0;
	if (total >= SLOT_DYNSYM / 2)
		return -E2BIG;
	while (size < 2 * total)
		size *= 2;
	e->names = calloc(size, sizeof(*e->names));
	if (!e->names)
		return -ENOMEM;
	e->names_mask = size - 1;
	for (t = 0; t < TAB_NR; t++) {
		if (!e->tabs[t].data)
			continue;
		for (i = 0; i < e->tabs[t].count; i++) {
			if (!gelf_getsym(e->tabs[t].data, (int)i, &sym))
				break;
			if (sym.st_shndx == SHN_UNDEF || !sym.st_name)
				continue;
			name = elf_strptr(e->elf, e->tabs[t].strndx, sym.st_name);
			if (!name)
				continue;
			h = name_hash(name);
			for (k = h & e->names_mask;; k = (k + 1) & e->names_mask) {
				GElf_Sym other;
				const char *o;

				slot = &e->names[k];
				if (!slot->sym) {
					slot->sym = (uint32_t)(i + 1) |
						    (t == TAB_DYNSYM ? SLOT_DYNSYM : 0);
					slot->hash = h;
					break;
				}
				if (slot->hash == h && (o = slot_symbol(e, slot->sym, &other)) &&
				    !strcmp(o, name))
					break; /* an earlier one of that name stands */
			}
		}
	}
	return 0;
}

int elf_file__find_symbol(const struct elf_file *ce, const char *name, uint64_t *value,
			  uint64_t *size)
{
	struct elf_file *e = (struct elf_file *)ce; /* the index is a cache */
	const struct name_slot *slot;
	const char *s;
	GElf_Sym sym;
	uint32_t h;
	size_t k;

	if (!e->names_done) {
		e->names_err = index_names(e);
		e->names_done = true;
	}
	if (e->names_err)
		return e->names_err;
	h = name_hash(name);
	for (k = h & e->names_mask;; k = (k + 1) & e->names_mask) {
		slot = &e->names[k];
		if (!slot->sym)
			return -ENOENT;
		if (slot->hash != h || !(s = slot_symbol(e, slot->sym, &sym)) || strcmp(s, name))
			continue;
		if (value)
			*value = sym.st_value;
		if (size)
			*size = sym.st_size;
		return 0;
	}
}

int elf_file__first_load(const struct elf_file *e, uint64_t *vaddr, uint64_t *offset)
{
	size_t i;

	for (i = 0; i < e->nphdrs; i++) {
		if (e->phdrs[i].p_type != PT_LOAD)
			continue;
		*vaddr = e->phdrs[i].p_vaddr;
		*offset = e->phdrs[i].p_offset;
		return 0;
	}
	return -ENOENT;
}

int elf_file__exec_ranges(const struct elf_file *e, uint64_t (*ranges)[2], int max)
{
	const GElf_Phdr *ph;
	int n = 0;
	size_t i;

	if (max < 0)
		return -EINVAL;
	for (i = 0; i < e->nphdrs && n < max; i++) {
		ph = &e->phdrs[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) ||
		    ph->p_memsz > UINT64_MAX - ph->p_vaddr)
			continue;
		ranges[n][0] = ph->p_vaddr;
		ranges[n][1] = ph->p_vaddr + ph->p_memsz;
		n++;
	}
	return n;
}

int elf_file__writable_end(const struct elf_file *e, uint64_t *end)
{
	int err = -ENOENT;
	size_t i;

	for (i = 0; i < e->nphdrs; i++) {
		const GElf_Phdr *ph = &e->phdrs[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W) ||
		    ph->p_memsz > UINT64_MAX - ph->p_vaddr)
			continue;
		if (err || ph->p_vaddr + ph->p_memsz > *end)
			*end = ph->p_vaddr + ph->p_memsz;
		err = 0;
	}
	return err;
}

int elf_file__vaddr_to_offset(const struct elf_file *e, uint64_t vaddr, uint64_t *off)
{
	size_t i;

	for (i = 0; i < e->nphdrs; i++) {
		const GElf_Phdr *ph = &e->phdrs[i];

		if (ph->p_type != PT_LOAD || ph->p_filesz > UINT64_MAX - ph->p_vaddr)
			continue;
		if (vaddr < ph->p_vaddr || vaddr >= ph->p_vaddr + ph->p_filesz)
			continue;
		*off = vaddr - ph->p_vaddr + ph->p_offset;
		return 0;
	}
	return -ENOENT;
}

int elf_file__offset_to_vaddr(const struct elf_file *e, uint64_t off, uint64_t *vaddr)
{
	const GElf_Phdr *ph;
	int pass;
	size_t i;

	/*
	 * First a segment that holds off itself; then one whose first page
	 * holds it, for the bytes a mapping rounds down to a page boundary.
	 */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < e->nphdrs; i++) {
			uint64_t lo;

			ph = &e->phdrs[i];
			if (ph->p_type != PT_LOAD || ph->p_filesz > UINT64_MAX - ph->p_offset)
				continue;
			lo = pass ? ph->p_offset & PAGE_MASK_4K : ph->p_offset;
			if (off < lo || off >= ph->p_offset + ph->p_filesz)
				continue;
			*vaddr = off - ph->p_offset + ph->p_vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

int elf_file__symbolize(const struct elf_file *ce, uint64_t vaddr, const char **name,
			uint64_t *offset)
{
	struct elf_file *e = (struct elf_file *)ce; /* the table is a cache */
	const struct func *f;
	size_t lo = 0, hi;

	if (!e->funcs_done) {
		e->funcs_err = collect_funcs(e);
		e->funcs_done = true;
	}
	if (e->funcs_err)
		return e->funcs_err;
	hi = e->nfuncs;

	/* The last function starting at or below vaddr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (e->funcs[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -ENOENT;
	f = &e->funcs[lo - 1];
	if (vaddr - f->start >= f->size)
		return -ENOENT;
	*name = f->name;
	if (offset)
		*offset = vaddr - f->start;
	return 0;
}

int procmaps_load_bias(const struct procmaps *m, const char *path, const struct elf_file *e,
		       uint64_t *bias)
{
	const struct map_entry *me;
	uint64_t vaddr, off;
	size_t i;
	int err;

	err = elf_file__first_load(e, &vaddr, &off);
	if (err)
		return err;
	for (i = 0; (me = procmaps__get(m, i)); i++) {
		if (me->offset != (off & PAGE_MASK_4K) || strcmp(me->path, path))
			continue;
		*bias = me->start - (vaddr & PAGE_MASK_4K);
		return 0;
	}
	return -ENOENT;
}
