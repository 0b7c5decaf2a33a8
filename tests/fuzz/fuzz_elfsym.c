// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer harness of the ELF reader (elfsym.c, on libelf): the profiler
 * opens the binaries and libraries a profiled process maps, and any of them
 * may be truncated, corrupt or hostile.  The input is written to a memfd and
 * opened by path, as a mapped file would be; then every query is asked.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/elfsym.h"

static volatile uint8_t sink;

/* Reads every byte of a section handed out, for the sanitizers to check. */
static void touch(const void *p, size_t n)
{
	uint8_t sum = 0;
	size_t i;

	for (i = 0; i < n; i++)
		sum += ((const uint8_t *)p)[i];
	sink = sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = { "_PyRuntime", "Py_Version", "malloc",
					     "PyThread_tss_get", "autoTSSkey", "" };
	uint64_t ranges[8][2], value, vsize, vaddr, off;
	const void *sec;
	const char *name;
	char path[64];
	struct elf_file *e;
	size_t secsize, i;
	int fd, n;

	fd = memfd_create("fuzz-elf", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	e = elf_file__open(path);
	if (e) {
		elf_file__type(e);
		if (!elf_file__section(e, ".text", &sec, &secsize))
			touch(sec, secsize);
		if (!elf_file__section(e, ".note.stapsdt", &sec, &secsize))
			touch(sec, secsize);
		elf_file__needed(e, "libpython");
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			elf_file__find_symbol(e, names[i], &value, &vsize);
		elf_file__first_load(e, &vaddr, &off);
		n = elf_file__exec_ranges(e, ranges, 8);
		if (n > 8)
			abort();
		for (off = 0; off < 0x10000; off += 0x1000)
			elf_file__offset_to_vaddr(e, off, &vaddr);
		for (i = 0; i < (size_t)(n > 0 ? n : 0); i++) {
			elf_file__vaddr_to_offset(e, ranges[i][0], &off);
			elf_file__symbolize(e, ranges[i][0], &name, &off);
			elf_file__symbolize(e, ranges[i][1] - 1, &name, &off);
		}
		elf_file__symbolize(e, 0, &name, &off);
		elf_file__free(e);
	}
	close(fd);
	return 0;
}
