/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Recognising a CPython process: where its interpreter lives, which version
 * it is, the layout table for that version, and the values the BPF walker
 * needs.  Checked against the live process before use: a wrong table gives
 * wrong stacks, so a disagreement is refused, never guessed around.
 */
#ifndef PYTHON_H
#define PYTHON_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>
#include "abi.h"

struct py_offsets;

#define PY_MAX_TEXT PY_TEXT_RANGES
#define PY_MAX_MACHINERY 24
#define PY_MIN_MINOR 9
#define PY_MAX_MINOR 15
/* "3.9 to 3.15", from the two above. */
#define PY_STR_(x) #x
#define PY_STR(x) PY_STR_(x)
#define PY_SUPPORTED "3." PY_STR(PY_MIN_MINOR) " to 3." PY_STR(PY_MAX_MINOR)

struct py_proc {
	int pid;
	uint32_t version_hex;
	int minor;
	const struct py_offsets *off;
	uint64_t runtime;	       /* &_PyRuntime */
	uint64_t main_thread;	       /* pthread_t of the main thread */
	uint64_t text[PY_MAX_TEXT][2]; /* interpreter code: Python time, but under a call */
	int ntext;
	/* The interpreter's own call machinery (the eval loop, making and
	 * freeing Python frames): Python time even under a call. */
	uint64_t machinery[PY_MAX_MACHINERY][2];
	int nmachinery;
	bool static_build; /* interpreter linked into the executable */
	struct py_walk_cfg cfg;
	/* The GIL's locks, [gil_lo, gil_hi) (see struct proc_info); 0, 0 with
	 * the reason in gil_why when GIL wait cannot be measured. */
	uint64_t gil_lo, gil_hi;
	char gil_why[160];
	/* The GIL's last_holder field (cfg.gil_holder); 0: not known. */
	uint64_t gil_holder;
	/* A free-threaded build: whether its GIL was on when it was
	 * recognised (PYTHON_GIL=1, or an extension that needed it, turns it
	 * on): 1 or 0; -1 in other builds, or when it could not be read. */
	int gil_enabled;
	/* Where the interpreter's own _Py_DebugOffsets moved fields from
	 * where the table has them (taken from it: off is then a table made
	 * for it); "" when they agree. */
	char layout_note[256];
	char path[PATH_MAX]; /* binary holding the interpreter, as mapped */
	/* PyCode_Type's deallocator: its offset in that file, and the file's
	 * identity (0: not found, and walks read each code object anew; see
	 * struct pywalk_owner). */
	uint64_t code_dealloc_off;
	uint64_t file_inode;
	uint32_t file_dev_major, file_dev_minor;
};

/*
 * Inspects pid.  Returns 0 and fills *pp; otherwise writes a one-line reason
 * to why and returns:
 *   -ENOENT   not a Python process (no interpreter found)
 *   -EAGAIN   Python, but the runtime is not initialised yet: try again
 *   -ENOTSUP  a Python version or build this profiler does not support
 *   -EPROTO   the live process disagrees with the layout table
 *   -ESRCH    the process is gone
 *   other     -errno of a failed read
 */
int python__detect(int pid, struct py_proc *pp, char *why, size_t whylen);

/*
 * 3.13+: the layout `table` with what the interpreter's _Py_DebugOffsets (its
 * first n bytes in buf) publishes of it in place of the table's values where
 * they differ, into *out (table itself when they agree; otherwise a table
 * kept for the profiler's life), and each difference named in note ("" when
 * none).  0, or -EPROTO with why when the published values cannot be a
 * layout.
 */
int python__adopt_debug_offsets(const struct py_offsets *table, const uint8_t *buf, size_t n,
				const struct py_offsets **out, char *note, size_t notelen,
				char *why, size_t whylen);
struct elf_cache;
/* The same, keeping the interpreter's ELF file in `cache` (usyms.h) for the
 * next process of that build: a host starts many. */
int python__detect_cached(int pid, struct py_proc *pp, struct elf_cache *cache, char *why,
			  size_t whylen);

/* Before a launch: refuses an interpreter binary whose version (from its
 * name or the libpython it needs) is not supported.  0, or -ENOTSUP with the
 * reason in why.  Binaries it cannot tell about pass. */
int python__check_binary(const char *path, char *why, size_t whylen);

/* glibc x86_64: struct pthread.tid, the kernel thread id of a pthread_t
 * (the thread states of 3.9 and 3.10 hold only the pthread_t).  Checked per
 * process against the main thread before use (python__thread_tid). */
#define GLIBC_PTHREAD_TID 0x2d0

/* The main interpreter (_PyRuntime.interpreters.main): 0, -ENOTSUP (the
 * table has no such field), -EAGAIN (none yet) or -errno. */
int python__main_interp(const struct py_proc *pp, uint64_t *interp);

/* The main thread's state (the one whose thread_id is pp->main_thread),
 * from the interpreters' thread lists: 0, -EAGAIN (none yet) or -errno. */
int python__main_tstate(const struct py_proc *pp, uint64_t *tstate);

/* The kernel thread id of a thread state: native_thread_id (3.11+), or
 * through its pthread_t (glibc); 0 with -errno when it cannot be told. */
int python__thread_tid(const struct py_proc *pp, uint64_t tstate, int *tid);

/* The walker's configuration for a layout table (glibc x86_64 TSD). */
void python__walk_cfg(const struct py_offsets *o, uint64_t tss_key_addr, int64_t tls_off,
		      struct py_walk_cfg *c);

/* True when ip lies in the interpreter's own code. */
bool python__in_interpreter(const struct py_proc *pp, uint64_t ip);

/* True when ip lies in the interpreter's call machinery: the eval loop and
 * the functions that make and free Python frames (those the symbol tables
 * name).  A sample there under a call is the interpreter's work, not the
 * called function's. */
bool python__in_call_machinery(const struct py_proc *pp, uint64_t ip);

/*
 * Where the code-object deallocator of the interpreter a just-exec'ed pid
 * will run is, from its files alone, before it has mapped its libpython or
 * run its runtime: fills pp's path, minor, code_dealloc_off and file
 * identity (the rest zero).  The interpreter is the executable (exe, a
 * path in pid's root; NULL: the one pid runs), or the libpython it needs
 * found through its run path.  0, -ENOENT (not found that way), -ENOTSUP
 * (a version without a layout table), or -errno.
 */
int python__code_dealloc_in_files(int pid, const char *exe, struct py_proc *pp);

/* Parses "3.12" / "python3.12" / "libpython3.12.so.1.0" style names: the
 * minor version, or -1. */
int python__minor_from_name(const char *name);

/* "3.12.1" from a PY_VERSION_HEX. */
void python__version_string(uint32_t hex, char *buf, size_t n);

#endif /* PYTHON_H */
