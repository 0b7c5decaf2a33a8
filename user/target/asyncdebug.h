/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The offsets CPython 3.14+ publishes for its C asyncio objects: the
 * _asyncio module's _AsyncioDebug, in an ELF section of its own
 * (.AsyncioDebug) of whichever file holds the module (the interpreter binary
 * or libpython when built in, else _asyncio.*.so).  They are constants of
 * the build, read from the file, never from the process's memory.
 *
 * They name the C Task's size, name, coroutine and list node, and where a
 * thread state and the interpreter keep the heads of the lists of C tasks;
 * the Future's loop, state and waiter are not published (the asyncio probe
 * measures those).
 */
#ifndef ASYNCDEBUG_H
#define ASYNCDEBUG_H

#include <stddef.h>
#include <stdint.h>

#include "target/python.h"

struct asyncio_debug {
	uint64_t task_size, task_name, task_awaited_by, task_is_task;
	uint64_t task_awaited_by_is_set, task_coro, task_node;
	uint64_t interp_size, interp_tasks_head;
	uint64_t tstate_size, tstate_running_loop, tstate_running_task, tstate_tasks_head;
	char file[512]; /* the file it was read from, as the process maps it */
};

/* Reads the section from an ELF file's bytes: 0; -ENOENT when the file has
 * none; -EPROTO (why says what) when it is not the table this reader knows
 * or an offset lies outside its object. */
int asyncdebug__parse(const void *data, size_t size, struct asyncio_debug *d, char *why,
		      size_t nwhy);

/* Finds and reads the table for pp's process: in the file holding the
 * interpreter, else in an _asyncio module it has mapped.  0; -ENOENT when no
 * file mapped holds one (before 3.14, or _asyncio not imported yet); -EPROTO
 * as above; -errno.  why says what went wrong. */
int asyncdebug__find(const struct py_proc *pp, struct asyncio_debug *d, char *why, size_t nwhy);

#endif /* ASYNCDEBUG_H */
