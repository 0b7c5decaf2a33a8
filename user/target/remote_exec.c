// SPDX-License-Identifier: BSD-2-Clause
/* PEP 768's request, written from outside (remote_exec.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/memread.h"
#include "pyoffsets.h"
#include "target/python.h"
#include "target/remote_exec.h"

/* The main interpreter's main thread state: where the request goes (the
 * thread that runs the program's main script, as sys.remote_exec picks). */
static int main_tstate(const struct py_proc *pp, uint64_t *interp, uint64_t *tstate)
{
	int err = python__main_interp(pp, interp);

	if (!err)
		err = mem_read_u64(pp->pid, *interp + pp->off->interp_threads_main, tstate);
	if (!err && !*tstate)
		err = -EAGAIN;
	return err;
}

static bool supported(const struct py_offsets *o)
{
	return o->interp_threads_main != PYOFF_NONE && o->interp_remote_debug != PYOFF_NONE &&
	       o->tstate_eval_breaker != PYOFF_NONE && o->tstate_remote_support != PYOFF_NONE &&
	       o->remote_pending_call != PYOFF_NONE && o->remote_script_path != PYOFF_NONE &&
	       o->remote_script_path_size != PYOFF_NONE && o->runtime_interp_main != PYOFF_NONE &&
	       o->eval_please_stop;
}

/* Whether the process can take a request now: 0 with the main thread state
 * in *ts, or -errno with why. */
static int can_take(const struct py_proc *pp, uint64_t *ts, char *why, size_t whylen)
{
	const struct py_offsets *o = pp->off;
	int32_t enabled = 0;
	uint64_t interp;
	int err;

	if (!supported(o)) {
		snprintf(why, whylen, "Python 3.%d cannot run code sent from outside (3.14+ can)",
			 pp->minor);
		return -ENOTSUP;
	}
	err = main_tstate(pp, &interp, ts);
	if (err) {
		snprintf(why, whylen, "failed to find the main thread state: %s", strerror(-err));
		return err;
	}
	err = mem_read(pp->pid, interp + o->interp_remote_debug, &enabled, sizeof(enabled));
	if (err) {
		snprintf(why, whylen, "failed to read config.remote_debug: %s", strerror(-err));
		return err;
	}
	if (enabled != 1) {
		snprintf(why, whylen,
			 "the interpreter does not allow code sent from outside "
			 "(PYTHON_DISABLE_REMOTE_DEBUG, -X disable_remote_debug, or built "
			 "--without-remote-debug)");
		return -EPERM;
	}
	return 0;
}

int remote_exec__check(const struct py_proc *pp, char *why, size_t whylen)
{
	uint64_t ts;

	return can_take(pp, &ts, why, whylen);
}

int remote_exec__request(const struct py_proc *pp, const char *path, char *why, size_t whylen)
{
	const struct py_offsets *o = pp->off;
	uint64_t ts, support, breaker;
	size_t len = strlen(path);
	int32_t pending = 0, one = 1;
	int err;

	err = can_take(pp, &ts, why, whylen);
	if (err)
		return err;
	if (len + 1 > o->remote_script_path_size) {
		snprintf(why, whylen, "the script's path is longer than the interpreter's %u bytes",
			 o->remote_script_path_size - 1u);
		return -ENAMETOOLONG;
	}
	support = ts + o->tstate_remote_support;
	err = mem_read(pp->pid, support + o->remote_pending_call, &pending, sizeof(pending));
	if (!err && pending == 1) {
		snprintf(why, whylen, "another debugger's request is still pending in it");
		return -EBUSY;
	}
	/* The path first, the flag after it, the breaker last: the thread
	 * reads them in the opposite order. */
	if (!err)
		err = mem_write(pp->pid, support + o->remote_script_path, path, len + 1);
	if (!err)
		err = mem_write(pp->pid, support + o->remote_pending_call, &one, sizeof(one));
	if (!err)
		err = mem_read_u64(pp->pid, ts + o->tstate_eval_breaker, &breaker);
	/* The interpreter changes other bits of this word as it runs, and one
	 * it sets between this read and write is lost; sys.remote_exec writes
	 * it the same way.  Each of those is asked for again by whatever set
	 * it (a GIL drop request, a signal) or by the next allocation
	 * threshold (the GC's). */
	if (!err) {
		breaker |= o->eval_please_stop;
		err = mem_write(pp->pid, ts + o->tstate_eval_breaker, &breaker, sizeof(breaker));
	}
	if (err)
		snprintf(why, whylen, "failed to write the request into the thread state: %s",
			 strerror(-err));
	return err;
}

int remote_exec__cancel(const struct py_proc *pp)
{
	const struct py_offsets *o = pp->off;
	uint64_t interp, ts, support;
	int32_t pending = 0, zero = 0;
	int err;

	if (!supported(o))
		return -ENOTSUP;
	err = main_tstate(pp, &interp, &ts);
	if (err)
		return err;
	support = ts + o->tstate_remote_support;
	err = mem_read(pp->pid, support + o->remote_pending_call, &pending, sizeof(pending));
	if (err || pending != 1)
		return err ?: 0;
	/* The flag first: a thread that reads the path after it finds none. */
	err = mem_write(pp->pid, support + o->remote_pending_call, &zero, sizeof(zero));
	if (!err)
		err = mem_write(pp->pid, support + o->remote_script_path, &zero, 1);
	return err ?: 1;
}
