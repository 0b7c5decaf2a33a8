/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * churn_forever(): allocates, copies and frees through libc until the process
 * ends.  Called through ctypes, which releases the GIL, so a thread running
 * it keeps calling the preloaded sampler's hooks while the interpreter
 * finalises and while exit() runs the libraries' destructors, ours included.
 */
#include <stdlib.h>
#include <string.h>

void churn_forever(void)
{
	unsigned int x = 12345;
	char *keep = NULL;

	for (;;) {
		size_t n;
		char *p, *q;

		x = x * 1103515245u + 12345u;
		n = 16 + (x >> 16) % 8192;
		p = malloc(n);
		q = calloc(1, n);
		if (p && q) {
			memset(p, (int)x, n);
			memcpy(q, p, n);
		}
		free(keep);
		keep = realloc(q, n / 2 + 1);
		free(p);
	}
}
