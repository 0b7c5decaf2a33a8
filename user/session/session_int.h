/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The session's own state, shared by its files and by nothing else:
 * session.c (the process table, records to the profile, the facts) and
 * session_async.c (await attribution: the reader of each process's event
 * loops and the probe of its asyncio layout).
 */
#ifndef SESSION_INT_H
#define SESSION_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/types.h>

#include "abi.h"
#include "model/facts.h"
#include "gpu/gpu.h"
#include "session/asyncprobe.h"
#include "session/pyasync.h"
#include "target/python.h"
#include "sampler/sampler.h"
#include "session/session.h"

struct frame_ref;
struct ksyms;
struct sample_in;
struct unwind;

struct asyncprobe;
struct elf_cache;
struct hmap;
struct pycode;
struct pycode_cache;
struct usyms;

#define UTIL_BUCKETS 64

enum tproc_state {
	TP_DETECTING = 0, /* started or exec'ed: not recognised yet */
	TP_PYTHON,
	TP_OTHER,	/* not Python (a shell, a tool): its children may be */
	TP_UNSUPPORTED, /* Python we cannot walk; the reason was reported */
};

struct tproc {
	int pid;
	int ppid;
	enum tproc_state state;
	bool exited;
	uint64_t space;	       /* code-object cache namespace */
	uint64_t parent_space; /* the parent's, for code objects inherited at fork */
	struct py_proc pp;
	struct usyms *usyms;
	/* --native: its stacks' unwinder (session_native.c); made at the first
	 * native sample, unwind_failed when it could not be. */
	struct unwind *unwind;
	bool unwind_failed;
	uint64_t next_native_ns; /* its maps read again (snative_tick) */
	/* --native-unwind bpf: usyms__gen() + 1 of the maps whose tables BPF
	 * has (0: none given). */
	unsigned int tables_gen;
	uint64_t tables_sum; /* utables__proc's sum of what BPF has */
	uint64_t next_try_ns, first_try_ns, last_try_ns, retry_ns;
	/* Its interpreter's files were read for the code deallocator's place
	 * (python__code_dealloc_in_files), once per image. */
	bool dealloc_files_read;
	uint64_t recognised_ns; /* when it was found to be Python */
	/* Since when the probe on its interpreter's code deallocator has been
	 * in place (CLOCK_MONOTONIC; 0: none). */
	uint64_t code_probe_ns;
	char why[256];
	/* The name of threads the profiler put there, left out of the
	 * profile ("": none). */
	char left_out[16];
	/* The allocation sampler in this process, as its probes reported. */
	bool sampler_loaded;
	bool sampler_final; /* its exit probe fired: state is final */
	uint64_t sampler_addr;
	struct scalene_bpf_sampler_state sampler;
	/* Await attribution: the reader of its event loops' tasks, and the
	 * measurement of the _asyncio layout it needs (asyncprobe.h). */
	struct session *session;
	struct pyasync *aw;
	struct asyncprobe *probe;
	bool probe_done;
	/* The probe's layout, and (3.14+) whether _asyncio's published
	 * offsets are still to be looked for; its entry in async_layouts
	 * (-1: none). */
	struct async_layout async_probed;
	bool async_published_pending;
	int async_note;
	bool uvloop_told;
	uint64_t next_async_ns;
	/* System-wide (host_poll): the gap between looks at the event loops;
	 * when its last sample (CPU or off-CPU) was taken; the last look;
	 * whether an idle event loop was ever seen in it.  async_final: its
	 * reader's counts, kept when the reader is freed at the end of the
	 * image, before its profile is written (zero before). */
	uint64_t async_gap_ns;
	uint64_t async_active_ns;
	bool async_loop_seen;
	struct pyasync_stats async_final;
	/* System-wide: the process's own profile (the host's), and its root
	 * and working directory held open (O_PATH) so that its files can be
	 * read after it exits; -1 when not open. */
	struct profile *profile;
	int root_fd, cwd_fd;
	int64_t cpu_samples; /* of this image */
	uint32_t gen;	     /* the image, as BPF numbers them (proc_info.gen) */
	bool drained;	     /* its counts were drained at its end */
	uint64_t start_ns;   /* its fork or exec record's time, 0 if found running */
	/* System-wide, counted samples: exited, its end waits for its counts
	 * to come with the periodic drains (end_drains of them so far). */
	bool end_pending;
	int end_drains;
	struct proc_record end_rec;
};

struct mem_summary {
	int python_procs, with_sampler, with_state, not_loaded, shadowed, not_wrapped, foreign;
	int not_loaded_pid, shadowed_pid, not_wrapped_pid;
	double alloc, python, copy, sampled, sampled_python, sampled_copy;
	uint64_t overflows, stale, restores;
	uint64_t sample_bytes, copy_sample_bytes;
};

/*
 * Code objects are read from the program's memory when a record first names
 * them, and one that was freed in between (a module's code once its import
 * is done, code of a finished exec()) cannot be read any more.  While code
 * objects come and go (a Python process just started and importing, or a
 * frame just found unreadable) the loader drains every FAST_POLL_MS instead
 * of every SLOW_POLL_MS, for FAST_WINDOW_NS after the last such sign.  The
 * program is never stopped or slowed for it: the cost is the loader's own
 * wake-ups (about 1000 a second in those windows, each a poll and a drain of
 * what came: a few microseconds of the loader's CPU each).
 */
/* Memory samples held back at most (session__hold_memory): a window's,
 * at one a MiB allocated, up to 64 GiB. */
#define MAX_HELD_MEM 65536
#define FAST_POLL_MS 1
#define SLOW_POLL_MS 10
/* System-wide, samples are counted in BPF and the ring buffer brings only
 * new stacks, code objects and process events (those wake the loader): it
 * is looked at this often otherwise. */
#define HOST_SLOW_POLL_MS 50
#define FAST_WINDOW_NS 1000000000ULL
/* Event loops are looked at this often (pyasync.h); system-wide, a process
 * that shows no CPU sample is looked at less and less often, down to once
 * per ASYNC_QUIET_POLL_NS. */
#define ASYNC_POLL_NS 10000000ULL
#define ASYNC_QUIET_POLL_NS 1000000000ULL
/* System-wide, the loops that run are looked at every ASYNC_POLL_NS while
 * their readers take less than this share of one CPU, less often (up to
 * ASYNC_LIVE_MAX_NS) when they would take more: the cost stays bounded
 * whatever the number of asyncio processes. */
#define ASYNC_HOST_BUDGET 0.02
#define ASYNC_LIVE_MAX_NS ASYNC_QUIET_POLL_NS
#define ASYNC_BUDGET_NS 250000000ULL /* how often the gap is set */
/* Samples come in with the counts' drain (s->drain_ns): a process is
 * quiet when none came for 2 s, and two drains at least (an event loop
 * that runs is looked at on the run schedule, whatever the drains'
 * timing). */
#define ASYNC_QUIET_AFTER_NS 2000000000ULL
/* Counts kept in BPF are drained this often (system-wide), unless the
 * session is told otherwise (session_opts.drain_ns). */
#define COUNTS_DRAIN_NS 250000000ULL
/* Counted samples of an image not known yet, kept for one more drain. */
#define MAX_HELD 256

/* Device records of a moment come a flush period (200 ms) or more after
 * it: samples wait this long for the GPU's use at their time. */
#define GPU_SETTLE_NS 1000000000ULL
/* Processes whose GPU library reported, for scalene_bpf.gpu. */
#define SESSION_GPU_PROCS 16

struct session_gpu_proc {
	int pid;
	bool final;	    /* its exit probe fired: the state is final */
	int read_err;	    /* the last state read: 0 or -errno */
	uint64_t active_ns; /* when its state first said collecting, 0: never */
	struct scalene_bpf_gpu_state st;
};

struct exe_key {
	uint64_t dev, ino, size, mtime_ns;
};

/* An interpreter file's code-object deallocator (see code_cache_for). */
struct code_probe_key {
	uint64_t inode, off;
	uint32_t dev_major, dev_minor;
};

struct thread_name_key {
	int tgid, tid;
};

struct session {
	struct session_bpf bpf;
	struct profile *profile;
	const struct session_host *host;
	const struct user_creds *creds;
	unsigned int rate_hz;
	uint64_t period_ns; /* of rate_hz */
	int ncpus;
	int root_pid;
	bool root_exited;
	struct hmap *procs; /* pid -> struct tproc */
	int nexited;	    /* exited processes still in procs */
	uint64_t procs_retired;
	struct mem_summary retired; /* what the memory summary keeps of them */
	struct hmap *tnames;	    /* (tgid, tid) -> interned name */
	struct pycode_cache *codes;
	struct elf_cache *elves;
	uint64_t next_space;
	uint64_t fast_until_ns; /* drain every FAST_POLL_MS until then */
	uint64_t util_bucket[UTIL_BUCKETS];
	uint64_t util_count[UTIL_BUCKETS];
	/* Counters for the profile. */
	uint64_t records, bad_records, frames_unreadable, samples_unknown_proc;
	/* Frames named by code objects copied as they were freed; copies of
	 * no use (a process not known as Python, a copy not whole). */
	uint64_t frames_from_copies, code_copies_unused;
	/* Of frames_unreadable, those whose code object BPF could not read as
	 * it took the sample, and those of samples taken before the probe on
	 * the interpreter's code deallocator was in place (code freed then is
	 * not copied); the rest were freed with no copy although it was. */
	uint64_t frames_unread_in_bpf, frames_unread_before_probe;
	uint64_t next_drain_ns;
	uint64_t drain_ns; /* how often (COUNTS_DRAIN_NS unless told) */
	/* The earliest per-process work due (a recognition try, an event-loop
	 * poll; see tproc_due_ns()): until then a tick looks at no process.
	 * Whatever gives a process work to do lowers it (session_due()). */
	uint64_t procs_due_ns;
	void *held[MAX_HELD]; /* struct held_record */
	int nheld;
	int npending_ends; /* processes whose end waits for the drains */
	/* Memory samples held back to be weighed later (session__hold_memory):
	 * struct held_mem, in order. */
	bool mem_hold;
	void **held_mem;
	size_t nheld_mem, cap_held_mem;
	uint64_t held_mem_dropped; /* past MAX_HELD_MEM, or no memory */
	uint64_t walk_status[8];
	uint64_t mem_records;
	bool memory;
	bool async_waits;
	struct pyasync_stats async_retired; /* of processes gone from procs */
	/* System-wide: the gap between looks at a live event loop, set every
	 * ASYNC_BUDGET_NS by the readers' cost (ASYNC_HOST_BUDGET), its largest, and
	 * the readers' time since async_budget_from_ns. */
	uint64_t async_live_gap_ns, async_live_gap_max_ns;
	uint64_t async_budget_from_ns;
	double async_budget_cost_ns;
	struct facts_async_layout async_layouts[FACTS_MAX_LAYOUTS]; /* found, or why not */
	int nasync_layouts;
	int interpreters;
	struct facts_interpreter interp_list[FACTS_MAX_INTERPRETERS];
	int ninterp_list;
	/* System-wide: executables seen not to be Python (struct exe_key),
	 * and the execs that cache spared a look at. */
	struct hmap *not_python_exes;
	uint64_t exec_cache_hits;
	/* Interpreter files whose code-object deallocator has our probe
	 * (value 1) or could not have it (2); what the last failure was. */
	struct hmap *code_probes; /* code_probe_key -> struct code_probe */
	int code_probes_pending;  /* placed in the background, not ended yet */
	/* Executables whose interpreter files were read for the code
	 * deallocator's place (early_code_probe): exe_key -> 1. */
	struct hmap *dealloc_exes;
	uint64_t code_probes_placed, code_probes_failed, code_probes_before_exec;
	char code_probe_why[160];
	/* GPU (session_gpu.c). */
	const char *gpu_library, *gpu_off;
	struct session_gpu_proc gpu[SESSION_GPU_PROCS];
	int ngpu;
	uint64_t gpu_procs_past; /* reporting processes beyond the table */
	uint64_t gpu_batches, gpu_bad_batches;
	struct hmap *gpu_stacks; /* stack id -> struct sample_event (malloc'ed) */
	struct hmap *gpu_sites;	 /* struct gpu_site_key -> profile site + 1 */
	uint64_t gpu_stacks_dropped, gpu_calls_no_stack;
	/* --native (session_native.c): the kernel's symbols, read at the first
	 * kernel frame; stacks whose eval-loop frames and Python calls did
	 * not pair up, of whole stacks. */
	bool native;
	struct ksyms *ksyms;
	bool ksyms_tried;
	uint64_t native_stacks, native_mismatched, native_no_unwinder;
	/* --native-unwind bpf: the tables given to BPF (made at the first
	 * process); samples unwound there, their frames and how they ended;
	 * copies sent for code of no table, or at a rule not followed. */
	struct utables *utables;
	uint64_t native_bpf_unwinds, native_bpf_frames, native_bpf_outside, native_bpf_unfollowed;
	uint64_t bpf_ends[UNWIND_BPF_NO_TABLES + 1];
};

/* The profile a process's records go to: its own (system-wide), or the
 * session's (a program and its children, as Scalene reports them). */
static inline struct profile *tp_profile(const struct session *s, const struct tproc *tp)
{
	return s->host ? tp->profile : s->profile;
}

/* Per-process work is due no later than `at` (0: now). */
static inline void session_due(struct session *s, uint64_t at)
{
	if (at < s->procs_due_ns)
		s->procs_due_ns = at;
}

/* A frame's names, interned in the profile its samples go to (NULL out of
 * memory); each code object remembers them for the profile that last
 * asked. */
void session_frame_names(struct profile *p, const struct pycode *pc, struct frame_ref *out);
/* The code object at code (cached; read from the process on first sight). */
const struct pycode *session_code_for(struct session *s, struct tproc *tp, uint64_t code,
				      uint64_t tag);

/* A record's frames resolved, innermost first: their count (0: none, the
 * reason in *unattributed). */
int session_frames(struct session *s, struct tproc *tp, const struct sample_event *ev,
		   struct frame_ref *frames, int *unattributed);

/* A native address's module, symbol and offset from the symbol's start, as
 * the process maps it (names interned in the profile its samples go to;
 * without a symbol, "+0x<file offset>" and offset -1): 0, or -ENOENT.
 * ts_ns: when it was seen (usyms__refresh_for). */
int session_native_name(struct session *s, struct tproc *tp, uint64_t ip, uint64_t ts_ns,
			const char **module, const char **sym, int64_t *offset);

/* A sample's Python frames grouped by the C-level calls of the eval loop
 * that run them (session.c: resolve_frames): each resolved frame's call,
 * counted from the innermost (0), and each call's entry frame's address on
 * the C stack (3.12+; else 0). */
struct frame_segs {
	int seg[MAX_FRAMES + 1];
	uint64_t entry[MAX_FRAMES + 1];
	int n; /* calls */
};

/* --native (session_native.c): a record's whole stack into stack and ips
 * (room for max frames), its length returned: the Python frames the walk
 * found (frames, nframes, in segs' calls), each call of the eval loop where
 * its native frame is, with the native frames between and below them and
 * the kernel's. */
int snative_stack(struct session *s, struct tproc *tp, const struct sample_event *ev,
		  const struct native_tail *nt, const struct frame_segs *segs,
		  const struct frame_ref *frames, int nframes, struct frame_ref *stack,
		  uint64_t *ips, int max);
void snative_free(struct session *s);
/* --native: a Python process's maps and files are read as it is recognised
 * and every NATIVE_MAPS_NS while it lives, so that its samples are unwound
 * and named even when the loader reads them after it has exited. */
void snative_tick(struct session *s, struct tproc *tp, uint64_t now);
/* Takes the process's tables out of BPF (its image ended or changed). */
void snative_forget(struct session *s, struct tproc *tp);
void snative_facts(const struct session *s, struct facts_native *out);

/* GPU (session_gpu.c): the library's records and launch sites. */
void sgpu_record(struct session *s, struct tproc *tp, const struct gpu_record *r);
void sgpu_stack(struct session *s, const struct agg_stack_record *r);
void sgpu_name(struct session *s, struct tproc *tp, const struct gpu_name_record *r);
void sgpu_call(struct session *s, struct tproc *tp, const struct gpu_call_record *c);
void sgpu_free(struct session *s);
void sgpu_facts(struct session *s, struct facts_gpu *out);

/* Await attribution (session_async.c). */
void sasync_start(struct session *s, struct tproc *tp);
void sasync_stop(struct tproc *tp);
bool sasync_due(const struct tproc *tp);
void sasync_tick(struct session *s, struct tproc *tp, uint64_t now);
void sasync_active(struct session *s, struct tproc *tp, uint64_t ts);
/* scalene_bpf.async of the session, or (tp) of one process's image. */
void sasync_facts(struct session *s, const struct tproc *tp, struct facts_async *out);

#endif /* SESSION_INT_H */
