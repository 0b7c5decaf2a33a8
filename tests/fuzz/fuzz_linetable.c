// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer harness of the line-table decoders (3.9 lnotab, 3.10 linetable,
 * 3.11+ location table): the tables come from another process's memory and
 * may be anything.  The first input bytes choose the first line and the
 * offsets asked for; the rest is the table, decoded in every format.
 */
#include <stdint.h>
#include <string.h>

#include "symbolize/linetable.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum linetable_format fmts[] = { LINETABLE_LNOTAB, LINETABLE_310,
						      LINETABLE_LOCATIONS };
	int32_t first = 1;
	uint16_t probe = 0;
	size_t i;

	if (size >= 4) {
		memcpy(&first, data, 4);
		data += 4;
		size -= 4;
	}
	if (size >= 2) {
		memcpy(&probe, data, 2);
		data += 2;
		size -= 2;
	}
	for (i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		int off;

		/* Every code unit of a short table, then edge offsets. */
		for (off = 0; off < 2 * (int)size + 8 && off < 4096; off += 2)
			linetable_addr2line(fmts[i], data, size, first, off);
		linetable_addr2line(fmts[i], data, size, first, probe);
		linetable_addr2line(fmts[i], data, size, first, -1);
		linetable_addr2line(fmts[i], data, size, first, INT32_MAX);
		linetable_addr2line(fmts[i], NULL, 0, first, 0);
	}
	return 0;
}
