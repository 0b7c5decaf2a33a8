/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The layout of asyncio's C objects in one interpreter build, found by
 * running a probe (user/session/asyncprobe.py, built in) in that interpreter binary.
 * _asyncio's FutureObj/TaskObj (Modules/_asynciomodule.c) and genobject.c's
 * PyAsyncGenASend are private structs that no header declares, so their
 * offsets cannot come from pyoffsets/: the probe makes such objects with
 * known contents and finds those contents in their bytes (ctypes, id()),
 * confirming each offset on several independently made objects.  What it
 * cannot confirm is PYOFF_NONE, never a guess.
 *
 * The probe runs as the profiled program's user, in the background:
 * asyncprobe__start() forks it, asyncprobe__poll() says -EAGAIN until it
 * is done.  A successful result is kept in memory per interpreter file
 * (realpath, device, inode, size, mtime): asyncprobe__cached().  Nothing is
 * cached on disk: a root loader writing into a user's files is a risk, and
 * the probe takes a tenth of a second or two.
 */
#ifndef ASYNCPROBE_H
#define ASYNCPROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pyoffsets.h"

enum async_task_set {
	ASYNC_TASKS_UNKNOWN,
	ASYNC_TASKS_ALL,	     /* asyncio.tasks._all_tasks (3.9-3.11) */
	ASYNC_TASKS_SCHEDULED_EAGER, /* _scheduled_tasks + _eager_tasks (3.12+) */
};

struct async_layout {
	uint32_t version_hex; /* sys.hexversion of the probed interpreter */
	bool c_task;	      /* asyncio.Task is the C _asyncio.Task */
	bool c_future;	      /* asyncio.Future is the C _asyncio.Future */
	/* Byte offsets in a C _asyncio.Task (the Future's fields first), or
	 * PYOFF_NONE when not found; each lies inside task_size. */
	uint16_t task_size; /* _asyncio.Task.__basicsize__, 0 without _asyncio */
	uint16_t fut_loop, fut_state, task_fut_waiter, task_coro, task_name;
	/* fut_state's values (a C int), when fut_state was found */
	int32_t state_pending, state_cancelled, state_finished;
	/* 3.12+: an unnamed task's task_name may hold its counter as an int
	 * until get_name(); the name is then name_int_prefix and the number. */
	bool name_may_be_int;
	char name_int_prefix[16];
	uint16_t asend_size; /* async_generator_asend's __basicsize__ */
	uint16_t asend_gen;  /* async_generator_asend -> its async generator */
	/* 3.14+: the task's node in its thread's list of C tasks (struct
	 * llist_node: next, prev), or PYOFF_NONE */
	uint16_t task_node;
	/* 3.9, 3.10: PyDictKeysObject (private then): offsets of dk_size,
	 * dk_nentries and dk_indices, and of an entry's key and value; all
	 * PYOFF_NONE otherwise (dk_known false). */
	bool dk_known;
	uint16_t dk_size, dk_nentries, dk_indices;
	uint16_t dk_entry_size, dk_entry_key, dk_entry_value;
	enum async_task_set task_set;
	/* tp_name of asyncio.Task and asyncio.Future, of _asyncio.FutureIter;
	 * "" when unknown or absent */
	char task_type[64], future_type[64], futureiter_type[64];
};

struct asyncprobe;

struct asyncprobe_opts {
	int timeout_ms;	    /* 0: 5000 */
	const char *script; /* NULL: the built-in probe */
};

/* The built-in probe's Python source (user/session/asyncprobe.py). */
extern const char asyncprobe_script[];

/* Starts the probe: interp_path -I -S -c <probe>, as uid/gid when running as
 * root, with an empty environment but PATH, stdin /dev/null.  interp_path
 * may be /proc/PID/exe (the profiled program's binary even if replaced on
 * disk); the interpreter then looks for its library where that binary's
 * path leads in the loader's mount namespace.  NULL with
 * errno and the reason in why when it cannot be started. */
struct asyncprobe *asyncprobe__start(const char *interp_path, uid_t uid, gid_t gid, char *why,
				     size_t whylen);
struct asyncprobe *asyncprobe__start_opts(const char *interp_path, uid_t uid, gid_t gid,
					  const struct asyncprobe_opts *opts, char *why,
					  size_t whylen);
/* Never blocks.  -EAGAIN while the probe runs; 0 with the layout (why then
 * lists what the probe could not find, or is ""); otherwise -errno with the
 * reason: -ETIMEDOUT (killed after the time limit), -ENOEXEC (it did not
 * exit 0: not a Python that runs the probe), -EBADMSG (its output is not a
 * layout), or the error of exec or of becoming uid/gid.  Asked again, it
 * answers the same. */
int asyncprobe__poll(struct asyncprobe *p, struct async_layout *out, char *why, size_t whylen);
/* The probe's process (for a caller that waits on several things). */
pid_t asyncprobe__pid(const struct asyncprobe *p);
/* Kills and reaps the probe if it still runs; NULL is a no-op. */
void asyncprobe__free(struct asyncprobe *p);

/* The layout found earlier for this interpreter file: 0, or -ENOENT (not
 * probed, or the file changed since), or -errno of resolving the path. */
int asyncprobe__cached(const char *interp_path, struct async_layout *out);

/* Parses the probe's output (len bytes, one line ending in '\n'): 0, or
 * -EBADMSG with the reason.  Exposed for the tests and the fuzzer. */
int asyncprobe__parse(const char *buf, size_t len, struct async_layout *out, char *why,
		      size_t whylen);

#endif /* ASYNCPROBE_H */
