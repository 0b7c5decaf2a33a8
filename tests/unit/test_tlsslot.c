// SPDX-License-Identifier: BSD-2-Clause
/*
 * tlsslot: the code shapes of each TLS model (bytes as gcc emits them), cut
 * short or of another shape; and live offsets, checked against where the
 * variable is: this program's own thread-local (local-exec), and a library
 * built with each model and loaded here (libtls_ie.so, libtls_gd.so, next
 * to this program).
 */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>

#include "base/elfsym.h"
#include "target/tlsslot.h"
#include "testlib.h"

__thread void *own_var;

__attribute__((noinline)) void *own_get(void)
{
	return own_var;
}

/* The first n bytes of code, for every n below `whole`: not recognised. */
static void check_cut(const uint8_t *code, size_t whole)
{
	size_t n;

	for (n = 0; n < whole; n++) {
		uint8_t *cut = malloc(n ? n : 1);

		memcpy(cut, code, n);
		CHECK_EQ_INT(tls_decode(cut, n, 0).kind, TLS_CODE_UNKNOWN);
		free(cut);
	}
}

static void test_shapes(void)
{
	/* Debian's 3.15 PyGILState_GetThisThreadState. */
	static const uint8_t le[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x64, 0x48, 0x8b, 0x04,
				      0x25, 0xd8, 0xff, 0xff, 0xff, 0xc3 };
	static const uint8_t le_fp[] = { 0x55, 0x48, 0x89, 0xe5, 0x64, 0x48, 0x8b,
					 0x04, 0x25, 0xf8, 0xff, 0xff, 0xff, 0x5d, 0xc3 };
	/* gcc -O2 -fPIC -ftls-model=initial-exec, at 0x1100. */
	static const uint8_t ie[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x8b, 0x05, 0xbd, 0x2e,
				      0x00, 0x00, 0x64, 0x48, 0x8b, 0x00, 0xc3 };
	/* ... -ftls-model=global-dynamic, at 0x1110. */
	static const uint8_t gd[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x83, 0xec, 0x08, 0x66,
				      0x48, 0x8d, 0x3d, 0xa0, 0x2e, 0x00, 0x00, 0x66, 0x66,
				      0x48, 0xe8, 0x08, 0xff, 0xff, 0xff, 0x48, 0x8b, 0x00 };
	/* A function that calls another first. */
	static const uint8_t other[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0xe8, 0, 0, 0, 0, 0xc3 };
	struct tls_access a;

	a = tls_decode(le, sizeof(le), 0x42fa7d);
	CHECK_EQ_INT(a.kind, TLS_CODE_LOCAL_EXEC);
	CHECK_EQ_INT(a.off, -0x28);
	a = tls_decode(le_fp, sizeof(le_fp), 0);
	CHECK_EQ_INT(a.kind, TLS_CODE_LOCAL_EXEC);
	CHECK_EQ_INT(a.off, -8);
	a = tls_decode(ie, sizeof(ie), 0x1100);
	CHECK_EQ_INT(a.kind, TLS_CODE_INITIAL_EXEC);
	CHECK_EQ_INT(a.got, 0x3fc8);
	a = tls_decode(gd, sizeof(gd), 0x1110);
	CHECK_EQ_INT(a.kind, TLS_CODE_GENERAL_DYNAMIC);
	CHECK_EQ_INT(a.got, 0x3fc0);
	CHECK_EQ_INT(tls_decode(other, sizeof(other), 0).kind, TLS_CODE_UNKNOWN);
	/* Cut anywhere short of the whole access: not recognised, and
	 * nothing read past the end (ASan). */
	check_cut(le, 13);
	check_cut(ie, 15);
	check_cut(gd, 20);
}

/* The offset found for func in the ELF file at path (loaded at bias), and
 * where var is in this thread. */
static void check_live(const char *path, uint64_t bias, const char *func, void *var)
{
	uint64_t tp = (uint64_t)pthread_self();
	struct elf_file *e = elf_file__open(path);
	int64_t off = 0;
	int err;

	CHECK(e != NULL);
	if (!e)
		return;
	err = tls_slot_offset(e, bias, getpid(), tp, func, &off);
	CHECK_EQ_INT(err, 0);
	CHECK_EQ_INT(off, (int64_t)((uint64_t)var - tp));
	CHECK_EQ_INT(tls_slot_offset(e, bias, getpid(), tp, "no_such_function", &off), -ENOENT);
	elf_file__free(e);
}

static void test_own(void)
{
	Dl_info info;
	struct link_map *lm = NULL;

	own_var = &info;
	CHECK(own_get() == &info);
	CHECK(dladdr1((void *)own_get, &info, (void **)&lm, RTLD_DL_LINKMAP) != 0);
	check_live("/proc/self/exe", lm ? lm->l_addr : 0, "own_get", &own_var);
}

static void test_library(const char *name)
{
	char self[PATH_MAX], path[PATH_MAX + 32];
	struct link_map *lm = NULL;
	void *h, *(*get)(void), **var;
	void (*set)(void *);
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	CHECK(n > 0);
	if (n <= 0)
		return;
	self[n] = '\0';
	snprintf(path, sizeof(path), "%s/%s", dirname(self), name);
	h = dlopen(path, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s: %s (built by make unit-tests)\n", path, dlerror());
		CHECK(h != NULL);
		return;
	}
	get = (void *(*)(void))dlsym(h, "tls_lib_get");
	set = (void (*)(void *))dlsym(h, "tls_lib_set");
	var = dlsym(h, "tls_lib_var"); /* this thread's copy */
	CHECK(get && set && var);
	if (get && set && var && !dlinfo(h, RTLD_DI_LINKMAP, &lm)) {
		set(path);
		CHECK(get() == path);
		check_live(path, lm->l_addr, "tls_lib_get", var);
	}
	dlclose(h);
}

static void test_ie(void)
{
	test_library("libtls_ie.so");
}

static void test_gd(void)
{
	test_library("libtls_gd.so");
}

int main(void)
{
	RUN_TEST(test_shapes);
	RUN_TEST(test_own);
	RUN_TEST(test_ie);
	RUN_TEST(test_gd);
	return test_summary("tlsslot");
}
