// SPDX-License-Identifier: BSD-2-Clause
/*
 * ksyms on a file in /proc/kallsyms' format: functions of the kernel and of
 * a module found by address, data and zero addresses left out, a line that
 * is not one; and on /proc/kallsyms itself when it shows addresses.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "testlib.h"
#include "base/ksyms.h"

static const char sample[] = "ffffffff81000000 T _stext\n"
			     "ffffffff81001000 t read_zero\n"
			     "ffffffff81001100 D some_data\n"
			     "ffffffff81001200 W weak_fn\n"
			     "0000000000000000 T hidden_fn\n"
			     "garbage line\n"
			     "ffffffffc0001000 t mod_fn\t[e1000]\n"
			     "ffffffffc0002000 T other_fn\t[xfs]";

static void test_file(void)
{
	char path[] = "/tmp/test_ksyms.XXXXXX";
	int fd = mkstemp(path);
	const char *mod = NULL, *name;
	uint64_t off = 0;
	struct ksyms *k;

	CHECK(fd >= 0);
	CHECK_EQ_INT(write(fd, sample, sizeof(sample) - 1), (long)sizeof(sample) - 1);
	close(fd);
	k = ksyms__load(path);
	unlink(path);
	CHECK(k);
	if (!k)
		return;
	/* _stext, read_zero, weak_fn, mod_fn, other_fn. */
	CHECK_EQ_INT(ksyms__count(k), 5);
	name = ksyms__resolve(k, 0xffffffff81001010ULL, &mod, &off);
	CHECK(name && !strcmp(name, "read_zero"));
	CHECK(mod && !strcmp(mod, ""));
	CHECK_EQ_INT(off, 0x10);
	/* Data is not a function: the address stays read_zero's. */
	name = ksyms__resolve(k, 0xffffffff81001100ULL, &mod, &off);
	CHECK(name && !strcmp(name, "read_zero"));
	name = ksyms__resolve(k, 0xffffffff81001204ULL, &mod, &off);
	CHECK(name && !strcmp(name, "weak_fn"));
	name = ksyms__resolve(k, 0xffffffffc0001008ULL, &mod, &off);
	CHECK(name && !strcmp(name, "mod_fn"));
	CHECK(mod && !strcmp(mod, "e1000"));
	name = ksyms__resolve(k, 0xffffffffc0002000ULL, &mod, &off);
	CHECK(name && !strcmp(name, "other_fn") && !strcmp(mod, "xfs") && off == 0);
	CHECK(!ksyms__resolve(k, 0x1000, &mod, &off));
	ksyms__free(k);
}

static void test_missing(void)
{
	errno = 0;
	CHECK(!ksyms__load("/nonexistent/kallsyms"));
	CHECK_EQ_INT(errno, ENOENT);
}

/* The running kernel's, where its addresses are shown (root): vfs_read
 * found by an address inside it, as the file lists it. */
static void test_proc(void)
{
	struct ksyms *k = ksyms__load(NULL);
	unsigned long long addr = 0, a;
	const char *mod = NULL, *name;
	char line[512], sym[256], type;
	uint64_t off = 0;
	FILE *f;

	CHECK(k);
	if (!k)
		return;
	if (!ksyms__count(k)) {
		ksyms__free(k);
		SKIP_TEST("/proc/kallsyms shows no addresses here (not root, or "
			  "kernel.kptr_restrict)");
	}
	f = fopen("/proc/kallsyms", "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %255s", &a, &type, sym) == 3 && !strcmp(sym, "vfs_read"))
			addr = a;
	if (f)
		fclose(f);
	CHECK(addr);
	name = ksyms__resolve(k, addr + 1, &mod, &off);
	CHECK(name && !strcmp(name, "vfs_read"));
	CHECK(mod && !strcmp(mod, ""));
	CHECK_EQ_INT(off, 1);
	ksyms__free(k);
}

int main(void)
{
	RUN_TEST(test_file);
	RUN_TEST(test_missing);
	RUN_TEST(test_proc);
	return test_summary("ksyms");
}
