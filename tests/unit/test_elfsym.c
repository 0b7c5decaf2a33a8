// SPDX-License-Identifier: BSD-2-Clause
/*
 * elfsym on real interpreters (pyenv's libpython3.12, Debian's stripped
 * python3.11), on a tiny fixture binary, and on broken copies of it, which
 * must give errors and never crash.  Run from the repository root, or set
 * FIXTURES; LIBPYTHON312 overrides where libpython3.12 is looked for.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/elfsym.h"
#include "base/procmaps.h"
#include "testlib.h"

#define DEBIAN_PYTHON "/usr/bin/python3.11"
/* The paths as the maps fixtures recorded them. */
#define FIXTURE_LIBPYTHON "/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0"

static const char *fixture(const char *sub, const char *name)
{
	static char path[4096];
	const char *dir = getenv("FIXTURES");

	snprintf(path, sizeof(path), "%s/%s/%s", dir ? dir : "tests/fixtures", sub, name);
	return path;
}

/* pyenv's 3.12.1 libpython: $LIBPYTHON312, else where pyenv (or its root,
 * $PYENV_ROOT or ~/.pyenv) has it. */
static const char *libpython312(void)
{
	static char path[4096];
	const char *env = getenv("LIBPYTHON312"), *home = getenv("HOME");
	const char *root = getenv("PYENV_ROOT");
	char prefix[4000] = "";
	FILE *p;

	if (env)
		return env;
	p = popen("pyenv prefix 3.12.1 2>/dev/null", "r");
	if (p) {
		if (!fgets(prefix, sizeof(prefix), p))
			prefix[0] = '\0';
		pclose(p);
	}
	prefix[strcspn(prefix, "\n")] = '\0';
	if (prefix[0])
		snprintf(path, sizeof(path), "%s/lib/libpython3.12.so.1.0", prefix);
	else if (root && *root)
		snprintf(path, sizeof(path), "%s/versions/3.12.1/lib/libpython3.12.so.1.0", root);
	else
		snprintf(path, sizeof(path), "%s/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0",
			 home ? home : "/root");
	return path;
}

/* Opens a real binary the test needs; a missing one is a failure, said so. */
static struct elf_file *open_required(const char *path)
{
	struct elf_file *e;

	if (access(path, R_OK)) {
		fprintf(stderr, "required binary missing: %s (%s)\n", path, strerror(errno));
		CHECK(!"required binary present");
		return NULL;
	}
	e = elf_file__open(path);
	if (!e)
		fprintf(stderr, "failed to open %s: %s\n", path, strerror(errno));
	CHECK(e);
	return e;
}

static struct procmaps *load_maps_fixture(const char *name)
{
	struct procmaps *m = NULL;
	FILE *f;

	f = fopen(fixture("procmaps", name), "r");
	if (f) {
		m = procmaps__parse(f);
		fclose(f);
	} else {
		fprintf(stderr, "missing fixture %s\n", fixture("procmaps", name));
	}
	CHECK(m);
	return m;
}

/* Looks up name, then symbolizes name + delta and expects name back. */
static void check_roundtrip(const struct elf_file *e, const char *name, uint64_t delta)
{
	uint64_t value = 0, size = 0, off = ~0ULL;
	const char *got = NULL;

	CHECK_EQ_INT(elf_file__find_symbol(e, name, &value, &size), 0);
	CHECK(size > delta);
	CHECK_EQ_INT(elf_file__symbolize(e, value + delta, &got, &off), 0);
	CHECK_EQ_STR(got, name);
	CHECK_EQ_INT(off, delta);
}

/* The unwind data's table gives a function's start from any address in
 * it: the symbol's value. */
static void check_func_start(const struct elf_file *e, const char *name, uint64_t delta)
{
	uint64_t value, size, start = 0;

	CHECK_EQ_INT(elf_file__find_symbol(e, name, &value, &size), 0);
	CHECK(size > delta);
	CHECK_EQ_INT(elf_file__func_start(e, value + delta, &start), 0);
	CHECK_EQ_INT(start, value);
}

static void test_libpython312(void)
{
	uint64_t value, size, vaddr, off, bias = 0, ranges[4][2];
	const char *path = libpython312();
	struct procmaps *m;
	struct elf_file *e;
	int n;

	if (access(path, R_OK))
		SKIP_TEST("%s: %s (pyenv install 3.12.1, or set LIBPYTHON312)", path,
			  strerror(errno));
	e = open_required(path);
	if (!e)
		return;
	CHECK_EQ_INT(elf_file__type(e), ET_DYN);
	CHECK_EQ_INT(elf_file__find_symbol(e, "_PyRuntime", &value, &size), 0);
	CHECK(value && size);
	CHECK_EQ_INT(elf_file__find_symbol(e, "Py_Version", &value, &size), 0);
	CHECK_EQ_INT(size, sizeof(unsigned long)); /* const unsigned long */
	CHECK_EQ_INT(elf_file__find_symbol(e, "_PyEval_EvalFrameDefault", NULL, NULL), 0);
	/* A local symbol: only in .symtab. */
	CHECK_EQ_INT(elf_file__find_symbol(e, "_PyEval_EvalFrameDefault.cold", NULL, NULL), 0);
	CHECK_EQ_INT(elf_file__find_symbol(e, "no_such_symbol_anywhere", NULL, NULL), -ENOENT);
	CHECK_EQ_INT(elf_file__find_symbol(e, "", NULL, NULL), -ENOENT);
	check_roundtrip(e, "_PyEval_EvalFrameDefault", 16);
	check_roundtrip(e, "_PyEval_EvalFrameDefault", 0);
	check_roundtrip(e, "PyObject_GetAttr", 1);
	check_func_start(e, "_PyEval_EvalFrameDefault", 4000);
	check_func_start(e, "PyObject_GetAttr", 1);
	check_func_start(e, "PyObject_GetAttr", 0);
	/* Below the first function the unwind data covers: none. */
	CHECK_EQ_INT(elf_file__func_start(e, 0, &value), -ENOENT);

	CHECK_EQ_INT(elf_file__first_load(e, &vaddr, &off), 0);
	CHECK_EQ_INT(vaddr, 0);
	CHECK_EQ_INT(off, 0);
	/* The eval loop lies in the one executable segment. */
	n = elf_file__exec_ranges(e, ranges, 4);
	CHECK_EQ_INT(n, 1);
	elf_file__find_symbol(e, "_PyEval_EvalFrameDefault", &value, &size);
	CHECK(n == 1 && ranges[0][0] <= value && value + size <= ranges[0][1]);

	/* From the captured maps: libpython mapped at 0x7feeb9c00000. */
	m = load_maps_fixture("pyenv-python3.12.maps");
	if (m) {
		CHECK_EQ_INT(procmaps_load_bias(m, FIXTURE_LIBPYTHON, e, &bias), 0);
		CHECK_EQ_INT(bias, 0x7feeb9c00000ULL);
		CHECK_EQ_INT(procmaps_load_bias(m, "/not/mapped.so", e, &bias), -ENOENT);
	}
	procmaps__free(m);
	elf_file__free(e);
}

static void test_debian_python311(void)
{
	uint64_t value, size, vaddr, off, bias = 1, ranges[4][2];
	struct procmaps *m;
	struct elf_file *e;

	e = open_required(DEBIAN_PYTHON);
	if (!e)
		return;
	CHECK_EQ_INT(elf_file__type(e), ET_EXEC);
	/* Stripped: the data symbols come from .dynsym. */
	CHECK_EQ_INT(elf_file__find_symbol(e, "_PyRuntime", &value, &size), 0);
	CHECK(value >= 0x400000 && size);
	CHECK_EQ_INT(elf_file__find_symbol(e, "Py_Version", NULL, &size), 0);
	CHECK_EQ_INT(size, sizeof(unsigned long));
	CHECK_EQ_INT(elf_file__find_symbol(e, "_PyEval_EvalFrameDefault.cold", NULL, NULL),
		     -ENOENT);
	check_roundtrip(e, "_PyEval_EvalFrameDefault", 16);
	/* Stripped of .symtab, the unwind data still knows where each
	 * function starts. */
	check_func_start(e, "_PyEval_EvalFrameDefault", 16);
	CHECK_EQ_INT(elf_file__first_load(e, &vaddr, &off), 0);
	CHECK_EQ_INT(vaddr, 0x400000);
	CHECK_EQ_INT(off, 0);
	CHECK_EQ_INT(elf_file__exec_ranges(e, ranges, 4), 1);

	/* Non-PIE: the bias is zero. */
	m = load_maps_fixture("debian-python3.11.maps");
	if (m) {
		CHECK_EQ_INT(procmaps_load_bias(m, DEBIAN_PYTHON, e, &bias), 0);
		CHECK_EQ_INT(bias, 0);
	}
	procmaps__free(m);
	elf_file__free(e);
}

static void test_tiny(void)
{
	uint64_t value, size, vaddr, off, ranges[4][2];
	const char *name;
	struct elf_file *e;

	e = open_required(fixture("elf", "tiny.elf"));
	if (!e)
		return;
	CHECK_EQ_INT(elf_file__type(e), ET_EXEC);
	CHECK_EQ_INT(elf_file__find_symbol(e, "tiny_add", &value, &size), 0);
	CHECK_EQ_INT(value, 0x401000);
	CHECK_EQ_INT(size, 10);
	CHECK_EQ_INT(elf_file__find_symbol(e, "tiny_counter", &value, &size), 0);
	CHECK_EQ_INT(value, 0x402000);
	CHECK_EQ_INT(size, 4);
	check_roundtrip(e, "tiny_add", 3);
	check_roundtrip(e, "tiny_mul", 0);
	check_roundtrip(e, "_start", 43);

	/* Past tiny_add's size, in the padding before tiny_mul. */
	CHECK_EQ_INT(elf_file__symbolize(e, 0x40100a, &name, &off), -ENOENT);
	CHECK_EQ_INT(elf_file__symbolize(e, 0x40103f, &name, &off), -ENOENT);
	CHECK_EQ_INT(elf_file__symbolize(e, 0x401040, &name, NULL), 0);
	CHECK_EQ_INT(elf_file__symbolize(e, 0x400fff, &name, &off), -ENOENT);
	CHECK_EQ_INT(elf_file__symbolize(e, 0x401078, &name, &off), -ENOENT);
	CHECK_EQ_INT(elf_file__symbolize(e, 0, &name, &off), -ENOENT);
	CHECK_EQ_INT(elf_file__symbolize(e, UINT64_MAX, &name, &off), -ENOENT);
	/* Data is not a function. */
	CHECK_EQ_INT(elf_file__symbolize(e, 0x402000, &name, &off), -ENOENT);

	CHECK_EQ_INT(elf_file__first_load(e, &vaddr, &off), 0);
	CHECK_EQ_INT(vaddr, 0x400000);
	CHECK_EQ_INT(elf_file__exec_ranges(e, ranges, 4), 1);
	CHECK_EQ_INT(ranges[0][0], 0x401000);
	CHECK_EQ_INT(ranges[0][1], 0x401078);
	CHECK_EQ_INT(elf_file__exec_ranges(e, ranges, 0), 0);
	CHECK_EQ_INT(elf_file__exec_ranges(e, ranges, -1), -EINVAL);
	/* The RW segment: 8 bytes of bss at 0x402000. */
	CHECK_EQ_INT(elf_file__writable_end(e, &vaddr), 0);
	CHECK_EQ_INT(vaddr, 0x402008);

	CHECK_EQ_INT(elf_file__offset_to_vaddr(e, 0x1003, &vaddr), 0);
	CHECK_EQ_INT(vaddr, 0x401003);
	CHECK_EQ_INT(elf_file__offset_to_vaddr(e, 0x10, &vaddr), 0);
	CHECK_EQ_INT(vaddr, 0x400010);
	CHECK_EQ_INT(elf_file__offset_to_vaddr(e, 0x100000, &vaddr), -ENOENT);
	/* And back: a function's address to where its bytes are in the file. */
	CHECK_EQ_INT(elf_file__vaddr_to_offset(e, 0x401003, &off), 0);
	CHECK_EQ_INT(off, 0x1003);
	CHECK_EQ_INT(elf_file__vaddr_to_offset(e, 0x400010, &off), 0);
	CHECK_EQ_INT(off, 0x10);
	CHECK_EQ_INT(elf_file__vaddr_to_offset(e, 0x3fffff, &off), -ENOENT);
	CHECK_EQ_INT(elf_file__vaddr_to_offset(e, UINT64_MAX, &off), -ENOENT);
	elf_file__free(e);
	elf_file__free(NULL);
}

/* Calls everything on e; under the sanitizers, this is the crash check. */
static void exercise(const struct elf_file *e)
{
	uint64_t v, s, ranges[8][2];
	const char *name;

	elf_file__type(e);
	elf_file__find_symbol(e, "tiny_add", &v, &s);
	elf_file__find_symbol(e, "missing", &v, &s);
	elf_file__first_load(e, &v, &s);
	elf_file__exec_ranges(e, ranges, 8);
	elf_file__offset_to_vaddr(e, 0x1003, &v);
	elf_file__vaddr_to_offset(e, 0x401003, &v);
	elf_file__symbolize(e, 0x401003, &name, &v);
}

static void test_broken_fixtures(void)
{
	static const struct {
		const char *name;
		int must_fail;
	} cases[] = {
		{ "trunc-0.elf", 1 },
		{ "trunc-10.elf", 1 },
		{ "trunc-64.elf", 1 },
		{ "trunc-200.elf", 1 },
		{ "trunc-shdrs.elf", 1 },
		{ "trunc-last-byte.elf", 1 },
		{ "not-elf.bin", 1 },
		{ "bad-shoff.elf", 1 },
		{ "bad-phoff.elf", 1 },
		{ "bad-phnum.elf", 1 },
		{ "bad-symtab-link.elf", 1 },
		{ "bad-symtab-size.elf", 1 },
		{ "bad-symtab-offset.elf", 1 },
		/* Section names are not used; a bad index is harmless. */
		{ "bad-shstrndx.elf", 0 },
		/* Unreadable names: opens, but no symbol can be found. */
		{ "bad-strtab-offset.elf", 0 },
		{ "bad-strtab-size.elf", 0 },
	};
	const char *path, *name;
	struct elf_file *e;
	uint64_t off;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		path = fixture("elf", cases[i].name);
		if (access(path, R_OK)) {
			fprintf(stderr, "missing fixture %s\n", path);
			CHECK(!"fixture present");
			continue;
		}
		errno = 0;
		e = elf_file__open(path);
		if (cases[i].must_fail && e)
			fprintf(stderr, "%s: opened but should not have\n", cases[i].name);
		if (cases[i].must_fail) {
			CHECK(!e);
			CHECK_EQ_INT(errno, EINVAL);
		}
		if (!e)
			continue;
		exercise(e);
		if (strstr(cases[i].name, "strtab")) {
			CHECK_EQ_INT(elf_file__find_symbol(e, "tiny_add", NULL, NULL), -ENOENT);
			CHECK_EQ_INT(elf_file__symbolize(e, 0x401003, &name, &off), -ENOENT);
		} else {
			check_roundtrip(e, "tiny_add", 3);
		}
		elf_file__free(e);
	}
	errno = 0;
	CHECK(!elf_file__open(fixture("elf", "no-such-file.elf")));
	CHECK_EQ_INT(errno, ENOENT);
	errno = 0;
	CHECK(!elf_file__open("/proc/self"));
	CHECK_EQ_INT(errno, EINVAL);
	/* Not regular files: refused before they are opened. */
	errno = 0;
	CHECK(!elf_file__open("/dev/null"));
	CHECK_EQ_INT(errno, EINVAL);
}

static int write_file(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "w");
	int ok;

	if (!f)
		return -1;
	ok = fwrite(buf, 1, len, f) == len;
	return fclose(f) || !ok ? -1 : 0;
}

/*
 * Every truncation of tiny.elf, and every single-byte corruption of it: open
 * either fails or gives an object that every call can use.
 */
static void test_mutations(void)
{
	char tmp[] = "/tmp/elfsym-test-XXXXXX";
	unsigned char *buf = NULL, *copy = NULL;
	struct elf_file *e;
	long len = 0, i;
	int fd, opened = 0;
	FILE *f;

	f = fopen(fixture("elf", "tiny.elf"), "r");
	CHECK(f);
	if (!f)
		return;
	if (!fseek(f, 0, SEEK_END))
		len = ftell(f);
	rewind(f);
	buf = malloc(len);
	copy = malloc(len);
	CHECK(len > 0 && buf && copy && fread(buf, 1, len, f) == (size_t)len);
	fclose(f);
	fd = mkstemp(tmp);
	CHECK(fd >= 0);
	if (fd < 0 || len <= 0 || !buf || !copy)
		goto out;
	close(fd);

	for (i = 0; i <= len; i++) {
		CHECK_EQ_INT(write_file(tmp, buf, i), 0);
		e = elf_file__open(tmp);
		if (i < len)
			CHECK(!e); /* the section headers are at the end */
		else
			CHECK(e);
		if (e)
			exercise(e);
		elf_file__free(e);
	}
	for (i = 0; i < len; i++) {
		memcpy(copy, buf, len);
		copy[i] ^= (i & 1) ? 0xff : 0x80;
		CHECK_EQ_INT(write_file(tmp, copy, len), 0);
		e = elf_file__open(tmp);
		if (e) {
			opened++;
			exercise(e);
		}
		elf_file__free(e);
	}
	/* Most bytes (code, padding, names) do not stop the file from opening. */
	CHECK(opened > len / 2);
out:
	unlink(tmp);
	free(copy);
	free(buf);
}

/*
 * The name index against a plain scan of the tables: every defined, named
 * symbol of libpython's .symtab (the first 3000) is found as the first of its
 * name there, and every one of .dynsym (the first 3000) is found.
 */
static void test_lookup_agrees_with_scan(void)
{
	const char *path = libpython312();
	struct elf_file *e;
	Elf_Scn *scn = NULL;
	int fd, checked = 0, wrong = 0;
	Elf *elf;

	if (access(path, R_OK))
		SKIP_TEST("%s: %s", path, strerror(errno));
	e = open_required(path);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	if (!e || fd < 0)
		goto out;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	CHECK(elf != NULL);
	for (int pass = 0; elf && pass < 2; pass++) {
		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			Elf_Data *d;

			if (!gelf_getshdr(scn, &sh) ||
			    sh.sh_type != (pass ? SHT_DYNSYM : SHT_SYMTAB) || !sh.sh_entsize)
				continue;
			d = elf_getdata(scn, NULL);
			for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
				GElf_Sym sym, first;
				const char *name;
				uint64_t value, size;
				bool seen = false;

				if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
				    !sym.st_name)
					continue;
				name = elf_strptr(elf, sh.sh_link, sym.st_name);
				if (!name)
					continue;
				/* The first of the name in .symtab (then .dynsym) order. */
				first = sym;
				for (size_t j = 0; j < i && !seen; j++) {
					GElf_Sym o;
					const char *on;

					if (gelf_getsym(d, (int)j, &o) && o.st_shndx != SHN_UNDEF &&
					    o.st_name &&
					    (on = elf_strptr(elf, sh.sh_link, o.st_name)) &&
					    !strcmp(on, name)) {
						first = o;
						seen = true;
					}
				}
				/* .dynsym's names: found (an exported symbol is in
				 * .symtab too, which comes first, with the same value
				 * but not always the same size). */
				if (elf_file__find_symbol(e, name, &value, &size) ||
				    (!pass && (value != first.st_value || size != first.st_size)))
					wrong++;
				checked++;
				if (checked >= 3000) /* the scan for `first` is quadratic */
					break;
			}
		}
		scn = NULL;
	}
	CHECK(checked >= 1000);
	CHECK_EQ_INT(wrong, 0);
	if (elf)
		elf_end(elf);
out:
	if (fd >= 0)
		close(fd);
	elf_file__free(e);
}

int main(void)
{
	RUN_TEST(test_libpython312);
	RUN_TEST(test_lookup_agrees_with_scan);
	RUN_TEST(test_debian_python311);
	RUN_TEST(test_tiny);
	RUN_TEST(test_broken_fixtures);
	RUN_TEST(test_mutations);
	return test_summary("elfsym");
}
