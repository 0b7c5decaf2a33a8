/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Running a Python script in a live CPython 3.14+, the way sys.remote_exec
 * does (PEP 768): the script's path goes into the main thread state's
 * _PyRemoteDebuggerSupport, its pending flag is set, and a bit of its eval
 * breaker makes the thread look at them.  The interpreter runs the script,
 * in a namespace of its own, the next time the main thread checks its eval
 * breaker: at once in a thread running Python, only once it returns to
 * Python in one blocked in C code.
 */
#ifndef REMOTE_EXEC_H
#define REMOTE_EXEC_H

#include <stddef.h>

struct py_proc;

/* Whether pp can take a request (the same errors as below, but for
 * -EBUSY and -ENAMETOOLONG). */
int remote_exec__check(const struct py_proc *pp, char *why, size_t whylen);

/*
 * Asks pp's main thread to run the script at path, a path in pp's own mount
 * namespace.  0, or -errno with the reason in why:
 *   -ENOTSUP       the version has no remote execution (before 3.14)
 *   -EPERM         the interpreter refuses it (PYTHON_DISABLE_REMOTE_DEBUG,
 *                  -X disable_remote_debug, a build without it)
 *   -EBUSY         a request of another debugger is still pending
 *   -ENAMETOOLONG  path does not fit the interpreter's buffer
 *   -EAGAIN        no main thread state yet
 *   other          -errno of a read or a write (-ESRCH: gone)
 */
int remote_exec__request(const struct py_proc *pp, const char *path, char *why, size_t whylen);

/* Takes back a request not yet taken: 1 if it was still pending (now
 * cancelled), 0 if the interpreter had taken it, or -errno. */
int remote_exec__cancel(const struct py_proc *pp);

#endif /* REMOTE_EXEC_H */
