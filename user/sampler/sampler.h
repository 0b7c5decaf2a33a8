/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ABI of libscalene-bpf-sampler.so, the allocation sampler that `scalene-bpf
 * run` preloads into the target (or that the profiler loads into a running
 * interpreter, see "Attaching" below): its probes (BPF attaches to them and
 * walks the Python stack) and its state block (the loader reads it with
 * process_vm_readv, BPF copies it at the exit probe).  Fixed-width fields
 * only: BPF and user space both include this file.
 *
 * What is counted.  Every successful allocation through malloc, calloc,
 * realloc, reallocarray, posix_memalign, aligned_alloc, memalign, valloc and
 * pvalloc, and through Python's MEM and OBJ allocator domains (PyMem_Malloc,
 * PyObject_Malloc and their calloc/realloc), counts its requested size once.
 * A Python-domain allocation that pymalloc passes on to malloc is counted as
 * Python only.  realloc counts as a free of the old block and an allocation
 * of the full new size.  Copies through memcpy, memmove, __memcpy_chk and
 * __memmove_chk count their length; copies that libc or the compiler do
 * inline are not seen.
 *
 * Sampling.  Each thread draws the distance to its next sample point from an
 * exponential distribution with mean P bytes (SCALENE_BPF_SAMPLE_BYTES,
 * default 1 MiB): the sample points form a Poisson process over the bytes the
 * thread allocates.  An allocation of s bytes that contains at least one
 * sample point is sampled, which happens with probability q = 1 - exp(-s/P),
 * and carries the weight
 *
 *	weight = s / q = s / (1 - exp(-s/P))	(about P for s << P, s for s >> P)
 *
 * so that the expected sum of weights of any set of allocations (a line, a
 * domain, the live set) equals its bytes, whatever else the thread allocates
 * in between.  A "window" sampler, whose weight is the bytes since the
 * previous sample, gives the same total but hands the bytes of many small
 * allocations to the large one that ends the window.  Copies are sampled the
 * same way with their own mean (SCALENE_BPF_COPY_SAMPLE_BYTES, default
 * 2 MiB).  A mean of 0 turns that sampler off (counting goes on).
 *
 * Frees.  A sampled allocation is remembered (pointer, weight, flags) in a
 * bounded lock-free table until it is freed or reallocated; its free fires
 * the free probe with the same weight, so the footprint (sum of live
 * weights), its peak and the leaks follow the sampled set exactly.  When the
 * table is full the allocation is still reported, flagged SBS_F_UNTRACKED,
 * and its free will not be.
 *
 * Attaching to a running interpreter.  Instead of being preloaded, the
 * library can be loaded into a running CPython (the profiler has its main
 * thread run a script, CPython 3.14's remote execution, PEP 768) with
 * ctypes.PyDLL, which then calls, holding the GIL:
 *
 *	int scalene_bpf_sampler_attach(__u64 sample_bytes, __u32 stale_ms)
 *
 * It wraps Python's MEM and OBJ domains only: code already bound to libc's
 * malloc and memcpy keeps calling them, so native allocations and copies are
 * not seen (`hooks` says malloc-shadowed, and never malloc-seen).
 * sample_bytes is the malloc sampling mean (0: the environment's, else the
 * default); stale_ms bounds the heartbeat (0: 3000).  Returns 0, -EALREADY
 * (attached now, or before in its parent, or covered, or the domains are
 * wrapped by the preloaded library), -ENOSYS (PyMem_GetAllocator, PyMem_SetAllocator
 * or Py_AddPendingCall not found), -EINVAL (sample_bytes over 2^50), or
 * pthread_create's error.
 *
 * Heartbeat and control.  A watcher thread of the library reads attach_ctl
 * and attach_beat every 100 ms.  The profiler writes both from outside: it
 * changes attach_beat at least once a second once it knows where the block
 * is (stale_ms counts from the attach), and sets SBS_CTL_DETACH in attach_ctl to leave.  On DETACH, or when
 * attach_beat has not changed for stale_ms (the profiler died), the watcher
 * queues the restore with Py_AddPendingCall; the main thread runs it at its
 * next check for pending calls (a bytecode boundary) with the GIL held.  If
 * that has not happened after a second (a main thread blocked in C; on
 * 3.9-3.12 one that keeps the GIL), the watcher takes the GIL and restores
 * itself.  Then it exits.  The restore gives each domain whose top is still
 * our wrapper the allocator attach found there; one under another hook keeps
 * our wrapper, which then passes calls through.  attach_state (enum
 * sbs_attach) tells how it went.
 * Sampling is then off; the library stays mapped (it is never unloaded:
 * threads hold its thread-exit destructor).  An attach after a RESTORED
 * detach starts over (the profiler came back); after COVERED, or in a fork
 * child, it returns -EALREADY.
 *
 * Probes (probes.h: functions named scalene_bpf_probe_<name>, arguments in
 * order):
 *
 *   init(state, abi)		once, from the library's constructor: the
 *				library is live in this process; `state` is the
 *				address of scalene_bpf_sampler_state, `abi` is
 *				SCALENE_BPF_SAMPLER_ABI.
 *   malloc(weight, flags, ptr, size)
 *				an allocation was sampled: `weight` bytes (see
 *				above), SBS_F_* `flags` (bit 0: Python domain),
 *				the block `ptr` and its requested `size` (0 with
 *				SBS_F_RESTORED).
 *   free(ptr, weight, flags)	a sampled block is being freed (or reallocated):
 *				`weight` and `flags` as at its malloc probe,
 *				plus SBS_F_STALE.  Fired before the block is
 *				released, so a later malloc probe may reuse the
 *				address.
 *   memcpy(weight, size)	a copy was sampled: `weight` bytes, as for
 *				malloc, for a copy of `size` bytes.
 *   exit(state)		the process exits normally (not on _exit or a
 *				signal); the state block is final.
 *
 * malloc, free and memcpy fire on the thread that allocates, frees or copies
 * (a free flagged SBS_F_STALE: on the thread that got the address back).
 * Arguments are 64-bit except `flags` and `abi` (32-bit).
 */
#ifndef SCALENE_BPF_SAMPLER_H
#define SCALENE_BPF_SAMPLER_H

#ifndef __bpf__
#include <linux/types.h>
#endif

#define SCALENE_BPF_SAMPLER_SONAME "libscalene-bpf-sampler.so"
#define SCALENE_BPF_SAMPLER_STATE_SYM "scalene_bpf_sampler_state"
#define SCALENE_BPF_SAMPLER_ATTACH_SYM "scalene_bpf_sampler_attach"

#define SCALENE_BPF_SAMPLER_MAGIC 0x53424d53u /* "SMBS" */
#define SCALENE_BPF_SAMPLER_ABI 1

/* Environment read by the library's constructor. */
#define SCALENE_BPF_ENV_SAMPLE_BYTES "SCALENE_BPF_SAMPLE_BYTES"
#define SCALENE_BPF_ENV_COPY_SAMPLE_BYTES "SCALENE_BPF_COPY_SAMPLE_BYTES"
/* "both" (default), "ctor", "defer" or "off": when to wrap Python's domains. */
#define SCALENE_BPF_ENV_PYWRAP "SCALENE_BPF_SAMPLER_PYWRAP"
/* "1": one line of totals on stderr at exit; any other value: append it to that file. */
#define SCALENE_BPF_ENV_REPORT "SCALENE_BPF_SAMPLER_REPORT"

#define SCALENE_BPF_DEFAULT_SAMPLE_BYTES (1ull << 20)
#define SCALENE_BPF_DEFAULT_COPY_SAMPLE_BYTES (2ull << 20)

/* `flags` of the malloc and free probes. */
enum sbs_sample_flags {
	SBS_F_PYTHON = 1 << 0,	  /* allocated through Python's MEM or OBJ domain */
	SBS_F_UNTRACKED = 1 << 1, /* table full: no free probe will follow */
	/* malloc probe re-announcing a block whose free was reported by a realloc
	 * that then failed: the block is live again with the same weight; it is
	 * not a new allocation. */
	SBS_F_RESTORED = 1 << 2,
	/* free probe for a block whose address came back from the allocator while
	 * it was still tracked: it was released by a path the hooks do not see
	 * (a libc-internal free, a Python domain no longer wrapped). */
	SBS_F_STALE = 1 << 3,
};

/* scalene_bpf_sampler_state.hooks: how the libc interposers are placed. */
enum sbs_hooks {
	/* The next definition of malloc after this library is not glibc's
	 * (jemalloc, tcmalloc, ... later in the search order): the hooks forward
	 * to it. */
	SBS_H_FOREIGN_ALLOC = 1 << 0,
	/* Another malloc comes before this library's (an allocator preloaded
	 * first, or linked into the executable): native allocations are not
	 * seen.  Python domains and copies still are. */
	SBS_H_MALLOC_SHADOWED = 1 << 1,
	/* Same for memcpy. */
	SBS_H_MEMCPY_SHADOWED = 1 << 2,
	/* The constructor has run (configuration read, forwarding resolved). */
	SBS_H_READY = 1 << 3,
	/* A malloc-family hook of this library has been called: unset at exit
	 * means native allocations were not seen, whatever the cause. */
	SBS_H_MALLOC_SEEN = 1 << 4,
};

/* scalene_bpf_sampler_state.python: the Python domain wrap, as it happened. */
enum sbs_python {
	SBS_PY_FOUND = 1 << 0,	 /* PyMem_GetAllocator/PyMem_SetAllocator found */
	SBS_PY_CTOR = 1 << 1,	 /* MEM and OBJ wrapped by the constructor */
	SBS_PY_CHECKED = 1 << 2, /* the check after Py_IsInitialized() ran */
	/* ... and found the constructor's wrap no longer on top: replaced
	 * (PYTHONMALLOC, -X dev: then only the re-wrap counts) or covered by a
	 * hook such as -X tracemalloc (then both count, nested) */
	SBS_PY_CTOR_LOST = 1 << 3,
	SBS_PY_REWRAPPED = 1 << 4,    /* ... and wrapped the domains again */
	SBS_PY_NO_GIL_CHECK = 1 << 5, /* no thread-state function: the check cannot run */
	SBS_PY_EXIT_OURS = 1 << 6,    /* at exit, a wrapper of ours was on top of OBJ */
	/* At exit another hook (tracemalloc, a debugger) was on top of OBJ: a
	 * wrapper of ours may still be below it. */
	SBS_PY_EXIT_OTHER = 1 << 7,
	/* The library was dlopen()ed into a running interpreter (Py_IsInitialized()
	 * was true in its constructor): nothing is wrapped until
	 * scalene_bpf_sampler_attach(), and the libc hooks are not bound. */
	SBS_PY_LATE = 1 << 8,
};

/* scalene_bpf_sampler_state.attach_ctl, written by the profiler. */
enum sbs_ctl {
	SBS_CTL_DETACH = 1 << 0, /* take the wraps out now */
};

/*
 * scalene_bpf_sampler_state.attach_state, written by the library.  Bits are
 * only added, except WATCHING, which goes when the watcher ends.  Sampling
 * goes on while ATTACHED is set and none of RESTORED, COVERED and FORKED is.
 */
enum sbs_attach {
	/* scalene_bpf_sampler_attach() wrapped MEM and OBJ. */
	SBS_AT_ATTACHED = 1 << 0,
	/* The watcher thread runs: set before it starts, cleared as its last
	 * act, once the restore has run (or the interpreter is finalising). */
	SBS_AT_WATCHING = 1 << 1,
	/* The watcher saw SBS_CTL_DETACH in attach_ctl and asked for the restore. */
	SBS_AT_DETACH_ASKED = 1 << 2,
	/* The watcher saw attach_beat unchanged for stale_ms (the profiler is
	 * gone) and asked for the restore. */
	SBS_AT_BEAT_LOST = 1 << 3,
	/* Both domains were put back as attach found them, each only because our
	 * wrapper was still on top of it; sampling is off. */
	SBS_AT_RESTORED = 1 << 4,
	/* At the restore, another hook (tracemalloc, a debugger) was on top of
	 * one of our wrappers: that wrapper stays in its chain, passing calls
	 * through, and sampling is off.  A domain that had ours on top was put
	 * back. */
	SBS_AT_COVERED = 1 << 5,
	/* A fork child of an attached process: no watcher in it, sampling off,
	 * the wrappers pass calls through. */
	SBS_AT_FORKED = 1 << 6,
};

/*
 * Exported as `scalene_bpf_sampler_state` (SCALENE_BPF_SAMPLER_STATE_SYM).
 * Counters only grow, except table_entries.  The byte counts are exact but a
 * running thread adds its own to them only at its samples and when it exits,
 * so a live thread may hold back about one sampling mean of each.  A fork
 * child starts from its parent's values.
 */
/* The name (comm) of the thread scalene_bpf_sampler_attach() starts, which a
 * profiler leaves out of the profile: it is the profiler's, not the
 * program's. */
#define SCALENE_BPF_SAMPLER_THREAD "scalene-bpf-mem"

struct scalene_bpf_sampler_state {
	__u32 magic;	    /* SCALENE_BPF_SAMPLER_MAGIC */
	__u32 abi;	    /* SCALENE_BPF_SAMPLER_ABI */
	__u32 size;	    /* sizeof(struct scalene_bpf_sampler_state) */
	__u32 pid;	    /* the process these counts belong to (set again in fork children) */
	__u64 sample_bytes; /* mean P of the malloc sampler; 0: off */
	__u64 copy_sample_bytes; /* mean of the copy sampler; 0: off */
	__u32 hooks;		 /* enum sbs_hooks */
	__u32 python;		 /* enum sbs_python */

	/* Exact totals. */
	__u64 alloc_bytes;  /* requested bytes of successful allocations, all kinds */
	__u64 python_bytes; /* ... of them through Python's MEM and OBJ domains */
	__u64 copy_bytes;   /* bytes copied through the interposed copy functions */

	/* Samples. */
	__u64 malloc_samples;		  /* malloc probes, SBS_F_RESTORED ones excluded */
	__u64 python_samples;		  /* ... of them SBS_F_PYTHON */
	__u64 sampled_bytes;		  /* sum of their weights: estimates alloc_bytes */
	__u64 sampled_python_bytes;	  /* ... of the Python ones: estimates python_bytes */
	__u64 free_samples;		  /* free probes, less those undone by SBS_F_RESTORED */
	__u64 freed_sampled_bytes;	  /* sum of their weights */
	__u64 freed_sampled_python_bytes; /* ... of the Python ones */
	__u64 live_sampled_bytes;	  /* weights of tracked blocks not yet freed */
	__u64 peak_sampled_bytes;	  /* highest live_sampled_bytes seen */
	__u64 copy_samples;		  /* memcpy probes */
	__u64 copy_sampled_bytes;	  /* sum of their weights: estimates copy_bytes */

	/* The table of sampled blocks. */
	__u64 table_entries;	/* blocks tracked now */
	__u64 table_overflows;	/* samples left untracked: table full (SBS_F_UNTRACKED) */
	__u64 table_stale;	/* tracked blocks released unseen (SBS_F_STALE) */
	__u64 realloc_restores; /* failed reallocs of tracked blocks (SBS_F_RESTORED) */

	/* Attached to a running interpreter (scalene_bpf_sampler_attach). */
	__u64 attach_beat;  /* written by the profiler from outside (process_vm_writev): it
			     * changes at least every second while the profiler is attached */
	__u32 attach_ctl;   /* enum sbs_ctl, written by the profiler */
	__u32 attach_state; /* enum sbs_attach, written by the library */

	__u64 reserved[6];
};

#ifndef __bpf__
_Static_assert(sizeof(struct scalene_bpf_sampler_state) == 248,
	       "scalene_bpf_sampler_state is an ABI: change SCALENE_BPF_SAMPLER_ABI with it");

/* See "Attaching to a running interpreter" above; exported as
 * SCALENE_BPF_SAMPLER_ATTACH_SYM. */
int scalene_bpf_sampler_attach(__u64 sample_bytes, __u32 stale_ms);
#endif

#endif /* SCALENE_BPF_SAMPLER_H */
