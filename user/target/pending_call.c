// SPDX-License-Identifier: BSD-2-Clause
/* A pending call put into a live interpreter from outside (pending_call.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/elfsym.h"
#include "base/memread.h"
#include "base/procmaps.h"
#include "pyoffsets.h"
#include "target/pending_call.h"
#include "target/python.h"

#define TEXT_MAX 512

struct pending_call {
	const struct py_proc *pp;
	uint64_t queue; /* &interp->ceval.pending */
	uint32_t index; /* of our entry in calls[] */
	uint64_t func;	/* PyRun_SimpleString in the process */
	uint64_t text;	/* where the text is */
	size_t len;	/* its bytes, with the NUL */
	uint8_t saved[TEXT_MAX];
	bool queued; /* last known to be in the queue */
};

static bool supported(const struct py_offsets *o)
{
	if (o->interp_pending == PYOFF_NONE || o->pending_first == PYOFF_NONE ||
	    o->pending_last == PYOFF_NONE || o->pending_calls == PYOFF_NONE ||
	    o->pending_call_size == PYOFF_NONE || o->pending_call_func == PYOFF_NONE ||
	    o->pending_call_arg == PYOFF_NONE || !o->pending_ncalls ||
	    o->pending_ncalls == PYOFF_NONE || o->runtime_interp_main == PYOFF_NONE)
		return false;
	/* 3.9-3.12 flag the queue in the interpreter; 3.13 in each thread. */
	if (o->pending_npending == PYOFF_NONE)
		return o->pending_calls_to_do != PYOFF_NONE && o->interp_eval_breaker != PYOFF_NONE;
	return o->pending_max != PYOFF_NONE && o->pending_mutex != PYOFF_NONE &&
	       o->pending_handling != PYOFF_NONE && o->pending_call_flags != PYOFF_NONE &&
	       o->tstate_eval_breaker != PYOFF_NONE && o->eval_calls_to_do;
}

int pending_call__check(const struct py_proc *pp, char *why, size_t whylen)
{
	if (pp->off->free_threaded == 1) {
		snprintf(why, whylen,
			 "a free-threaded Python 3.%d cannot be sent code from outside (3.14+ "
			 "can)",
			 pp->minor);
		return -ENOTSUP;
	}
	if (!supported(pp->off)) {
		snprintf(why, whylen, "Python 3.%d has no queue of pending calls to write to",
			 pp->minor);
		return -ENOTSUP;
	}
	return 0;
}

/* The text PyRun_SimpleString runs in __main__'s namespace, binding no name
 * there: the script runs in a dictionary of its own.  Nothing may escape
 * it (a call that fails would fail the Python code it interrupted), and a
 * Ctrl-C that lands in it is handed back to the main thread. */
static int make_text(const char *path, char *buf, size_t n)
{
	int len;

	if (strpbrk(path, "'\\\n"))
		return -EINVAL;
	len = snprintf(buf, n,
		       "try:(lambda f:(exec(f.read(),{'__name__':'__scalene_bpf_attach__'}),"
		       "f.close()))(open('%s','rb'))\n"
		       "except KeyboardInterrupt:__import__('_thread').interrupt_main()\n"
		       "except BaseException:pass\n",
		       path);
	return len < 0 || (size_t)len >= n ? -ENAMETOOLONG : len + 1;
}

/* PyRun_SimpleString, and the room after the last writable segment of the
 * file that holds the interpreter, in the process. */
static int find_func_and_room(struct pending_call *pc, size_t need, char *why, size_t whylen)
{
	const struct py_proc *pp = pc->pp;
	struct procmaps *maps = procmaps__load(pp->pid);
	struct elf_file *e = NULL;
	const struct map_entry *me;
	char host[PATH_MAX];
	uint64_t bias, end, sym, page = (uint64_t)sysconf(_SC_PAGESIZE);
	int err;

	if (!maps) {
		err = -errno;
		snprintf(why, whylen, "failed to read the process's maps: %s", strerror(-err));
		return err;
	}
	err = procmaps__file_in_root(host, sizeof(host), pp->pid, pp->path);
	if (!err) {
		e = elf_file__open(host);
		err = e ? 0 : -errno;
	}
	if (err) {
		snprintf(why, whylen, "failed to open %s: %s", pp->path, strerror(-err));
		goto out;
	}
	err = procmaps_load_bias(maps, pp->path, e, &bias);
	if (!err)
		err = elf_file__find_symbol(e, "PyRun_SimpleString", &sym, NULL);
	if (err) {
		snprintf(why, whylen, "failed to find PyRun_SimpleString in %s", pp->path);
		goto out;
	}
	pc->func = bias + sym;
	err = elf_file__writable_end(e, &end);
	if (!err) {
		pc->text = bias + end;
		me = procmaps__find(maps, pc->text);
		/* The rest of the page, mapped writable with the segment. */
		if (!me || !me->w || pc->text + need > me->end ||
		    pc->text + need > (pc->text + page - 1) / page * page)
			err = -ENOSPC;
	}
	if (err)
		snprintf(why, whylen,
			 "no room for %zu bytes after %s's writable segment (%llu are left in "
			 "its page)",
			 need, pp->path,
			 err == -ENOSPC ? (unsigned long long)((page - pc->text % page) % page)
					: 0);
out:
	elf_file__free(e);
	procmaps__free(maps);
	return err;
}

static uint64_t entry(const struct pending_call *pc, uint32_t i)
{
	const struct py_offsets *o = pc->pp->off;

	return pc->queue + o->pending_calls + (uint64_t)i * o->pending_call_size;
}

struct queue_state {
	int32_t first, last, npending, max;
	uint8_t mutex;
	uint64_t handling;
	int32_t busy, calls_to_do;
};

static int read_queue(const struct pending_call *pc, struct queue_state *q)
{
	const struct py_offsets *o = pc->pp->off;
	int pid = pc->pp->pid, err;

	memset(q, 0, sizeof(*q));
	err = mem_read(pid, pc->queue + o->pending_first, &q->first, sizeof(q->first));
	if (!err)
		err = mem_read(pid, pc->queue + o->pending_last, &q->last, sizeof(q->last));
	if (!err && o->pending_npending != PYOFF_NONE) {
		err = mem_read(pid, pc->queue + o->pending_npending, &q->npending,
			       sizeof(q->npending));
		if (!err)
			err = mem_read(pid, pc->queue + o->pending_max, &q->max, sizeof(q->max));
		if (!err)
			err = mem_read(pid, pc->queue + o->pending_mutex, &q->mutex,
				       sizeof(q->mutex));
		if (!err)
			err = mem_read_u64(pid, pc->queue + o->pending_handling, &q->handling);
	} else if (!err) {
		/* 3.9-3.12: the ring's ends say how many are queued. */
		q->npending = (int32_t)(((int64_t)q->last - q->first + o->pending_ncalls) %
					o->pending_ncalls);
		q->max = (int32_t)o->pending_ncalls - 1;
		if (o->pending_busy != PYOFF_NONE)
			err = mem_read(pid, pc->queue + o->pending_busy, &q->busy, sizeof(q->busy));
	}
	if (!err && (q->first < 0 || q->last < 0 || (uint32_t)q->first >= o->pending_ncalls ||
		     (uint32_t)q->last >= o->pending_ncalls))
		err = -EPROTO;
	return err;
}

/* The entry, then the end that makes it visible, then the flag: the eval
 * loop reads them in the opposite order. */
static int write_call(struct pending_call *pc, const struct queue_state *q, uint64_t interp)
{
	const struct py_offsets *o = pc->pp->off;
	int pid = pc->pp->pid, err;
	int32_t next = (int32_t)((q->last + 1) % o->pending_ncalls), one = 1;
	uint64_t e = entry(pc, (uint32_t)q->last), ts, breaker;

	pc->index = (uint32_t)q->last;
	err = mem_write(pid, e + o->pending_call_func, &pc->func, sizeof(pc->func));
	if (!err)
		err = mem_write(pid, e + o->pending_call_arg, &pc->text, sizeof(pc->text));
	if (!err && o->pending_call_flags != PYOFF_NONE) {
		int32_t flags = 0; /* not _Py_PENDING_RAWFREE: the text is not the heap's */

		err = mem_write(pid, e + o->pending_call_flags, &flags, sizeof(flags));
	}
	if (!err)
		err = mem_write(pid, pc->queue + o->pending_last, &next, sizeof(next));
	if (err)
		return err;
	pc->queued = true;
	if (o->pending_npending == PYOFF_NONE) {
		/* 3.9-3.12: the interpreter's flags; its eval_breaker is an OR
		 * of such flags, recomputed by whoever changes one, so setting
		 * it loses nothing. */
		err = mem_write(pid, pc->queue + o->pending_calls_to_do, &one, sizeof(one));
		if (!err)
			err = mem_write(pid, interp + o->interp_eval_breaker, &one, sizeof(one));
		return err;
	}
	/* 3.13: the count, then the main thread's bit.  Another bit set in
	 * the same word between this read and write is lost; whatever set it
	 * sets it again (sys.remote_exec of 3.14 writes it the same way). */
	err = mem_write(pid, pc->queue + o->pending_npending, &one, sizeof(one));
	if (!err)
		err = python__main_tstate(pc->pp, &ts);
	if (!err)
		err = mem_read_u64(pid, ts + o->tstate_eval_breaker, &breaker);
	if (!err) {
		breaker |= o->eval_calls_to_do;
		err = mem_write(pid, ts + o->tstate_eval_breaker, &breaker, sizeof(breaker));
	}
	return err;
}

int pending_call__request(const struct py_proc *pp, const char *path, struct pending_call **out,
			  char *why, size_t whylen)
{
	const struct py_offsets *o = pp->off;
	struct pending_call *pc;
	struct queue_state q;
	char text[TEXT_MAX];
	uint64_t interp = 0;
	int len, err;

	*out = NULL;
	err = pending_call__check(pp, why, whylen);
	if (err)
		return err;
	len = make_text(path, text, sizeof(text));
	if (len < 0) {
		snprintf(why, whylen, "the script's path cannot be written into the call: %s",
			 strerror(-len));
		return len;
	}
	pc = calloc(1, sizeof(*pc));
	if (!pc)
		return -ENOMEM;
	pc->pp = pp;
	pc->len = (size_t)len;
	err = python__main_interp(pp, &interp);
	if (err) {
		snprintf(why, whylen, "failed to find the main interpreter: %s", strerror(-err));
		goto fail;
	}
	pc->queue = interp + o->interp_pending;
	err = read_queue(pc, &q);
	if (err) {
		snprintf(why, whylen, "failed to read the interpreter's pending calls: %s",
			 strerror(-err));
		goto fail;
	}
	if (q.npending || q.mutex || q.handling || q.busy) {
		snprintf(why, whylen,
			 "the interpreter's queue of pending calls is in use by the process "
			 "(%d waiting%s)",
			 q.npending, q.mutex || q.handling || q.busy ? ", being emptied" : "");
		err = -EBUSY;
		goto fail;
	}
	err = find_func_and_room(pc, pc->len, why, whylen);
	if (err)
		goto fail;
	err = mem_read(pp->pid, pc->text, pc->saved, pc->len);
	if (!err)
		err = mem_write(pp->pid, pc->text, text, pc->len);
	if (!err)
		err = write_call(pc, &q, interp);
	if (err) {
		snprintf(why, whylen, "failed to write the call into the process: %s",
			 strerror(-err));
		if (pc->queued && pending_call__cancel(pc) == 1)
			pc->queued = false;
		pending_call__end(pc);
		return err;
	}
	*out = pc;
	return 0;
fail:
	free(pc);
	return err;
}

/* Whether our entry is still between the ring's ends. */
static bool still_queued(const struct pending_call *pc, const struct queue_state *q)
{
	uint32_t n = pc->pp->off->pending_ncalls;
	uint32_t span = q->npending > 0 ? (uint32_t)q->npending : 0;

	return ((pc->index + n - (uint32_t)q->first) % n) < span;
}

int pending_call__cancel(struct pending_call *pc)
{
	const struct py_offsets *o;
	struct queue_state q;
	int32_t index, left;
	uint64_t zero[3] = { 0, 0, 0 };
	int err;

	if (!pc)
		return 0;
	o = pc->pp->off;
	err = read_queue(pc, &q);
	if (err)
		return err;
	if (!still_queued(pc, &q)) {
		pc->queued = false;
		return 0;
	}
	if ((uint32_t)(q.last + o->pending_ncalls - 1) % o->pending_ncalls != pc->index)
		return -EBUSY;
	/* The last in the ring: the end moves back over it (and 3.13's count
	 * down, its entry cleared as its pop would). */
	index = (int32_t)pc->index;
	err = mem_write(pc->pp->pid, pc->queue + o->pending_last, &index, sizeof(index));
	if (!err && o->pending_npending != PYOFF_NONE) {
		left = q.npending - 1;
		err = mem_write(pc->pp->pid, pc->queue + o->pending_npending, &left, sizeof(left));
		if (!err)
			err = mem_write(pc->pp->pid, entry(pc, pc->index), zero,
					o->pending_call_size < sizeof(zero) ? o->pending_call_size
									    : sizeof(zero));
	}
	if (err)
		return err;
	pc->queued = false;
	return 1;
}

void pending_call__end(struct pending_call *pc)
{
	struct queue_state q;

	if (!pc)
		return;
	if (pc->queued && !read_queue(pc, &q) && !still_queued(pc, &q))
		pc->queued = false;
	/* A call still queued runs what is there then: an empty text. */
	if (pc->queued)
		pc->saved[0] = '\0';
	mem_write(pc->pp->pid, pc->text, pc->saved, pc->len);
	free(pc);
}

int pending_call__nudge(const struct py_proc *pp)
{
	const struct py_offsets *o = pp->off;
	uint64_t interp;
	int32_t one = 1;
	int err;

	if (o->interp_eval_breaker == PYOFF_NONE)
		return -ENOTSUP;
	err = python__main_interp(pp, &interp);
	if (!err)
		err = mem_write(pp->pid, interp + o->interp_eval_breaker, &one, sizeof(one));
	return err;
}
