/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Running a Python script in a live CPython 3.9-3.13, which has no remote
 * execution (remote_exec.h is 3.14's): one call is put into the main
 * interpreter's queue of pending calls, the queue Py_AddPendingCall fills,
 * from outside, and the eval loop's flag for it is set.  The interpreter
 * makes the call with the GIL held at its next check of the flag: in the
 * main thread (3.9-3.11) or in any thread (3.12, 3.13: in 3.13 a thread
 * that takes the GIL sets its own flag while the queue holds a call), at
 * once in one running Python code, once it returns to Python in one
 * blocked in C.
 *
 * The call is PyRun_SimpleString on a short text that runs the script in a
 * namespace of its own.  The text needs bytes in the process: it goes into
 * the unused end of the last page of the interpreter file's writable
 * segment (mapped with it, part of nothing the file defines), whose bytes
 * are kept here and put back once the call has been made or taken back.
 *
 * The queue is only written when it is empty and not being emptied: a call
 * of the process's own is never overwritten.  A Py_AddPendingCall of the
 * process in the same microseconds as the write could lose one of the two;
 * the interpreter's own lock cannot be taken from outside.
 */
#ifndef PENDING_CALL_H
#define PENDING_CALL_H

#include <stddef.h>

struct py_proc;
struct pending_call;

/* Whether pp's interpreter has such a queue: 0, or -ENOTSUP with why. */
int pending_call__check(const struct py_proc *pp, char *why, size_t whylen);

/*
 * Asks pp to run the script at path (in pp's mount namespace).  0 with the
 * request in *out, or -errno with the reason in why:
 *   -ENOTSUP  no such queue (3.14+, a free-threaded build)
 *   -EBUSY    the queue holds calls of the process's own, or is being emptied
 *   -ENOSPC   no room for the text at the end of the interpreter's segment
 *   -EAGAIN   no interpreter or main thread state yet
 *   other     -errno of a read or a write (-ESRCH: gone)
 */
int pending_call__request(const struct py_proc *pp, const char *path, struct pending_call **out,
			  char *why, size_t whylen);

/* Takes the call back if it is still in the queue: 1 (taken back), 0 (the
 * interpreter has taken it), -EBUSY (still queued behind a call of the
 * process's: it stays, and will run the empty text), or -errno. */
int pending_call__cancel(struct pending_call *pc);

/* Puts back the bytes the text took, once the call has run or was taken
 * back (with the call still queued, an empty text is left instead).  Then
 * frees pc.  NULL is ignored. */
void pending_call__end(struct pending_call *pc);

/*
 * Makes the eval loop look at the queues again, for a call the process
 * added itself from a thread of its own.  3.9-3.12 flag such a call only
 * when the thread that adds it is one that may make it (CPython issue
 * 95820), so a call for the main thread added by another waits for
 * something else to trip the flag; this trips it.  A flag tripped for
 * nothing costs the loop one look.  0, -ENOTSUP (3.13+: not needed), or
 * -errno.
 */
int pending_call__nudge(const struct py_proc *pp);

#endif /* PENDING_CALL_H */
