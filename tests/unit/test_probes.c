// SPDX-License-Identifier: BSD-2-Clause
/*
 * The probes of the libraries this build made (user/probes.h): each is found
 * where the loader looks for it and begins with the nop that the kernel
 * handles without stepping it out of line.  A probe whose entry is another
 * instruction (the `ret` of an empty C function) still works, so only this
 * test sees the difference: a hit costing two traps instead of one system
 * call.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "testlib.h"
#include "base/elfsym.h"
#include "collect/loader.h"

static void test_sampler_probes(void)
{
	CHECK_EQ_INT(loader__probes_check(SAMPLER_SO_PATH, false), 0);
}

static void test_gpu_probes(void)
{
#ifdef GPU_SO_PATH
	CHECK_EQ_INT(loader__probes_check(GPU_SO_PATH, true), 0);
#else
	SKIP_TEST("libscalene-bpf-gpu.so not built");
#endif
}

/* A copy of the sampler whose malloc probe begins with a `ret`, as an
 * empty C function's does: refused by the check, with -EINVAL. */
static void test_other_entry_refused(void)
{
	char path[] = "/tmp/probes-XXXXXX";
	int fd = mkstemp(path), in = open(SAMPLER_SO_PATH, O_RDONLY);
	struct elf_file *e = NULL;
	char buf[65536];
	uint64_t vaddr, off;
	ssize_t n;
	uint8_t ret = 0xc3;

	CHECK(fd >= 0 && in >= 0);
	if (fd < 0 || in < 0)
		goto out;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		CHECK(write(fd, buf, (size_t)n) == n);
	e = elf_file__open(path);
	CHECK(e != NULL);
	if (!e)
		goto out;
	CHECK_EQ_INT(loader__probes_check(path, false), 0);
	CHECK_EQ_INT(elf_file__find_symbol(e, "scalene_bpf_probe_malloc", &vaddr, NULL), 0);
	CHECK_EQ_INT(elf_file__vaddr_to_offset(e, vaddr, &off), 0);
	CHECK_EQ_INT(loader__probe_entry_check(e, off), 0);
	CHECK(pwrite(fd, &ret, 1, (off_t)off) == 1);
	CHECK_EQ_INT(loader__probe_entry_check(e, off), -EINVAL);
	CHECK_EQ_INT(loader__probes_check(path, false), -EINVAL);
	/* Past the end of the file: not the nop either. */
	CHECK_EQ_INT(loader__probe_entry_check(e, 1ULL << 40), -EINVAL);
	CHECK_EQ_INT(loader__probes_check("/nonexistent/lib.so", false), -ENOENT);
out:
	elf_file__free(e);
	if (in >= 0)
		close(in);
	if (fd >= 0)
		close(fd);
	unlink(path);
}

int main(void)
{
	RUN_TEST(test_sampler_probes);
	RUN_TEST(test_gpu_probes);
	RUN_TEST(test_other_entry_refused);
	return test_summary("probes");
}
