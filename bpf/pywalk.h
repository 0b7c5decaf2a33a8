/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The Python frame walker, shared by every BPF program that needs a stack and
 * compiled as host C by tests/bpf/ against synthetic memory images.  The
 * includer defines PYWALK_READ(dst, size, user_addr) -> 0 or < 0 before
 * including this file: bpf_probe_read_user() in BPF, a read from the image in
 * the tests.
 *
 * Thread state comes from the pthread TSD slot CPython keeps in autoTSSkey:
 * it is set once per OS thread and stays valid while the thread runs without
 * the GIL (native code, blocking calls), unlike _Py_tss_tstate (3.12+) or
 * gilstate.tstate_current (the GIL holder, <= 3.11).
 */
#ifndef SCALENE_BPF_PYWALK_H
#define SCALENE_BPF_PYWALK_H

#include "abi.h"

/* pywalk_one() is a global function in BPF: the verifier checks it once, on
 * its own, instead of at every call in each walk loop (which took ~0.1 s of
 * load time per program that walks). */
#ifndef PYWALK_GLOBAL
#define PYWALK_GLOBAL __attribute__((noinline))
#endif

#ifndef PYWALK_READ
#error "define PYWALK_READ before including pywalk.h"
#endif

#define PYOFF_UNSET 0xffff

/*
 * The walk's loops.  Each step is a function of the index, from 0, and the
 * loop's state (arg), that returns 1 to stop; PYWALK_FOR(n, step, arg) runs
 * it n times at most, with what the kernel verifies best, which the
 * includer picks (profile.bpf.c: the numeric iterator, or bpf_loop, whose
 * step is a callback, PYWALK_CALLBACK).  Here, for host C, a plain counted
 * loop.
 */
#ifndef PYWALK_FOR
#define PYWALK_FOR(n, step, arg)                     \
	do {                                         \
		__u32 ___i;                          \
		for (___i = 0; ___i < (n); ___i++) { \
			if (step(___i, (arg)))       \
				break;               \
		}                                    \
	} while (0)
#endif
/* The walk's own three loops (pywalk_frames): PYWALK_FOR unless the
 * includer drives them otherwise. */
#ifndef PYWALK_WALK_FOR
#define PYWALK_WALK_FOR(n, step, w) PYWALK_FOR(n, step, w)
#endif
/* What a step needs besides its definition to be the driver's callback. */
#ifndef PYWALK_CALLBACK
#define PYWALK_CALLBACK(step)
#endif

/* Called with each code object a walk reads (not those it had read
 * already): profile.bpf.c marks it, so that its deallocator's probe sends
 * what the loader needs to name it (struct code_snap_record). */
#ifndef PYWALK_CODE_READ
#define PYWALK_CODE_READ(code) ((void)(code))
#endif

/* x86_64 user space ends below this; anything else is garbage. */
#define USER_ADDR_MAX 0x0000800000000000ULL

/*
 * verifier: the range checks on the offsets are not always carried to their
 * uses (the compiler drops a mask it can prove redundant, and the verifier
 * loses the link between copies), so each use masks an opaque copy.  The
 * masks are no-ops for checked values: pointer fields are 8-aligned in every
 * layout.
 */
#ifndef pywalk_barrier_var
#define pywalk_barrier_var(v) asm volatile("" : "+r"(v))
#endif

static __always_inline __u32 pywalk_masked(__u32 off, __u32 mask)
{
	pywalk_barrier_var(off);
	return off & mask;
}

/* The span of a code object read per frame: from co_firstlineno (rounded
 * down to 8) to the end of co_name. */
#define CODE_BUF 128

/* Code objects remembered during a walk, or from one walk to the next of
 * the same process (struct pywalk_owner): 1 << WALK_MEMO_BITS. */
#define WALK_MEMO_BITS 5
#define WALK_MEMO (1u << WALK_MEMO_BITS)

/* A code object's slot in the memo: a multiplicative hash of its address,
 * as objects of one size class sit at a fixed stride (256 bytes apart would
 * share two slots by their low bits alone). */
static __always_inline __u32 pywalk_memo_slot(__u64 code)
{
	return (__u32)(((code >> 4) * 0x9e3779b97f4a7c15ULL) >> (64 - WALK_MEMO_BITS));
}

/* Processes whose code objects one CPU keeps at a time, each in a set of
 * its own picked by a hash of the process: system-wide, several processes
 * take turns on a CPU, and one set would be emptied at every turn. */
#define MEMO_SETS_BITS 3
#define MEMO_SETS (1u << MEMO_SETS_BITS)

struct pywalk_scratch {
	/* Frames as read: [0, WIN_BUF) a window of the data stack holding
	 * [win_lo, win_hi), [WIN_BUF, WIN_BUF + FRAME_BUF) one frame read on
	 * its own.  Sized so that any index masked with MEM_MASK can be read
	 * as a __u64. */
	__u8 mem[2 * WIN_BUF + 8] __attribute__((aligned(8)));
	__u8 code[CODE_BUF] __attribute__((aligned(8)));
	__u8 ts[TS_BUF] __attribute__((aligned(8))); /* the thread state's span */
	__u64 win_lo, win_hi;
	/* The data stack's used part in its current chunk, [stack_lo,
	 * stack_hi): frames in there are read with the window.  Empty when
	 * not known (<= 3.10, a read that failed). */
	__u64 stack_lo, stack_hi;
	/* Code objects read, by address: by this walk, or by earlier walks
	 * of the process that the set's memo_owner names (see struct
	 * pywalk_owner); memo_set: the set of this walk. */
	struct pywalk_memo {
		__u64 code;
		__u64 cc; /* <= 3.10: co_code, the bytes object */
		__u32 tag, ident;
	} memo[MEMO_SETS][WALK_MEMO];
	__u64 memo_owner[MEMO_SETS][3];
	__u32 memo_set;
	/* Out: the address of the innermost frame's current instruction (its
	 * code unit), 0 when there is none (no frame, a shim, a frame that has
	 * not started).  See pywalk_at_call(). */
	__u64 instr;
	__u64 prev;  /* out of pywalk_one(): the caller frame's address */
	__u64 reads; /* out: user-memory reads of the walk (its cost) */
	/* Out: the walk began at the caller's frame (see pywalk_entering);
	 * it stopped at a caller that was not a frame (see pywalk_one). */
	__u8 entering, not_a_frame;
};

/* pywalk_one(): the "frame" holds no code object pointer.  The walk reports
 * it as WALK_READ_FAILED (the frames before it kept). */
#define PYWALK_NOT_A_FRAME 0x100

/* Every read of the walk goes through here, to be counted. */
#define PYWALK_READ_S(s, dst, size, addr) ((s)->reads++, PYWALK_READ((dst), (size), (addr)))

#define MEM_MASK (2 * WIN_BUF - 1)

static __always_inline int pywalk_user_ptr(__u64 p)
{
	return p >= 4096 && p < USER_ADDR_MAX;
}

/*
 * Finds the PyThreadState of the thread whose TLS block starts at `fsbase`:
 * glibc's pthread_getspecific(key) for key < 32 is
 * self->specific_1stblock[key].data with self == fsbase (3.9-3.14); 3.15
 * keeps it in a thread-local variable, at tls_off from fsbase.
 */
static __always_inline int pywalk_tstate(const struct py_walk_cfg *c, __u64 fsbase, __u64 *tstate,
					 __u64 *slot, struct pywalk_scratch *s)
{
	__u32 key = 0;
	__u64 ts = 0, at;

	if (c->tls_off) {
		at = fsbase + (__u64)c->tls_off;
	} else {
		if (!c->tss_key_addr || PYWALK_READ_S(s, &key, sizeof(key), c->tss_key_addr))
			return WALK_BAD_KEY;
		if (key >= TSD_DIRECT_KEYS)
			return WALK_BAD_KEY;
		at = fsbase + c->tsd_base + (__u64)key * c->tsd_stride + c->tsd_data;
	}
	if (PYWALK_READ_S(s, &ts, sizeof(ts), at))
		return WALK_NO_TSTATE;
	if (!pywalk_user_ptr(ts))
		return WALK_NO_TSTATE;
	*tstate = ts;
	*slot = at;
	return WALK_OK;
}

/* Whether the 8 bytes at thread-state offset `off` lie in the span read. */
static __always_inline int pywalk_in_span(const struct py_walk_cfg *c, __u32 off)
{
	return off >= c->ts_lo && off + 8 <= (__u32)c->ts_lo + c->ts_len;
}

static __always_inline __u64 pywalk_ts_u64(const struct py_walk_cfg *c,
					   const struct pywalk_scratch *s, __u32 off)
{
	return *(__u64 *)&s->ts[pywalk_masked(off - c->ts_lo, TS_BUF - 8)];
}

/* Whether p can be a code object's address: objects are 8-aligned.  A
 * frame's f_code slot holding anything else is not a frame's. */
static __always_inline int pywalk_object_ptr(__u64 p)
{
	return pywalk_user_ptr(p) && !(p & 7);
}

/*
 * Brings the `rd` bytes of the frame at `f` into s->mem and returns where
 * they start there, or -1 when they cannot be read.  A frame on the data
 * stack comes from the window, which is read when the frame is not in it
 * yet: the WIN_BUF bytes that end with the frame, so that its callers (below
 * it) come with it.
 */
static __always_inline int pywalk_fetch(struct pywalk_scratch *s, __u64 f, __u32 rd)
{
	__u64 end = f + rd, lo;
	__u32 len;

	if (f >= s->win_lo && end <= s->win_hi)
		return (f - s->win_lo) & (WIN_BUF - 1);
	if (f >= s->stack_lo && end <= s->stack_hi) {
		lo = end - s->stack_lo > WIN_BUF ? (end - WIN_BUF + 7) & ~7ULL : s->stack_lo;
		len = pywalk_masked(end - lo - 1, WIN_BUF - 1) + 1;
		if (!PYWALK_READ_S(s, s->mem, len, lo)) {
			s->win_lo = lo;
			s->win_hi = lo + len;
			return (f - lo) & (WIN_BUF - 1);
		}
		/* Not the data stack we took it for: one frame at a time. */
		s->win_lo = s->win_hi = 0;
		s->stack_lo = s->stack_hi = 0;
	}
	/* verifier: 1..FRAME_BUF, as checked in pywalk_layout(). */
	if (PYWALK_READ_S(s, &s->mem[WIN_BUF], pywalk_masked(rd - 1, FRAME_BUF - 1) + 1, f))
		return -1;
	return WIN_BUF;
}

/*
 * 3.11 and 3.12 enter the eval loop by pointing tstate->cframe at a new
 * _PyCFrame on the C stack and only then storing its current_frame: a
 * sample in between finds whatever the stack held there (seen on 3.12: an
 * immortal object, whose "f_code" is its reference count 0xffffffff, and
 * whose type's type is itself: a 1024-frame loop of unreadable frames).
 * The thread is still in the call that enters the interpreter, so its
 * Python stack is the caller's: cframe->previous->current_frame.  Returns
 * the frame to start at.  The frame is read as the walk reads it (with the
 * window, when on the data stack), so a good one costs no read of its own.
 */
static __always_inline __u64 pywalk_entering(const struct py_walk_cfg *c, __u64 cf, __u64 f,
					     struct pywalk_scratch *s)
{
	__u32 rd = pywalk_masked(c->frame_read - 1, FRAME_BUF - 1) + 1;
	__u64 prev = 0, pf = 0;
	int at;

	if (c->cframe_prev == PYOFF_UNSET || !f)
		return f;
	at = pywalk_object_ptr(f) ? pywalk_fetch(s, f, rd) : -1;
	if (at >= 0 &&
	    pywalk_object_ptr(*(__u64 *)&s->mem[pywalk_masked(at + c->f_code, MEM_MASK)]))
		return f;
	if (PYWALK_READ_S(s, &prev, sizeof(prev), cf + c->cframe_prev) || !pywalk_user_ptr(prev) ||
	    PYWALK_READ_S(s, &pf, sizeof(pf), prev + c->cframe_current))
		return f;
	s->entering = 1;
	return pf;
}

/*
 * Reads the thread state's span and finds the innermost frame in it:
 * tstate->frame (<=3.10), tstate->cframe->current_frame (3.11, 3.12; see
 * pywalk_entering), tstate->current_frame (3.13+).  Also notes the data
 * stack's used part (3.11+) for the window.  thread_id is pthread_self(),
 * i.e. the TCB address: a slot holding a stale or foreign pointer shows up
 * here.
 */
static __always_inline int pywalk_first_frame(const struct py_walk_cfg *c, __u64 fsbase,
					      __u64 tstate, __u64 *frame, struct pywalk_scratch *s)
{
	__u64 f = 0, cf = 0, chunk, top;

	if (c->ts_len < 8 || c->ts_len > TS_BUF || !pywalk_in_span(c, c->ts_thread_id) ||
	    !pywalk_in_span(c, c->ts_frame))
		return WALK_NO_CONFIG;
	if (PYWALK_READ_S(s, s->ts, pywalk_masked(c->ts_len - 1, TS_BUF - 1) + 1,
			  tstate + c->ts_lo))
		return WALK_NO_TSTATE;
	if (pywalk_ts_u64(c, s, c->ts_thread_id) != fsbase)
		return WALK_TID_MISMATCH;
	f = pywalk_ts_u64(c, s, c->ts_frame);
	if (c->cframe_current != PYOFF_UNSET) {
		cf = f;
		if (!pywalk_user_ptr(cf))
			return WALK_NO_TSTATE;
		if (PYWALK_READ_S(s, &f, sizeof(f), cf + c->cframe_current))
			return WALK_READ_FAILED;
	}
	if (c->ts_stack_chunk != PYOFF_UNSET && pywalk_in_span(c, c->ts_stack_chunk) &&
	    pywalk_in_span(c, c->ts_stack_top)) {
		chunk = pywalk_ts_u64(c, s, c->ts_stack_chunk);
		top = pywalk_ts_u64(c, s, c->ts_stack_top);
		if (pywalk_user_ptr(chunk) && pywalk_user_ptr(top) && top > chunk + c->chunk_data) {
			s->stack_lo = chunk + c->chunk_data;
			s->stack_hi = top;
		}
	}
	/* With the data stack known, the window serves the check. */
	*frame = cf ? pywalk_entering(c, cf, f, s) : f;
	return WALK_OK;
}

/* The frame and code-object offsets of one walk, checked against the
 * buffers once. */
struct pywalk_layout {
	int innermost; /* the next frame read is the innermost one */
	__u32 f_code, f_prev, f_instr, f_owner, f_entry, rd;
	__u32 co_base, co_fl, co_fn, co_nm, co_len;
	__u32 co_cc; /* <= 3.10: the co_code pointer, read with the span */
	int has_owner, has_entry, has_cc;
};

static __always_inline int pywalk_layout(const struct py_walk_cfg *c, struct pywalk_layout *l)
{
	l->innermost = 0;
	l->f_code = c->f_code;
	l->f_prev = c->f_prev;
	l->f_instr = c->f_instr;
	l->f_owner = c->f_owner;
	l->rd = c->frame_read;
	/* The code object's span: base, then offsets inside it. */
	l->co_base = c->co_firstlineno & ~7u;
	l->co_fl = c->co_firstlineno & 7u;
	l->co_fn = c->co_filename - l->co_base;
	l->co_nm = c->co_name - l->co_base;
	l->co_len = l->co_nm + 8;
	l->has_owner = l->f_owner != PYOFF_UNSET;
	l->f_entry = c->f_entry;
	l->has_entry = c->minor == 11 && l->f_entry != PYOFF_UNSET;
	l->co_cc = c->co_code - l->co_base;
	l->has_cc = c->minor <= 10 && c->co_code != PYOFF_UNSET && c->co_code >= l->co_base &&
		    l->co_cc + 8 <= l->co_len && !(l->co_cc & 7);
	/* verifier: offsets come from a map; bound them to the buffer. */
	if (!l->has_owner)
		l->f_owner = 0;
	if (!l->has_entry)
		l->f_entry = 0;
	if (l->f_code > FRAME_BUF - 8 || l->f_prev > FRAME_BUF - 8 || l->f_instr > FRAME_BUF - 8 ||
	    l->f_owner > FRAME_BUF - 1 || l->f_entry > FRAME_BUF - 1 ||
	    (l->f_code | l->f_prev | l->f_instr) & 7)
		return WALK_NO_CONFIG;
	if (l->rd == 0 || l->rd > FRAME_BUF)
		l->rd = FRAME_BUF;
	/* Every field read must come from this frame's bytes, not from what an
	 * earlier walk left in the buffer. */
	if (l->rd < l->f_code + 8 || l->rd < l->f_prev + 8 ||
	    l->rd < l->f_instr + (c->minor >= 11 ? 8 : 4) ||
	    (l->has_owner && l->rd < l->f_owner + 1) || (l->has_entry && l->rd < l->f_entry + 1))
		return WALK_NO_CONFIG;
	if (c->co_filename < l->co_base || c->co_name < l->co_base || l->co_len > CODE_BUF ||
	    (l->co_fn | l->co_nm) & 7 || l->co_fl & 3)
		return WALK_NO_CONFIG;
	return WALK_OK;
}

/*
 * Reads the frame at `f` into *out and its caller's address into s->prev.
 * Shim frames are only marked (code = 0).  For the innermost frame
 * (l->innermost), also notes its current instruction's address in s->instr.
 *
 * verifier: a global function (see PYWALK_GLOBAL), so its arguments are
 * checked as it sees them: pointers may be NULL, and nothing reached through
 * them is a pointer (hence c apart from l, and five arguments at most).
 */
PYWALK_GLOBAL int pywalk_one(const struct py_walk_cfg *c, const struct pywalk_layout *l, __u64 f,
			     struct py_frame *out, struct pywalk_scratch *s)
{
	__u64 *prev;

	if (!c || !l || !out || !s)
		return WALK_NO_CONFIG;
	prev = &s->prev;
	/* verifier: the sizes were checked in pywalk_layout(), but the bound
	 * does not survive the struct's trip through the stack: masked again
	 * (no-ops for the checked values, 1..FRAME_BUF and 8..CODE_BUF). */
	__u32 rd = pywalk_masked(l->rd - 1, FRAME_BUF - 1) + 1;
	__u32 co_len = pywalk_masked(l->co_len - 1, CODE_BUF - 1) + 1;
	struct pywalk_memo *memo;
	__u64 code, ip = 0;
	__s32 off;
	__u32 flags = 0;
	int shim = 0, at;

	if (!pywalk_user_ptr(f))
		return WALK_READ_FAILED;
	at = pywalk_fetch(s, f, rd);
	if (at < 0)
		return WALK_READ_FAILED;
	code = *(__u64 *)&s->mem[pywalk_masked(at + l->f_code, MEM_MASK)];
	/* A tagged reference from 3.14 (abi.h). */
	if (c->minor >= PY_REF_TAG_MINOR)
		code &= ~PY_REF_TAG_BITS;
	*prev = *(__u64 *)&s->mem[pywalk_masked(at + l->f_prev, MEM_MASK)];
	if (c->minor >= 11) {
		ip = *(__u64 *)&s->mem[pywalk_masked(at + l->f_instr, MEM_MASK)];

		__u8 owner = l->has_owner ? s->mem[pywalk_masked(at + l->f_owner, MEM_MASK)] : 0;

		/* 3.12 added C-stack entry frames (owner 3); 3.14 renumbered
		 * them (INTERPRETER 3, CSTACK 4): anything >= 3 is a shim, and
		 * more than 4 is no frame's. */
		if (owner > 4)
			return PYWALK_NOT_A_FRAME;
		if (owner >= 3)
			shim = 1;
		if (l->has_entry && s->mem[pywalk_masked(at + l->f_entry, MEM_MASK)])
			flags |= PY_FRAME_F_ENTRY;
		/* A new 3.11/3.12 frame points one unit before the first
		 * instruction, giving -2: reported as the first line. */
		off = (__s32)(ip - code - c->co_adaptive);
	} else {
		__s32 lasti = *(__s32 *)&s->mem[pywalk_masked(at + l->f_instr, MEM_MASK)];

		/* f_lasti counts bytes on 3.9 and code units on 3.10. */
		/* Unsigned doubling: a garbage f_lasti must not overflow. */
		off = lasti < 0 ? -1 : (c->minor == 10 ? (__s32)((__u32)lasti * 2) : lasti);
	}
	if (!shim && !pywalk_user_ptr(code))
		shim = 1;
	else if (!shim && (code & 7))
		return PYWALK_NOT_A_FRAME;
	/* One read for the first line and the identity pointers, unless
	 * the walk read this code object already (recursion, a wrapper's
	 * code in several frames): every frame of the thread's stack holds
	 * its code object, so the address cannot have changed hands during
	 * the walk.  Nor since an earlier walk of the owner's, while no code
	 * object was freed (pywalk_begin).
	 * verifier: no branch on its outcome (a failed read zeroes the
	 * buffer) and no variable byte offset for the line (co_fl is 0
	 * or 4: a shift picks it), or the walk stops verifying. */
	memo = &s->memo[s->memo_set & (MEMO_SETS - 1)][pywalk_memo_slot(code) & (WALK_MEMO - 1)];
	if (shim) {
		/* A shim names no code of the program (3.12+: the
		 * interpreter's trampoline): nothing to read.  Its address,
		 * in tag (low half) and ident, says where on the C stack the
		 * eval loop's call that pushed it is (a local variable of
		 * that call): --native places the Python frames above it
		 * there.  Not part of a stack's identity (stack_id). */
		out->tag = (__u32)f;
		out->ident = (__u32)(f >> 32);
	} else if (memo->code == code) {
		out->tag = memo->tag;
		out->ident = memo->ident;
	} else {
		PYWALK_READ_S(s, s->code, co_len, code + l->co_base);
		out->tag = (__u32)(*(__u64 *)&s->code[0] >> (l->co_fl * 8));
		out->ident = code_ident(*(__u64 *)&s->code[pywalk_masked(l->co_fn, CODE_BUF - 8)],
					*(__u64 *)&s->code[pywalk_masked(l->co_nm, CODE_BUF - 8)]);
		/* (A failed read, all zero, is not kept.) */
		memo->code = out->ident ? code : 0;
		PYWALK_CODE_READ(code);
		memo->cc =
			l->has_cc ? *(__u64 *)&s->code[pywalk_masked(l->co_cc, CODE_BUF - 8)] : 0;
		memo->tag = out->tag;
		memo->ident = out->ident;
	}
	/* The innermost frame's current instruction: 3.11+ holds its
	 * address, <= 3.10 its offset into the co_code bytes. */
	if (l->innermost && !shim && off >= 0) {
		if (c->minor >= 11)
			s->instr = ip;
		else if (l->has_cc)
			s->instr = memo->cc + c->bytes_sval + (__u32)off;
	}
	out->code = shim ? 0 : code;
	out->offset = off;
	out->flags = flags;
	return WALK_OK;
}

/*
 * Whose code objects a walk may take from earlier walks: a process (tgid
 * and image, and its start for a PID used again) while no code object was
 * freed on the host (code_gen, counted by the probe on the interpreter's
 * deallocator).  A code object of the stack being walked is alive, so the
 * same address with the same count means the same object.  NULL, or a
 * configuration without that probe: only within the walk.
 */
struct pywalk_owner {
	__u64 proc;	/* tgid << 32 | image */
	__u64 start;	/* the process's start */
	__u64 code_gen; /* code objects freed on the host so far */
};

/* The memo set of a process (MEMO_SETS). */
static __always_inline __u32 pywalk_memo_set(const struct pywalk_owner *own)
{
	return (__u32)(((own->proc ^ own->start) * 0x9e3779b97f4a7c15ULL) >> (64 - MEMO_SETS_BITS));
}

/* What one walk starts from: nothing found yet, and nothing of an earlier
 * walk's reads (window, data stack bounds) taken as this one's; its code
 * objects too, unless the owner is the same and none was freed since. */
static __always_inline void pywalk_begin(const struct py_walk_cfg *c,
					 const struct pywalk_owner *own, struct pywalk_scratch *s,
					 __u32 *nframes, __u32 *elided)
{
	*nframes = 0;
	*elided = 0;
	s->instr = 0;
	s->reads = 0;
	s->entering = s->not_a_frame = 0;
	s->win_lo = s->win_hi = 0;
	s->stack_lo = s->stack_hi = 0;
	s->memo_set = own ? pywalk_memo_set(own) : 0;
	__u64 *ow = s->memo_owner[s->memo_set & (MEMO_SETS - 1)];

	if (own && c->code_cache && ow[0] == own->proc && ow[1] == own->start &&
	    ow[2] == own->code_gen)
		return;
	__builtin_memset(s->memo[s->memo_set & (MEMO_SETS - 1)], 0, sizeof(s->memo[0]));
	/* An owner's proc is never 0 (no tgid is). */
	ow[0] = own && c->code_cache ? own->proc : 0;
	ow[1] = own ? own->start : 0;
	ow[2] = own ? own->code_gen : 0;
}

/* How far a walk has come: numbers only, so that a driver may keep it
 * apart from the walk's pointers between steps (profile.bpf.c). */
struct pywalk_pos {
	__u64 f;    /* the next frame (or caller) to read */
	__u32 n;    /* innermost frames read */
	__u32 j;    /* callers' addresses taken into the ring */
	__u32 m;    /* ring frames to read, then read whole */
	int status; /* a step's WALK_* that stopped it */
	struct pywalk_layout l;
};

/* The state pywalk_frames()'s loops share with their steps: where to read
 * and write, and where the walk is. */
struct pywalk_walk {
	const struct py_walk_cfg *c;
	struct py_frame *frames;
	struct pywalk_scratch *s;
	struct pywalk_pos *pos;
};

/* The innermost frames, read whole into [0, INNER_FRAMES). */
static __always_inline long pywalk_inner_step(__u32 i, void *arg)
{
	struct pywalk_walk *w = arg;
	int err;

	if (!w->pos->f)
		return 1;
	w->pos->l.innermost = i == 0;
	err = pywalk_one(w->c, &w->pos->l, w->pos->f, &w->frames[i & (MAX_FRAMES - 1)], w->s);
	if (err == PYWALK_NOT_A_FRAME) {
		w->s->not_a_frame = 1;
		err = WALK_READ_FAILED;
	}
	if (err != WALK_OK) {
		w->pos->status = err;
		return 1;
	}
	w->pos->n = i + 1;
	w->pos->f = w->s->prev;
	return 0;
}
PYWALK_CALLBACK(pywalk_inner_step)

/* Beyond them: the callers' addresses only, into the ring (the code field
 * holds the frame's address until it is read). */
static __always_inline long pywalk_caller_step(__u32 i, void *arg)
{
	struct pywalk_walk *w = arg;
	int at;

	if (!w->pos->f)
		return 1;
	w->frames[INNER_FRAMES + (i & (OUTER_FRAMES - 1))].code = w->pos->f;
	w->pos->j = i + 1;
	at = pywalk_user_ptr(w->pos->f) ? pywalk_fetch(w->s, w->pos->f, w->pos->l.rd) : -1;
	if (at < 0) {
		w->pos->status = WALK_READ_FAILED;
		return 1;
	}
	w->pos->f = *(__u64 *)&w->s->mem[pywalk_masked(at + w->pos->l.f_prev, MEM_MASK)];
	return 0;
}
PYWALK_CALLBACK(pywalk_caller_step)

/* The frames left in the ring, read whole. */
static __always_inline long pywalk_ring_step(__u32 i, void *arg)
{
	struct pywalk_walk *w = arg;
	struct py_frame *slot = &w->frames[INNER_FRAMES + (i & (OUTER_FRAMES - 1))];
	int err;

	if (i >= w->pos->m)
		return 1;
	w->pos->l.innermost = 0;
	err = pywalk_one(w->c, &w->pos->l, slot->code, slot, w->s);
	if (err == PYWALK_NOT_A_FRAME) {
		w->s->not_a_frame = 1;
		err = WALK_READ_FAILED;
	}
	if (err != WALK_OK) {
		/* Freed since its address was taken: the stack changed under
		 * the walk; keep what was read whole. */
		w->pos->m = i;
		w->pos->status = err;
		return 1;
	}
	return 0;
}
PYWALK_CALLBACK(pywalk_ring_step)

/*
 * Walks the stack starting at `f`, innermost first, into frames[]; returns
 * the status and stores the count in *nframes.
 *
 * A stack of up to MAX_FRAMES frames is kept whole.  A deeper one keeps
 * both ends, where the line being run and the program's own entry points
 * are: the innermost INNER_FRAMES in slots [0, INNER_FRAMES), and the
 * outermost ones (up to MAX_FRAMES - INNER_FRAMES, within WALK_DEPTH_MAX)
 * in the ring [INNER_FRAMES, MAX_FRAMES); *elided counts the frames between
 * them.  Past the innermost part only the caller pointers are followed (one
 * 8-byte read a frame) into the ring, and the frames left in it are read
 * whole at the end.  With frames elided, the ring is rotated: the innermost
 * of its frames sits at slot INNER_FRAMES + (*elided % OUTER_FRAMES).
 *
 * verifier: every frame goes to a slot derived from the loop counter, masked.
 */
static __always_inline int pywalk_frames(const struct py_walk_cfg *c, __u64 f,
					 struct py_frame *frames, __u32 *nframes, __u32 *elided,
					 struct pywalk_scratch *s)
{
	struct pywalk_pos pos = { .f = f };
	struct pywalk_walk w = { .c = c, .frames = frames, .s = s, .pos = &pos };
	__u32 whole;

	pos.status = pywalk_layout(c, &pos.l);
	if (pos.status != WALK_OK)
		return pos.status;
	PYWALK_WALK_FOR(INNER_FRAMES, pywalk_inner_step, &w);
	if (pos.status != WALK_OK || !pos.f) {
		*nframes = pos.n;
		return pos.status;
	}
	PYWALK_WALK_FOR(WALK_DEPTH_MAX - INNER_FRAMES, pywalk_caller_step, &w);
	if (pos.status == WALK_OK && pos.f)
		pos.status = WALK_TRUNCATED;
	/* A failed read keeps the frames before the one that failed. */
	if (pos.status == WALK_READ_FAILED)
		pos.j--;
	whole = pos.j < OUTER_FRAMES ? pos.j : OUTER_FRAMES;
	pos.m = whole;
	PYWALK_WALK_FOR(OUTER_FRAMES, pywalk_ring_step, &w);
	/* A frame that failed in the ring's middle would leave a hole:
	 * keep only a ring read whole, else the innermost part alone. */
	if (pos.m < whole) {
		*nframes = INNER_FRAMES;
		return WALK_READ_FAILED;
	}
	*nframes = INNER_FRAMES + pos.m;
	*elided = pos.j - pos.m;
	return pos.status;
}

/* True when ip lies in the interpreter's own code (the loader's ranges). */
static __always_inline int pywalk_in_interpreter(const struct py_walk_cfg *c, __u64 ip)
{
	__u32 i;

	for (i = 0; i < PY_TEXT_RANGES; i++) {
		if (i < c->ntext && ip >= c->text[i][0] && ip < c->text[i][1])
			return 1;
	}
	return 0;
}

/*
 * Whether the innermost frame's current instruction, as the walk found it
 * (s->instr), is a CALL-family opcode of this version: 1 or 0, or -1 when
 * its byte could not be read.  One byte read: the opcode is the first byte
 * of the code unit (x86_64 is little-endian).  3.11+ reads the live,
 * specialised bytecode, whose forms are all in call_ops.
 */
static __always_inline int pywalk_at_call(const struct py_walk_cfg *c, struct pywalk_scratch *s)
{
	__u8 op = 0;

	if (!pywalk_user_ptr(s->instr))
		return 0;
	if (PYWALK_READ_S(s, &op, sizeof(op), s->instr))
		return -1;
	return (c->call_ops[(op >> 6) & 3] >> (op & 63)) & 1;
}

/*
 * The walk, remembering the thread state between samples of one thread: a
 * thread keeps its PyThreadState for life, so reading its TSD slot confirms
 * the cached value without looking up the key (the state's thread id is
 * checked with the span, as on the first walk).  A slot that changed (a
 * native thread that re-entered Python with a new state) falls back to the
 * full lookup.
 */
static __always_inline int pywalk_cached(const struct py_walk_cfg *c, __u64 fsbase,
					 struct pywalk_cache *cache, const struct pywalk_owner *own,
					 struct py_frame *frames, __u32 *nframes, __u32 *elided,
					 struct pywalk_scratch *s)
{
	__u64 tstate = 0, f = 0, cur = 0, slot = 0;
	int status;

	pywalk_begin(c, own, s, nframes, elided);
	if (cache->tstate && !PYWALK_READ_S(s, &cur, sizeof(cur), cache->slot) &&
	    cur == cache->tstate) {
		tstate = cur;
	} else {
		cache->tstate = 0;
		status = pywalk_tstate(c, fsbase, &tstate, &slot, s);
		if (status != WALK_OK)
			return status;
		cache->slot = slot;
		cache->tstate = tstate;
	}
	status = pywalk_first_frame(c, fsbase, tstate, &f, s);
	if (status != WALK_OK) {
		/* A freed state, reused by another thread: look it up anew
		 * next time. */
		cache->tstate = 0;
		return status;
	}
	return pywalk_frames(c, f, frames, nframes, elided, s);
}

/* The whole walk for the thread whose TLS base is `fsbase`. */
static __always_inline int pywalk(const struct py_walk_cfg *c, __u64 fsbase,
				  struct py_frame *frames, __u32 *nframes, __u32 *elided,
				  struct pywalk_scratch *s)
{
	__u64 tstate = 0, f = 0, slot = 0;
	int status;

	pywalk_begin(c, NULL, s, nframes, elided);
	status = pywalk_tstate(c, fsbase, &tstate, &slot, s);
	if (status != WALK_OK)
		return status;
	status = pywalk_first_frame(c, fsbase, tstate, &f, s);
	if (status != WALK_OK)
		return status;
	return pywalk_frames(c, f, frames, nframes, elided, s);
}

#endif /* SCALENE_BPF_PYWALK_H */
