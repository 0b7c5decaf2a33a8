// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer harness of the asyncio layout probe's parser (asyncprobe.c):
 * the probe's output comes from a program run as the profiled program's
 * user.  A layout it accepts must be usable as is: every offset PYOFF_NONE
 * or inside its object with room for its field, the three states distinct,
 * every name a NUL-terminated dotted identifier.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "session/asyncprobe.h"

static void check_off(uint16_t off, unsigned width, unsigned size)
{
	if (off != PYOFF_NONE && (off % width || off + width > size))
		abort();
}

#define ALNUM "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

static void check_name(const char *s, size_t n, const char *set)
{
	size_t len = strnlen(s, n);

	if (len == n || strspn(s, set) != len)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct async_layout l;
	char why[256];

	memset(why, 'x', sizeof(why));
	if (asyncprobe__parse((const char *)data, size, &l, why, sizeof(why))) {
		if (!memchr(why, '\0', sizeof(why)) || !why[0])
			abort(); /* refused without a reason */
		return 0;
	}
	check_off(l.fut_loop, 8, l.task_size);
	check_off(l.task_fut_waiter, 8, l.task_size);
	check_off(l.task_coro, 8, l.task_size);
	check_off(l.task_name, 8, l.task_size);
	check_off(l.fut_state, 4, l.task_size);
	check_off(l.asend_gen, 8, l.asend_size);
	if (l.fut_state != PYOFF_NONE &&
	    (l.state_pending == l.state_cancelled || l.state_pending == l.state_finished ||
	     l.state_cancelled == l.state_finished))
		abort();
	if (l.name_may_be_int && (l.task_name == PYOFF_NONE || !l.name_int_prefix[0]))
		abort();
	check_name(l.task_type, sizeof(l.task_type), ALNUM "._");
	check_name(l.future_type, sizeof(l.future_type), ALNUM "._");
	check_name(l.futureiter_type, sizeof(l.futureiter_type), ALNUM "._");
	check_name(l.name_int_prefix, sizeof(l.name_int_prefix), ALNUM "-_");
	return 0;
}
