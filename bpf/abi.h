/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The ABI between the BPF programs and the loader: fixed-width fields only,
 * explicit padding, every ring-buffer record starts with a tag.  User code
 * asserts the sizes (user/collect/loader.c).
 */
#ifndef SCALENE_BPF_ABI_H
#define SCALENE_BPF_ABI_H

/* Frames kept per sample, innermost first.  A power of two: the walker masks
 * the slot index with it.  A deeper stack keeps its innermost INNER_FRAMES
 * and its outermost OUTER_FRAMES (the frames between are counted as elided);
 * one deeper than WALK_DEPTH_MAX also loses its outermost frames and is
 * flagged truncated. */
#define MAX_FRAMES 128
#define INNER_FRAMES 64
#define OUTER_FRAMES (MAX_FRAMES - INNER_FRAMES) /* a power of two too */
#define WALK_DEPTH_MAX 1024

/* Room for the bytes of a frame read in one go (py_walk_cfg.frame_read):
 * f_lasti of a 3.9/3.10 PyFrameObject is at +104, owner of a 3.11+
 * _PyInterpreterFrame at +70.  A power of two so that offsets can be masked
 * into it. */
#define FRAME_BUF 128

/* The thread state's fields a walk needs (thread id, where the frames start,
 * the data stack's bounds) are read in one go: they lie within this many
 * bytes in every version (py_walk_cfg.ts_lo, ts_len). */
#define TS_BUF 256

/* 3.11+ pushes a thread's frames one after the other on its data stack: the
 * walker reads up to this many bytes of it at once and takes the frames in
 * there from that copy, instead of one read per frame.  A power of two. */
#define WIN_BUF 4096

/* glibc keeps the values of pthread keys below this in the thread's own
 * specific_1stblock; keys above it live in blocks reached through one more
 * pointer, which the walker does not follow (the loader refuses such a
 * process with a message). */
#define TSD_DIRECT_KEYS 32

/* 3.14+ holds a frame's code object, locals and stack slots as tagged
 * references (_PyStackRef): the low bits say how the reference is counted
 * (1 in a GIL build, 2 more in a free-threaded one), not where it is.  The
 * walker and the coroutine reader clear them. */
#define PY_REF_TAG_MINOR 14
#define PY_REF_TAG_BITS 3ULL

/* Executable mappings that count as the interpreter's own code (libpython or
 * the executable, the dynamic loader, the allocation sampler). */
#define PY_TEXT_RANGES 6

/* Kernel code that handles a uprobe hit (see probe_text in profile.bpf.c),
 * and the kernel frames read to find it in a sample. */
#define PROBE_TEXT_RANGES 4
#define PROBE_STACK_DEPTH 32

enum event_type {
	EV_SAMPLE = 1,
	EV_EXEC = 2,
	EV_FORK = 3,
	EV_EXIT = 4,
	EV_SAMPLER = 5,	 /* the allocation sampler started or ended in a process */
	EV_STACK = 6,	 /* a stack counted in agg_counts, sent once (struct agg_stack_record) */
	EV_GPU = 7,	 /* the GPU library's state or records (struct gpu_record) */
	EV_GPU_CALL = 8, /* a traced CUDA call, its stack sent once (struct gpu_call_record) */
	EV_GPU_NAME = 9, /* a kernel's name (struct gpu_name_record) */
	EV_CODE = 10,	 /* a code object as it was freed (struct code_snap_record) */
	EV_NATIVE = 11,	 /* a CPU sample with its native stack (--native: struct native_sample) */
};

/* Where the thread was when the sample was taken. */
enum sample_mode {
	MODE_USER = 0,	 /* on CPU in user mode */
	MODE_KERNEL = 1, /* on CPU in kernel mode */
	MODE_OFFCPU = 2, /* blocked; weight is the off-CPU time it stands for */
	/* Fired by the allocation sampler (user/sampler/sampler.h): mem_bytes is
	 * the weight, mem_addr the block, mem_size the request, mem_flags its
	 * SBS_F_* flags. */
	MODE_MALLOC = 3,
	MODE_FREE = 4,
	MODE_COPY = 5, /* mem_bytes: weight of a copy of mem_size bytes */
	/* The stack of a traced CUDA call (user/gpu/gpu.h), walked into BPF's
	 * scratch space: it leaves as an EV_STACK and an EV_GPU_CALL record,
	 * never as a sample. */
	MODE_GPU_API = 6,
};

/* Outcome of the Python stack walk. */
enum walk_status {
	WALK_OK = 0,
	WALK_NO_CONFIG = 1,    /* the process is tracked but not (yet) known as Python */
	WALK_NO_TSTATE = 2,    /* this thread has no Python thread state (native thread) */
	WALK_BAD_KEY = 3,      /* TSD key not initialised or beyond the direct block */
	WALK_READ_FAILED = 4,  /* a user-memory read failed mid-walk (stack kept so far) */
	WALK_TRUNCATED = 5,    /* more than WALK_DEPTH_MAX frames: the outermost not seen */
	WALK_TID_MISMATCH = 6, /* TSD slot held another thread's state */
	WALK_BUSY = 7,	       /* not walked: the CPU's walk scratch was in use */
};

/* Counters kept per CPU in the `stats` map; the profile reports them. */
enum stat_id {
	STAT_SAMPLES = 0,   /* samples of tracked processes */
	STAT_OFFCPU_EVENTS, /* off-CPU records emitted */
	STAT_RINGBUF_FULL,  /* records lost: ring buffer full */
	STAT_WALK_READ_FAILED,
	STAT_WALK_TRUNCATED,
	STAT_NO_TSTATE,
	STAT_NO_CONFIG,
	STAT_TASK_STORAGE_FAIL,	 /* a thread's state could not be made (see session.c) */
	STAT_PROC_TABLE_FULL,	 /* a child could not be tracked: map full */
	STAT_EVENTS_LOST,	 /* process events lost: ring buffer full */
	STAT_SAMPLE_NS,		 /* time spent on samples of tracked threads, ns */
	STAT_MEM_EVENTS,	 /* allocation sampler probes of tracked processes */
	STAT_MEM_NS,		 /* time spent on them, ns */
	STAT_MEM_LOST,		 /* allocation sampler records lost: ring buffer full */
	STAT_UPROBE_HITS,	 /* allocation uprobe hits (attach mode) */
	STAT_UPROBE_OUTSIDE,	 /* their samples outside the duty cycle's window */
	STAT_IDLE_NS,		 /* parked threads' waiting, not counted (no --idle), ns */
	STAT_OP_READ_FAILED,	 /* the innermost frame's current opcode was unreadable */
	STAT_PROBE_SAMPLES,	 /* samples inside the uprobe machinery: not the program's */
	STAT_PROBE_CHECKS,	 /* kernel stacks read to look for it */
	STAT_PROBE_CHECK_NS,	 /* time spent on them, ns */
	STAT_AGG_FULL,		 /* samples sent as records: the count tables were full */
	STAT_AGG_STACKS,	 /* stacks sent to the loader for the count tables */
	STAT_GPU_API,		 /* GPU library launch probes of tracked processes */
	STAT_GPU_LOST,		 /* GPU launch, record or state records lost: ring buffer full */
	STAT_WALK_BUSY,		 /* walks not made: the CPU's walk scratch was in use */
	STAT_WALKS,		 /* stack walks made */
	STAT_WALK_READS,	 /* user-memory reads they took */
	STAT_PROBE_NS,		 /* on-CPU time those probe samples stood for, ns */
	STAT_WALK_ENTERING,	 /* walks begun at the caller's frame: see pywalk_entering */
	STAT_WALK_NOT_A_FRAME,	 /* walks stopped at a caller that was not a frame */
	STAT_OFFCPU_WORK_FAILED, /* off-CPU task work that could not be queued */
	STAT_OFFCPU_NS,		 /* time spent making off-CPU records, ns */
	STAT_CODE_FREED,	 /* code objects freed (the probe on their deallocator) */
	STAT_CODE_SNAPS,	 /* of those, named by a walk lately: read as they went */
	STAT_CODE_SNAPS_LOST,	 /* ... and not sent: ring buffer full, or a read failed */
	STAT_STOLEN_NS,		 /* time the CPUs were not the threads' while they ran, ns */
	STAT_MAX,
};

/* Per-process walk configuration, written by the loader once it has found the
 * interpreter (user/target/python.c).  Offsets come from pyoffsets/. */
struct py_walk_cfg {
	__u64 tss_key_addr;   /* &_PyRuntime.autoTSSkey._key (3.9-3.14), else 0 */
	__s64 tls_off;	      /* 3.15+: the thread's state is at fsbase + tls_off */
	__u16 minor;	      /* CPython 3.minor */
	__u16 tsd_base;	      /* glibc: offsetof(struct pthread, specific_1stblock) */
	__u16 tsd_stride;     /* sizeof(struct pthread_key_data) */
	__u16 tsd_data;	      /* offsetof(struct pthread_key_data, data) */
	__u16 ts_thread_id;   /* PyThreadState.thread_id */
	__u16 ts_frame;	      /* frame (<=3.10), cframe (3.11/3.12), current_frame (3.13+) */
	__u16 cframe_current; /* _PyCFrame.current_frame (3.11/3.12), else 0xffff */
	__u16 f_code;	      /* f_code / f_executable */
	__u16 f_prev;	      /* f_back / previous */
	__u16 f_instr;	      /* f_lasti / prev_instr / instr_ptr */
	__u16 f_owner;	      /* owner (3.12+ shims), else 0xffff */
	__u16 frame_read;     /* bytes to read per frame, <= FRAME_BUF */
	__u16 co_adaptive;    /* co_code_adaptive (3.11+), else 0 */
	__u16 co_firstlineno;
	__u16 co_filename; /* with co_name: the code object's identity */
	__u16 co_name;
	__u16 co_code;	  /* co_code (<=3.10), else 0xffff */
	__u16 bytes_sval; /* PyBytesObject.ob_sval (<=3.10) */
	/* The part of the thread state read per walk, [ts_lo, ts_lo + ts_len),
	 * ts_len <= TS_BUF: it holds ts_thread_id, ts_frame and, 3.11+, the
	 * data stack's fields. */
	__u16 ts_lo;
	__u16 ts_len;
	__u16 ts_stack_chunk; /* datastack_chunk (3.11+), else 0xffff */
	__u16 ts_stack_top;   /* datastack_top (3.11+) */
	__u16 chunk_data;     /* _PyStackChunk.data (3.11+) */
	__u16 cframe_prev;    /* _PyCFrame.previous (3.11/3.12), else 0xffff */
	/* Code objects' first lines and identities are kept from one walk to
	 * the next (struct pywalk_owner): the loader has a probe on the
	 * interpreter's code-object deallocator, which empties what is kept. */
	__u16 code_cache;
	/* What the code-object deallocator's probe reads of a code object a
	 * walk named (struct code_snap_record): [co_lo, co_lo + co_len) holds
	 * co_firstlineno, co_filename, co_name, co_qualname (3.11+, else
	 * 0xffff) and co_linetable; compact str objects' state and length
	 * fields, the masks of their state and the sizes of their headers
	 * (ASCII, other); a bytes object's ob_size. */
	__u16 co_qualname;
	__u16 co_linetable;
	__u16 co_lo;
	__u16 co_len;
	__u16 str_state;
	__u16 str_length;
	__u16 str_ascii_size;
	__u16 str_compact_size;
	__u16 str_kind_shift;
	__u16 var_size;
	__u16 f_entry; /* 3.11: is_entry (the frame's eval loop was entered from C), else 0xffff */
	__u32 str_kind_mask;
	__u32 str_ascii_mask;
	__u32 str_compact_mask;
	__u32 ntext;		       /* ranges used in text[] */
	__u64 call_ops[4];	       /* CALL-family opcodes: bit n of word n / 64 (pyoffsets) */
	__u64 text[PY_TEXT_RANGES][2]; /* the interpreter's code: [start, end) */
	/* The main interpreter's collector runs while the int here is set
	 * (its gc.collecting): a sample then is garbage collection's
	 * (SAMPLE_F_GC).  0: not known. */
	__u64 gc_collecting;
	/* The main interpreter's GIL: the thread state that took it last at
	 * gil_holder, its locked int 8 bytes after.  A CPU sample of the thread
	 * whose state that is, while it is locked and another thread of the
	 * process exists, holds the GIL (SAMPLE_F_GIL_HELD).  0: not known. */
	__u64 gil_holder;
};

/* Per-process state in the `procs` map (key: tgid). */
struct proc_info {
	__u64 start_time; /* leader's start, clock ticks since boot: PID reuse guard */
	__u32 has_cfg;	  /* cfg is valid */
	__u32 gen;	  /* the image: execs since it was tracked (see agg_key) */
	struct py_walk_cfg cfg;
	/* The GIL's locks, [gil_lo, gil_hi): a futex wait on a word in there is
	 * a wait for the GIL.  0, 0: not known (GIL wait not measured). */
	__u64 gil_lo;
	__u64 gil_hi;
	/* Allocation uprobe hits of this image (attach mode and --all
	 * --memory), added to atomically; sent with its exec or exit record. */
	__u64 alloc_hits;
};

/* Per-thread state of tracked threads (task storage `threads`). */
struct tracked_thread {
	__u64 blocked_since; /* 0 while running */
	__u64 pending_ns;    /* blocked time not yet emitted */
	struct pywalk_cache {
		__u64 tstate; /* this thread's PyThreadState, once found */
		__u64 slot;   /* address of its TSD slot */
	} walk;
	/* Allocation sampling by uprobes (attach mode): mem_left counts down
	 * the bytes to the next sample point (0: not drawn yet); py_pending is
	 * the size of a Python allocation large enough to be passed on to libc
	 * (its libc half is not counted again). */
	__s64 mem_left;
	__u64 py_pending;
	/* Of pending_ns, the part spent waiting for the GIL; blocked_on_gil:
	 * the current block is one (set when it starts).  gil_lo, gil_hi: the
	 * process's (struct proc_info), copied at each CPU sample so that
	 * sched_switch needs no map lookup; 0, 0 until then, when a block in
	 * futex looks them up. */
	__u64 gil_pending_ns;
	__u32 blocked_on_gil;
	__u32 pad;
	__u64 gil_lo;
	__u64 gil_hi;
	/* Non-zero while an allocation uprobe's program runs on this thread:
	 * a sample then is the profiler's (the kernel unwinder cannot see
	 * past a BPF program's frame to the uprobe code that ran it). */
	__u64 in_probe;
	/* On-CPU time: the thread's run time (se.sum_exec_runtime, exact at a
	 * switch) and the clock when it was last switched in (0: not since its
	 * storage was made), and its run time at its last CPU sample (from
	 * its first switch-in on).  A sample stands for the time the thread
	 * ran since its previous one: samples the timer missed (fires that
	 * fell while the CPU was idle between the thread's short runs) are not
	 * lost.  The clock since the switch-in includes time that the
	 * thread's run time does not (stolen by the hypervisor, spent in
	 * interrupts: see rq_lost_ns): in_stolen_ns, that time seen since,
	 * from in_lost_ns, the CPU's count of it when last read. */
	__u64 in_run_ns;
	__u64 in_ktime;
	__u64 last_run_ns;
	__u64 in_lost_ns;
	__u64 in_stolen_ns;
};

/* One Python frame.  code == 0 marks an interpreter shim frame (3.12+ entry
 * frames) that user space skips.  tag (co_firstlineno) and ident (a mix of
 * the co_filename and co_name pointers), read at sample time, tell a code
 * object from another one made later at the same address: every module's
 * code starts at line 1, so the line alone is not enough. */
struct py_frame {
	__u64 code;
	__s32 offset; /* byte offset of the instruction; < 0: before the first one */
	__u32 tag;
	__u32 ident;
	__u32 flags; /* PY_FRAME_F_* */
};

/* py_frame.flags.  PY_FRAME_F_ENTRY (3.11): the interpreter's eval loop was
 * entered from C for this frame, so it is the outermost Python frame of one
 * C-level call of the eval loop (3.12+ mark that with a shim frame below it;
 * up to 3.10 every frame has its own call). */
#define PY_FRAME_F_ENTRY (1u << 0)

/* The identity of a code object from its co_filename and co_name pointers:
 * the same mix in BPF and in user space. */
static inline __u32 code_ident(__u64 filename, __u64 name)
{
	__u64 h = (filename >> 3) * 0x9e3779b97f4a7c15ULL ^ (name >> 3) * 0xc2b2ae3d27d4eb4fULL;

	return (__u32)(h ^ (h >> 32));
}

/* mem_flags bits above the sampler's SBS_F_* flags. */
#define MEMF_NO_FREES (1u << 16) /* from uprobes: frees are not followed */

/*
 * Every record BPF sends through the ring buffer begins with this: its type
 * (enum event_type) and the process it is of.  The loader dispatches on the
 * type (session.c: the minimum size of each and its handler).
 */
struct record_hdr {
	__u32 type;
	__u32 tgid;
};

/*
 * A code object that a walk named, read as its deallocator begins (the
 * probe on it), so that the loader can name the frames of samples it had
 * not read yet: import-time code, exec'd and eval'd code, and everything of
 * a process that exits.  Each block is a copy of [addr[i], addr[i] +
 * len[i]) of the process's memory (len 0: not read): the code object's
 * fields, its file name and its name (str objects: header and
 * characters), and its line table (a bytes object: header and bytes).  The
 * record ends len[CODE_SNAP_TABLE] bytes into table.  Sent through
 * code_snaps, a ring buffer of its own, which the loader reads before it
 * gives up on a code object.
 */
enum code_snap_block {
	CODE_SNAP_HEAD,
	CODE_SNAP_FNAME,
	CODE_SNAP_NAME,
	CODE_SNAP_TABLE
};
#define CODE_SNAP_BLOCKS 4
#define CODE_SNAP_HEAD_BYTES 256
#define CODE_SNAP_FNAME_BYTES 1024
#define CODE_SNAP_NAME_BYTES 512
#define CODE_SNAP_TABLE_BYTES 16384

struct code_snap_record {
	struct record_hdr hdr; /* EV_CODE */
	__u64 code;
	__u64 addr[CODE_SNAP_BLOCKS];
	__u32 len[CODE_SNAP_BLOCKS];
	__u8 head[CODE_SNAP_HEAD_BYTES];
	__u8 fname[CODE_SNAP_FNAME_BYTES];
	__u8 name[CODE_SNAP_NAME_BYTES];
	__u8 table[CODE_SNAP_TABLE_BYTES];
};

struct sample_event {
	struct record_hdr hdr; /* EV_SAMPLE */
	__u32 tid;
	__u16 cpu;
	__u8 mode;	  /* enum sample_mode */
	__u8 status;	  /* enum walk_status */
	__u64 ts;	  /* CLOCK_MONOTONIC ns */
	__u64 cpu_ns;	  /* on-CPU time this sample stands for */
	__u64 offcpu_ns;  /* blocked time flushed with this sample */
	__u64 user_ip;	  /* leaf user-mode instruction pointer, 0 if unknown */
	__s32 syscall_nr; /* off-CPU: the syscall the thread blocked in, -1 if none */
	__u32 nframes;
	__u64 mem_bytes; /* MODE_MALLOC/FREE/COPY, else 0 */
	__u64 mem_addr;
	__u64 mem_size;
	__u32 mem_flags;
	__u32 elided; /* frames left out between the innermost and outermost kept */
	__u32 flags;  /* SAMPLE_F_* */
	__u32 gen;    /* the process's image (proc_info.gen) */
	__u64 gil_ns; /* of offcpu_ns: the part spent waiting for the GIL */
	/* Samples the record stands for: 1, or more for a count drained from
	 * agg_counts (times and ns are then sums; ts is the last sample's). */
	__u32 count;
	__u32 pad;
	/* The thread's name when the record was made: after an exec (a
	 * launcher that execs the interpreter), and still there for a thread
	 * gone by the time the loader reads the record. */
	__u8 comm[16];
	struct py_frame frames[MAX_FRAMES];
};

/* sample_event.flags.  SAMPLE_F_CALL: a user-mode sample in the interpreter's
 * code while the innermost frame's current instruction is a CALL-family
 * opcode: the interpreter is running the C function that call invoked (a
 * builtin, a method of a built-in type, a C module), which is native time. */
#define SAMPLE_F_CALL (1u << 0)
/* SAMPLE_F_GC: the interpreter's garbage collector was running (a CPU
 * sample of a Python thread; py_walk_cfg.gc_collecting). */
#define SAMPLE_F_GC (1u << 1)
/* SAMPLE_F_GIL_HELD: the thread held the GIL (a CPU sample of a Python
 * thread of a process with more than one thread; py_walk_cfg.gil_holder). */
#define SAMPLE_F_GIL_HELD (1u << 2)

#define SAMPLE_HDR_SIZE (sizeof(struct sample_event) - MAX_FRAMES * sizeof(struct py_frame))

/*
 * --native: a CPU sample goes with what unwinding its native stack needs, in
 * user space (user/symbolize/unwind.c): the thread's user registers as it
 * was interrupted (or as it entered the kernel), a copy of its user stack
 * from the stack pointer up, and, for a sample in the kernel, the kernel's
 * own frames.  The copy is taken a page at a time and ends at the first page
 * that cannot be read (the top of the stack).
 */
#define NATIVE_STACK_BYTES 16384
#define NATIVE_KFRAMES 64

/* The registers kept: x86_64's DWARF numbering needs these to start an
 * unwind (rip, rsp, rbp, and the callee-saved ones a frame's rule may name). */
enum native_reg {
	NATIVE_REG_IP,
	NATIVE_REG_SP,
	NATIVE_REG_BP,
	NATIVE_REG_BX,
	NATIVE_REG_R12,
	NATIVE_REG_R13,
	NATIVE_REG_R14,
	NATIVE_REG_R15,
	NATIVE_REGS,
};

struct native_tail {
	__u64 regs[NATIVE_REGS]; /* all 0: the user registers were not read */
	/* Bytes of stack copied from regs[NATIVE_REG_SP]; with unwinding in BPF
	 * (ubpf_frames set), the bytes of the frames in stack. */
	__u32 stack_len;
	__u32 nkframes; /* kernel frames in kips, innermost first */
	/* Unwound in BPF (--native-unwind bpf): stack holds ubpf_frames struct
	 * unwind_frame, innermost first; ubpf_end says why it ended (enum
	 * unwind_bpf_end, with UNWIND_BPF_F_OUTSIDE).  UNWIND_BPF_NONE: a
	 * copy. */
	__u32 ubpf_frames;
	__u32 ubpf_end;
	__u64 kips[NATIVE_KFRAMES];
	__u8 stack[NATIVE_STACK_BYTES];
};

/*
 * --native-unwind bpf: BPF unwinds the user stack itself, with tables the
 * loader compiles from each mapped file's .eh_frame (user/symbolize/cfitable.c)
 * into rows: from a row's pc to the next row's, the canonical frame address
 * (CFA, the caller's stack pointer) is a register plus an offset, the return
 * address is at CFA - 8 (x86_64), and rbp is either unchanged or saved at CFA
 * plus an offset.  The rows of every file sit in one array (unwind_rows), each
 * file's sorted by pc and ending with a UNW_NONE row; a process's executable
 * mappings (struct unwind_proc, sorted by start) say where each file's rows
 * are and at what bias it is loaded, and where its page index is
 * (unwind_pages).  A row is 8 bytes (an array map's elements are 8-byte
 * aligned): offsets are kept in words.
 */
#define UNWIND_ROWS_MAX (1u << 21)
/* Each file's page index: for each 4 KiB page of its code, the rows that
 * can hold there (struct unwind_page), so that a lookup searches the rows of
 * one page, not all of the file's. */
#define UNWIND_PAGES_MAX (1u << 18)
#define UNWIND_PAGE_SHIFT 12
#define UNWIND_MAPS 128
#define UNWIND_FRAMES 128
#define UNWIND_ROW_STEPS 13 /* binary search steps: a page holds at most 4097 rows */
#define UNWIND_MAP_STEPS 8  /* log2(UNWIND_MAPS) + 1 */

enum unwind_cfa {
	UNW_NONE = 0, /* no rule for this code: frame pointers, if they lead anywhere */
	UNW_END,      /* the return address is undefined: the thread's first frame */
	/* A rule BPF does not follow (a CFA in another register or by an
	 * expression, a signal frame): the sample goes as a copy. */
	UNW_UNFOLLOWED,
	UNW_CFA_RSP, /* CFA = rsp + 8 * cfa_off */
	UNW_CFA_RBP, /* CFA = rbp + 8 * cfa_off */
	/* A lazy-binding PLT entry: CFA = rsp + 8 * cfa_off, + 8 more from the
	 * entry's byte rbp on (the push of the next stage). */
	UNW_CFA_PLT,
};

struct unwind_row {
	__u32 pc;      /* link-time address (the file's p_vaddr space) */
	__u8 cfa;      /* enum unwind_cfa */
	__s8 rbp;      /* the caller's rbp is at CFA + 8 * rbp; 0: rbp is the caller's */
	__s16 cfa_off; /* words */
};

struct unwind_map {
	__u64 start, end; /* [start, end) in the process */
	__u64 bias;	  /* address in the process minus link-time address */
	__u32 row_lo;	  /* the file's rows: unwind_rows[row_lo, row_lo + row_n) */
	__u32 row_n;	  /* 0: no rows for this file (its samples go as copies) */
	/* Its page index: unwind_pages[page_lo + k] for the page at link-time
	 * address page_base + (k << UNWIND_PAGE_SHIFT), k < page_n; past them,
	 * its last row. */
	__u64 page_base;
	__u32 page_lo, page_n;
};

/* The rows of a file that can hold in one page of its code: from the last
 * at or before the page's start to the last at or before the next page's
 * (row numbers from the file's first).  8 bytes: an array map's element. */
struct unwind_page {
	__u32 first, last;
};

struct unwind_proc {
	__u32 n; /* mappings in m, sorted by start */
	__u32 gen;
	struct unwind_map m[UNWIND_MAPS];
};

/* The registers an unwind carries from a frame to its caller's; flags:
 * UNWIND_BPF_F_* met on the way. */
struct unwind_regs {
	__u64 ip, sp, bp;
	__u32 flags;
	__u32 map; /* the last frame's mapping + 1 (0: none): the next frame's is often the same */
};

/* native_tail.ubpf_end, with UNWIND_BPF_NONE (the sample went as a copy
 * instead): a frame lay in no mapping BPF has rows for (a library loaded
 * since the tables were given, or code of no file: the loader reads the
 * maps again), or at a rule BPF does not follow (UNW_UNFOLLOWED). */
#define UNWIND_BPF_F_OUTSIDE (1u << 8)
#define UNWIND_BPF_F_UNFOLLOWED (1u << 9)
/* ubpf_end without them: the enum unwind_bpf_end. */
#define UNWIND_BPF_END(e) ((e) & ~(UNWIND_BPF_F_OUTSIDE | UNWIND_BPF_F_UNFOLLOWED))

struct unwind_frame {
	__u64 pc; /* the interrupted instruction, then each return address less one */
	__u64 sp; /* the frame's stack pointer */
};

enum unwind_bpf_end {
	UNWIND_BPF_NONE = 0,  /* not unwound in BPF */
	UNWIND_BPF_ROOT,      /* the thread's first frame */
	UNWIND_BPF_READ,      /* a return address or saved rbp could not be read */
	UNWIND_BPF_NO_CFI,    /* code of no file, or no rule and no frame pointer */
	UNWIND_BPF_DEPTH,     /* UNWIND_FRAMES */
	UNWIND_BPF_NO_REGS,   /* no user registers */
	UNWIND_BPF_NO_TABLES, /* the loader has not given the process's tables yet */
};

struct native_sample {
	struct sample_event ev; /* hdr.type EV_NATIVE; the sample as EV_SAMPLE has it */
	struct native_tail nt;
};

#define NATIVE_HDR_SIZE (__builtin_offsetof(struct native_sample, nt.stack))

struct proc_record {
	struct record_hdr hdr; /* EV_EXEC, EV_FORK, EV_EXIT */
	__u32 ppid;	       /* EV_FORK: the parent's tgid */
	__u32 exit_code;       /* EV_EXIT */
	__u64 ts;
	__u64 maxrss_pages; /* the process's peak resident set so far (EV_EXIT: final) */
	__u32 gen;	    /* EV_EXEC: the new image's proc_info.gen */
	__u32 flags;	    /* PROC_F_* */
	__u8 comm[16];
	__u64 alloc_hits; /* EV_EXEC: the ended image's proc_info.alloc_hits; EV_EXIT: the last's */
};

/* proc_record.flags.  PROC_F_UNTRACKED: a fork or exit of a process BPF does
 * not follow (system-wide only): the loader may have just decided to follow
 * the parent, after its exec, and not yet told BPF. */
#define PROC_F_UNTRACKED (1u << 0)

/*
 * Counts kept in BPF (system-wide): CPU and off-CPU samples are added up per
 * (process image, thread, stack, where) in agg_counts and drained by the
 * loader on a timer, instead of one ring-buffer record each.  A stack is
 * named by a 64-bit hash of its frames; its frames reach the loader once,
 * as an EV_STACK record sent when agg_stacks first sees the id.
 *
 * epoch: the loader moves agg_epoch on (0, 1, 2) at each drain and reads
 * the epoch just closed; entries of the one closed before are read once
 * more (late additions) and deleted.  A program that read the epoch before
 * a drain finishes within it, so no addition is lost.
 */
#define AGG_EPOCHS 3

struct agg_key {
	__u64 stack;   /* 0: no frames */
	__u64 user_ip; /* where it decides where the time goes (native code, a
			* call), else 0 */
	__u32 tgid;
	__u32 tid;
	__u32 gen; /* proc_info.gen */
	__u8 epoch;
	__u8 mode;   /* MODE_USER, MODE_KERNEL, MODE_OFFCPU */
	__u8 status; /* enum walk_status */
	__u8 flags;  /* SAMPLE_F_* */
};

struct agg_val {
	__u64 count;
	__u64 cpu_ns;
	__u64 offcpu_ns;
	__u64 gil_ns;
	__u64 last_ts;
	__u64 user_ip; /* the last sample's */
	__u8 comm[16];
};

struct agg_stack_record {
	struct record_hdr hdr; /* EV_STACK; tgid: the process whose sample sent it */
	__u64 id;
	__u32 nframes;
	__u32 elided;
	struct py_frame frames[MAX_FRAMES];
};

#define STACK_HDR_SIZE (sizeof(struct agg_stack_record) - MAX_FRAMES * sizeof(struct py_frame))

/* Copied from the sampler's state block at its init and exit probes. */
#define SAMPLER_STATE_BYTES 248

enum sampler_phase {
	SAMPLER_INIT = 1, /* loaded: state is its state block as it starts */
	SAMPLER_EXIT = 2, /* the process exits normally: state is final */
};

struct sampler_record {
	struct record_hdr hdr; /* EV_SAMPLER */
	__u32 phase;	       /* enum sampler_phase */
	__u32 abi;	       /* init: the library's ABI version */
	__u64 ts;
	__u64 state_addr;
	__s32 read_err; /* reading the state block: 0 or -errno */
	__u32 pad;
	__u8 state[SAMPLER_STATE_BYTES];
};

/* GPU records per EV_GPU record: the library's batch (user/gpu/gpu.h). */
#define GPU_BATCH 64
#define GPU_REC_BYTES 80
#define GPU_STATE_BYTES 224

enum gpu_phase {
	GPU_INIT = 1,	 /* InitializeInjection() ran: state as it started */
	GPU_RECORDS = 2, /* a batch of records; state not read */
	GPU_EXIT = 3,	 /* the final flush at exit ran: state is final */
	GPU_ALIAS = 4,	 /* records carrying id `inner` belong to the launch of `outer` */
};

/* EV_GPU_CALL: a traced CUDA call of a tracked process.  Its stack goes
 * once as an EV_STACK record under its id (agg_stacks), before the first
 * call that names it; 0 when the walk found no frame (status says why). */
struct gpu_call_record {
	struct record_hdr hdr; /* EV_GPU_CALL */
	__u32 tid;
	__u32 correlation_id;
	__u64 stack;
	__u64 ts;
	__u32 api_class; /* enum gpu_api_class */
	__u32 cbid;
	__u32 domain;
	__u32 gen;
	__u8 status; /* enum walk_status */
	__u8 pad[7];
};

/* EV_GPU_NAME: the string at a kernel name's address, as the library
 * announced it before the records that carry the address. */
#define GPU_NAME_BYTES 512
struct gpu_name_record {
	struct record_hdr hdr; /* EV_GPU_NAME */
	__u64 addr;
	__s32 len; /* bpf_probe_read_user_str: bytes with the NUL, or -errno */
	__u32 pad;
	char name[GPU_NAME_BYTES];
};

/* EV_GPU: one of the GPU library's probes, from a tracked process. */
struct gpu_record {
	struct record_hdr hdr; /* EV_GPU */
	__u32 phase;	       /* enum gpu_phase */
	__u32 abi;	       /* init: the library's ABI version */
	__u64 ts;
	__u64 state_addr;
	__u64 inner, outer; /* GPU_ALIAS: correlation ids */
	__s32 read_err;	    /* reading the state block or the records: 0 or -errno */
	__u32 count;	    /* GPU_RECORDS: records in recs[] */
	union {
		__u8 state[GPU_STATE_BYTES];
		__u8 recs[GPU_BATCH * GPU_REC_BYTES];
	};
};

/*
 * The kernel's uprobe_multi link (Linux 6.6), which the loader creates with
 * the bpf syscall itself (the system's uapi headers and libbpf may predate
 * it): the attach type and the part of union bpf_attr's link_create it
 * fills.  profile.bpf.c checks both against the kernel's BTF.
 */
#define ATTACH_UPROBE_MULTI 48
struct uprobe_multi_attr {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__u64 path;	       /* const char * */
	__u64 offsets;	       /* const __u64 *: file offsets */
	__u64 ref_ctr_offsets; /* const __u64 *, or 0 */
	__u64 cookies;	       /* const __u64 *, or 0 */
	__u32 cnt;
	__u32 multi_flags;
	__u32 pid; /* 0: every process that maps path */
	__u32 pad;
};

#endif /* SCALENE_BPF_ABI_H */
