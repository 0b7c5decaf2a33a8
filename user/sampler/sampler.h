/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ABI of libscalene-bpf-sampler.so, the allocation sampler that `scalene-bpf
 * run` preloads into the target: its probes (BPF attaches to them and
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
};

/*
 * Exported as `scalene_bpf_sampler_state` (SCALENE_BPF_SAMPLER_STATE_SYM).
 * Counters only grow, except table_entries.  The byte counts are exact but a
 * running thread adds its own to them only at its samples and when it exits,
 * so a live thread may hold back about one sampling mean of each.  A fork
 * child starts from its parent's values.
 */
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

	__u64 reserved[8];
};

#ifndef __bpf__
_Static_assert(sizeof(struct scalene_bpf_sampler_state) == 248,
	       "scalene_bpf_sampler_state is an ABI: change SCALENE_BPF_SAMPLER_ABI with it");
#endif

#endif /* SCALENE_BPF_SAMPLER_H */
