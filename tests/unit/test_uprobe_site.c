/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * user/base/uprobe_site.c: where an allocation uprobe goes.  The byte patterns are
 * the prologues of the functions probed on the interpreters and libc this
 * project is tested with (objdump of pyenv 3.11.7's libpython, Debian 12's
 * python3.11 and libc.so.6), plus cases that must be refused.
 */
#include <stdint.h>

#include "testlib.h"
#include "base/uprobe_site.h"

static int site(const uint8_t *c, size_t n, unsigned int args)
{
	char why[256];

	return uprobe_site(c, n, args, why, sizeof(why));
}

static void test_push_first(void)
{
	/* Debian's PyObject_Malloc: push %rbx; libc malloc: push %r12. */
	static const uint8_t rbx[] = { 0x53, 0x48, 0x85, 0xff };
	static const uint8_t r12[] = { 0x41, 0x54, 0x55, 0x53 };

	CHECK(site(rbx, sizeof(rbx), ARG_RDI) == 0);
	CHECK(site(r12, sizeof(r12), ARG_RDI) == 0);
}

static void test_branch_after_harmless(void)
{
	/* pyenv's PyObject_Malloc: mov %rdi,%rsi; test %rdi,%rdi; js */
	static const uint8_t m[] = { 0x48, 0x89, 0xfe, 0x48, 0x85, 0xff, 0x78, 0x10 };
	/* PyObject_Calloc: test %rsi,%rsi; je */
	static const uint8_t c[] = { 0x48, 0x85, 0xf6, 0x74, 0x14 };
	/* PyObject_Realloc: mov %rsi,%rdx; test %rsi,%rsi; js rel32 */
	static const uint8_t r[] = { 0x48, 0x89, 0xf2, 0x48, 0x85, 0xf6, 0x0f, 0x88, 0, 0, 0, 0 };
	/* endbr64; sub $0x18,%rsp; push */
	static const uint8_t e[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x83, 0xec, 0x18, 0x55 };

	CHECK(site(m, sizeof(m), ARG_RDI) == 6);
	CHECK(site(c, sizeof(c), ARG_RDI | ARG_RSI) == 3);
	CHECK(site(r, sizeof(r), ARG_RDI | ARG_RSI) == 6);
	CHECK(site(e, sizeof(e), ARG_RDI) == 8);
}

static void test_refused(void)
{
	/* mov %rdi,%rsi clobbers the size argument of calloc (rsi). */
	static const uint8_t clobber[] = { 0x48, 0x89, 0xfe, 0x74, 0x10 };
	/* mov 0x10(%rip),%rax: unknown, may be anything. */
	static const uint8_t unknown[] = { 0x48, 0x8b, 0x05, 0x10, 0, 0, 0, 0x53 };
	/* Only harmless instructions, then the end of the bytes. */
	static const uint8_t none[] = { 0x48, 0x85, 0xff };
	char why[256] = "";

	CHECK(site(clobber, sizeof(clobber), ARG_RSI) == -1);
	CHECK(uprobe_site(unknown, sizeof(unknown), ARG_RDI, why, sizeof(why)) == -1);
	CHECK(why[0] != '\0');
	CHECK(site(none, sizeof(none), ARG_RDI) == -1);
	CHECK(site(none, 0, ARG_RDI) == -1);
}

int main(void)
{
	RUN_TEST(test_push_first);
	RUN_TEST(test_branch_after_harmless);
	RUN_TEST(test_refused);
	return test_summary("uprobe_site");
}
