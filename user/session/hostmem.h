/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory under --all (--all --memory): the attach mode's allocation uprobes
 * (memprobe.h), placed for a whole host.
 *
 * Python's allocator functions are probed once per distinct interpreter
 * file (the executable, or libpython), for every process running it, when
 * the first followed process of that build is seen; its forks and later
 * processes of the same build need no more probes.  Files are told apart
 * by (device, inode) as seen through /proc/PID/root, so a container's
 * interpreter is its own.  Every process running a probed file traps on
 * each Python allocation, followed or not: the BPF program drops those
 * that are not followed.  So when filters choose the processes
 * (per_process), the Python allocator is probed per followed process too,
 * as libc is: a process filtered out never traps, and a fork child is
 * measured from the moment the loader has its probes in place.
 *
 * libc's malloc, calloc and realloc are probed per followed process (a
 * probe on the whole file would make every process on the host trap on
 * each malloc), for at most HOSTMEM_MAX_LIBC processes at a time; those
 * past it are counted and their native allocations (per_process: all of
 * their allocations) go unmeasured.  A process's own probes are let go
 * when its image ends, in the loader's detaching thread
 * (loader__detach_alloc_probe).
 */
#ifndef HOSTMEM_H
#define HOSTMEM_H

#include <stdbool.h>
#include <stdint.h>

struct loader;
struct py_proc;
struct facts_uprobes;
struct json_object;

#define HOSTMEM_MAX_LIBC 64

struct hostmem;

/* hit_cost_ns: what one hit costs here (loader__uprobe_cost_ns), < 0 if not
 * measured. */
struct hostmem *hostmem__new(struct loader *l, double hit_cost_ns, bool per_process);
void hostmem__free(struct hostmem *hm);
/* A followed process's image is Python: its probes. */
void hostmem__python(struct hostmem *hm, int pid, const struct py_proc *pp);
/* pid's image ended (exit or exec): its libc probes go. */
void hostmem__ended(struct hostmem *hm, int pid);
/* The probes that measure pid's allocations, for its profile.  The hits are
 * the host's (index.json has them): out->hits is 0 and out->host set. */
void hostmem__facts(const struct hostmem *hm, int pid, struct facts_uprobes *out);
/* index.json's "memory": what was probed, the hits and their cost, and
 * what attaching and detaching took; a warning added to warnings (an
 * array, or NULL) for processes whose libc was not probed. */
struct json_object *hostmem__json(struct hostmem *hm, uint64_t hits, double elapsed_s,
				  struct json_object *warnings);
/* The end of a run: the hits and their cost, on stderr. */
void hostmem__report(struct hostmem *hm, uint64_t hits, double elapsed_s);

#endif /* HOSTMEM_H */
