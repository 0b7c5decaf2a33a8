// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer harness of the code-object and str readers (pycode.c): they read
 * another process's memory, which may hold anything.  The input is laid out
 * in this process's memory as a code object and everything it points to:
 * each 8-byte slot whose value is a small offset into the input becomes a
 * pointer to that place (so the fuzzer can build strs, bytes objects and
 * line tables), every other value stays as it is (pointing anywhere).  Then
 * it is read as a code object of every supported CPython version, through
 * process_vm_readv on our own pid, exactly as a profiled one's would be, and
 * every byte offset's line is asked for.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/types.h>

#include "abi.h"
#include "cpython.h"
#include "symbolize/pycode.h"
#include "target/python.h"

#define AREA (64 << 10)

static uint64_t area[AREA / 8];

static uint64_t u64_at(uint64_t base, uint32_t off)
{
	uint64_t v = 0;

	if (off != PYOFF_NONE && off + 8 <= AREA)
		memcpy(&v, (const char *)(uintptr_t)base + off, 8);
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t base = (uint64_t)(uintptr_t)area;
	size_t i;
	int v;

	if (size > AREA)
		size = AREA;
	memset(area, 0, sizeof(area));
	memcpy(area, data, size);
	for (i = 0; i < size / 8; i++) {
		if (area[i] && area[i] < size)
			area[i] += base;
	}
	for (v = 0; py_offsets_table[v]; v++) {
		const struct py_offsets *o = py_offsets_table[v];
		struct py_proc pp = { .pid = getpid(), .minor = o->minor, .off = o };
		struct pycode_cache *c = pycode_cache__new(4);
		const struct pycode *pc;
		int32_t first = 0;
		uint64_t tag;
		char *s;
		int off;

		if (!c)
			return 0;
		if (o->code_firstlineno + 4 <= AREA)
			memcpy(&first, (const char *)area + o->code_firstlineno, 4);
		tag = pycode_tag((uint32_t)first, code_ident(u64_at(base, o->code_filename),
							     u64_at(base, o->code_name)));
		pc = pycode_cache__load(c, &pp, 1, base, tag);
		if (pc) {
			if (!pc->filename || !pc->qualname)
				abort();
			for (off = 0; off < 512; off += 2)
				pycode__line(pc, off);
			pycode__line(pc, -2);
			pycode__line(pc, INT32_MAX - 1);
		}
		/* The same bytes read as a str object, with few and many chars. */
		s = pystr_read(pp.pid, &pp, base, 8);
		free(s);
		s = pystr_read(pp.pid, &pp, base, 4096);
		free(s);
		pycode_cache__free(c);
	}
	return 0;
}
