/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Synthetic CPython threads for the walker tests, laid out with a generated
 * pyoffsets table: libpython's _PyRuntime holding autoTSSkey, a thread's
 * pthread TCB at fsbase with the TSD slot that points to its PyThreadState
 * (3.15: no key, the thread-local below fsbase that points to it), and a
 * frame chain (python-unwinding notes, section 2).  Frames are pushed
 * outermost first, as the interpreter pushes them, and each push records what
 * the walker should report for it.
 */
#ifndef TESTS_BPF_PYIMAGE_H
#define TESTS_BPF_PYIMAGE_H

#include <stdint.h>

#include "abi.h"
#include "cpython.h"
#include "memimg.h"
#include "target/python.h"

/* glibc x86_64 TSD, the constants user/target/python.c fills the config with:
 * offsetof(struct pthread, specific_1stblock), sizeof(struct
 * pthread_key_data) and offsetof(struct pthread_key_data, data). */
#define TSD_BASE 0x310
#define TSD_STRIDE 16
#define TSD_DATA 8

/* Where things live in a typical x86_64 process. */
#define HEAP_BASE 0x55d1e2a00000ULL   /* brk heap: thread state, code objects */
#define FRAMES_BASE 0x7f3a1b400000ULL /* pymalloc arena (<= 3.10) or datastack (3.11+) */
#define STACK_BASE 0x7f3a1a000000ULL  /* a thread stack: TCB, 3.12+ C-stack entry frames */
#define LIB_BASE 0x7f3a1c600000ULL    /* libpython .data/.bss: _PyRuntime, _Py_NoneStruct */
#define HOLE_ADDR 0x7f3a1d000000ULL   /* mapped by nobody */
#define KERNEL_ADDR 0xffff888100000000ULL
#define REGION_SIZE 0x100000ULL

#define TCB_SIZE 0x800	/* covers specific_1stblock[32] at 0x310 */
#define TLS_SIZE 0x40	/* the executable's thread-locals, below fsbase */
/* 3.15: the thread-local that holds the thread's state (Debian's 3.15.2 has
 * it there), for tables without autoTSSkey. */
#define PYIMG_TLS_OFF (-0x28)
#define TSTATE_SIZE 512 /* covers every version's fields */
#define CODE_BYTES 512	/* bytecode per fake code object */
#define NONE_SIZE 16	/* PyObject header */
#define MAX_PUSHES (WALK_DEPTH_MAX + 16)

struct pyimg {
	struct memimg *m;
	const struct py_offsets *o;
	unsigned int minor;
	int heap, frames, stack, lib; /* region indexes */
	uint64_t runtime, key_addr;   /* _PyRuntime, &_PyRuntime...autoTSSkey */
	uint64_t fsbase, tstate, cframe;
	uint64_t none;			  /* _Py_NoneStruct: f_executable of 3.13 entry frames */
	uint64_t trampoline;		  /* interp->interpreter_trampoline (3.12 entry frames) */
	uint64_t top;			  /* innermost frame, 0 if none */
	uint64_t chunk;			  /* 3.11+: the data stack's chunk, in the frames region */
	struct py_frame want[MAX_PUSHES]; /* in push order: outermost first */
	uint32_t nwant;
};

/* The default build's table of 3.minor. */
static inline const struct py_offsets *pyimg__table(unsigned int minor)
{
	const struct py_offsets *const *t;

	for (t = py_offsets_table; *t; t++)
		if ((*t)->minor == minor && !(*t)->free_threaded)
			return *t;
	return NULL;
}

static inline uint64_t pyimg__u64(const struct pyimg *p, uint64_t addr)
{
	uint64_t v = 0;

	if (memimg__read(p->m, &v, sizeof(v), addr))
		memimg__die("read outside the image", addr);
	return v;
}

/* Where the innermost frame pointer lives: tstate->frame (<= 3.10),
 * tstate->cframe->current_frame (3.11, 3.12), tstate->current_frame (3.13). */
static inline uint64_t pyimg__top_slot(const struct pyimg *p)
{
	const struct py_offsets *o = p->o;

	if (o->tstate_frame != PYOFF_NONE)
		return p->tstate + o->tstate_frame;
	if (o->tstate_cframe != PYOFF_NONE)
		return p->cframe + o->cframe_current_frame;
	return p->tstate + o->tstate_current_frame;
}

static inline uint64_t pyimg__tsd_slot(const struct pyimg *p, uint32_t key)
{
	if (!p->key_addr)
		return p->fsbase + (uint64_t)(int64_t)PYIMG_TLS_OFF;
	return p->fsbase + TSD_BASE + (uint64_t)key * TSD_STRIDE + TSD_DATA;
}

static inline void pyimg__set_top(struct pyimg *p, uint64_t f)
{
	memimg__w64(p->m, pyimg__top_slot(p), f);
	p->top = f;
}

static inline void pyimg__map(struct pyimg *p)
{
	p->heap = memimg__map(p->m, HEAP_BASE, REGION_SIZE);
	p->frames = memimg__map(p->m, FRAMES_BASE, REGION_SIZE);
	p->stack = memimg__map(p->m, STACK_BASE, REGION_SIZE);
	p->lib = memimg__map(p->m, LIB_BASE, REGION_SIZE);
}

/* Py_tss_t is { int _is_initialized; pthread_key_t _key; }: the key is at +4,
 * which is what the loader puts in tss_key_addr. */
static inline void pyimg__runtime(struct pyimg *p, uint32_t key)
{
	if (p->o->runtime_autotss_key == PYOFF_NONE) {
		/* 3.15: no key; the state is a thread-local. */
		p->runtime = memimg__alloc(p->m, p->lib, 64, 64);
		p->key_addr = 0;
		return;
	}
	p->runtime = memimg__alloc(p->m, p->lib, p->o->runtime_autotss_key + 64, 64);
	memimg__w32(p->m, p->runtime + p->o->runtime_autotss_key, 1);
	p->key_addr = p->runtime + p->o->runtime_autotss_key + 4;
	memimg__w32(p->m, p->key_addr, key);
}

/* A new PyThreadState for the thread, stored in its TSD slot `key` (none if
 * key >= 32), with no frames.  Frames pushed from now on are this state's. */
static inline void pyimg__tstate(struct pyimg *p, uint32_t key)
{
	const struct py_offsets *o = p->o;

	p->tstate = memimg__alloc(p->m, p->heap, TSTATE_SIZE, 64);
	/* thread_id is PyThread_get_thread_ident(): pthread_self() == fsbase. */
	memimg__w64(p->m, p->tstate + o->tstate_thread_id, p->fsbase);
	if (key < 32)
		memimg__w64(p->m, pyimg__tsd_slot(p, key), p->tstate);
	if (o->tstate_cframe != PYOFF_NONE) {
		/* 3.11, 3.12: tstate->cframe points to tstate->root_cframe or a
		 * _PyCFrame on the C stack of _PyEval_EvalFrameDefault. */
		p->cframe = memimg__alloc(p->m, p->stack, 32, 16);
		memimg__w64(p->m, p->tstate + o->tstate_cframe, p->cframe);
	}
	if (o->tstate_datastack_chunk != PYOFF_NONE) {
		/* 3.11+: frames pushed from now on go on a data stack chunk
		 * that starts here; datastack_top is the end of its used part. */
		p->chunk = memimg__alloc(p->m, p->frames, o->stackchunk_data, 16);
		memimg__w64(p->m, p->tstate + o->tstate_datastack_chunk, p->chunk);
		memimg__w64(p->m, p->tstate + o->tstate_datastack_top,
			    p->chunk + o->stackchunk_data);
	}
	pyimg__set_top(p, 0);
	p->nwant = 0;
}

/* A thread: its thread-locals below fsbase, its TCB at fsbase, and a thread
 * state. */
static inline void pyimg__thread(struct pyimg *p, uint32_t key)
{
	p->fsbase = memimg__alloc(p->m, p->stack, TLS_SIZE + TCB_SIZE, 64) + TLS_SIZE;
	pyimg__tstate(p, key);
}

/* A code object whose co_firstlineno (the walker's tag) is `firstlineno`. */
static inline uint64_t pyimg__code(struct pyimg *p, uint32_t firstlineno)
{
	uint64_t adaptive = p->o->code_code_adaptive == PYOFF_NONE ? 0 : p->o->code_code_adaptive;
	uint64_t size = adaptive ? adaptive + CODE_BYTES : 256;
	uint64_t co = memimg__alloc(p->m, p->heap, size, 16);

	memimg__w32(p->m, co + p->o->code_firstlineno, firstlineno);
	/* Its name and file, as a real one has (not read through). */
	memimg__w64(p->m, co + p->o->code_filename, 0x55aa00001000ULL + 16 * firstlineno);
	memimg__w64(p->m, co + p->o->code_name, 0x55aa00800000ULL + 16 * firstlineno);
	return co;
}

/* An image laid out with table o (any build's). */
static inline struct pyimg *pyimg__new_table(const struct py_offsets *o, uint32_t key)
{
	struct pyimg *p = calloc(1, sizeof(*p));

	if (!p)
		memimg__die("out of memory", 0);
	p->o = o;
	p->minor = o->minor;
	p->m = memimg__new();
	pyimg__map(p);
	pyimg__runtime(p, key);
	pyimg__thread(p, key);
	p->none = memimg__alloc(p->m, p->lib, NONE_SIZE, 16);
	p->trampoline = pyimg__code(p, 0);
	return p;
}

static inline struct pyimg *pyimg__new_key(unsigned int minor, uint32_t key)
{
	const struct py_offsets *o = pyimg__table(minor);

	if (!o)
		memimg__die("no pyoffsets table for this minor", minor);
	return pyimg__new_table(o, key);
}

/* The usual case: the key CPython gets in a fresh process is small. */
static inline struct pyimg *pyimg__new(unsigned int minor)
{
	return pyimg__new_key(minor, 1);
}

static inline void pyimg__free(struct pyimg *p)
{
	if (!p)
		return;
	memimg__free(p->m);
	free(p);
}

/* The walker's configuration as user/target/python.c fill_cfg() builds it. */
static inline void pyimg__cfg(const struct pyimg *p, struct py_walk_cfg *c)
{
	/* The loader's own code, so that the walker is tested with what the
	 * profiler really gives it. */
	python__walk_cfg(p->o, p->key_addr, p->key_addr ? 0 : PYIMG_TLS_OFF, c);
}

/*
 * Writes a frame at `f` running `code` at byte offset `off`, linked to
 * `prev`.  A fresh frame is off = -1 on <= 3.10 (f_lasti = -1), -2 on 3.11
 * and 3.12 (prev_instr one code unit before the first) and 0 on 3.13+
 * (instr_ptr at the first).
 */
static inline void pyimg__write_frame(struct pyimg *p, uint64_t f, uint64_t code, int32_t off,
				      uint64_t prev, uint8_t owner, uint8_t is_entry)
{
	const struct py_offsets *o = p->o;

	memimg__w64(p->m, f + o->frame_previous, prev);
	/* 3.14 holds the code as a tagged reference (_PyStackRef): bit 0 set
	 * where the frame does not own a count, as on every other frame here. */
	memimg__w64(p->m, f + o->frame_code, code | (p->minor >= 14 ? p->nwant & 1 : 0));
	if (p->minor <= 10) {
		/* f_lasti: bytes on 3.9, code units on 3.10. */
		int32_t lasti = off < 0 ? -1 : (p->minor == 10 ? off / 2 : off);

		memimg__w32(p->m, f + o->frame_instr, (uint32_t)lasti);
		return;
	}
	memimg__w64(p->m, f + o->frame_instr, code + o->code_code_adaptive + (int64_t)off);
	memimg__w8(p->m, f + o->frame_owner, owner);
	if (o->frame_is_entry != PYOFF_NONE)
		memimg__w8(p->m, f + o->frame_is_entry, is_entry);
}

static inline void pyimg__expect(struct pyimg *p, uint64_t code, int32_t off, uint32_t tag)
{
	struct py_frame *w;

	if (p->nwant == MAX_PUSHES)
		memimg__die("too many frames", 0);
	w = &p->want[p->nwant++];
	w->code = code;
	w->offset = off;
	w->tag = tag;
}

/* Pushes a frame allocated in region `ri`; returns its address. */
static inline uint64_t pyimg__push_full(struct pyimg *p, int ri, uint64_t code, int32_t off,
					uint8_t owner, uint8_t is_entry)
{
	uint64_t f = memimg__alloc(p->m, ri, p->o->frame_size, 16);
	uint32_t tag = 0;

	pyimg__write_frame(p, f, code, off, p->top, owner, is_entry);
	pyimg__set_top(p, f);
	memimg__read(p->m, &tag, sizeof(tag), code + p->o->code_firstlineno);
	pyimg__expect(p, code, off, tag);
	return f;
}

/* An ordinary frame owned by the thread (owner 0); on 3.11+ it is pushed on
 * the data stack, whose used part now ends with it. */
static inline uint64_t pyimg__push(struct pyimg *p, uint64_t code, int32_t off)
{
	uint64_t f = pyimg__push_full(p, p->frames, code, off, 0, 0);

	if (p->chunk)
		memimg__w64(p->m, p->tstate + p->o->tstate_datastack_top, f + p->o->frame_size);
	return f;
}

/* The entry frame _PyEval_EvalFrameDefault puts on the C stack (3.12+):
 * owner FRAME_OWNED_BY_CSTACK (3; 3.14 uses 3 and 4), f_code the trampoline
 * code object on 3.12, f_executable Py_None on 3.13+.  The walker reports it
 * as code 0. */
static inline uint64_t pyimg__push_shim(struct pyimg *p, uint8_t owner)
{
	uint64_t code = p->minor >= 13 ? p->none : p->trampoline;
	uint64_t f = memimg__alloc(p->m, p->stack, p->o->frame_size, 16);

	pyimg__write_frame(p, f, code, 0, p->top, owner, 0);
	pyimg__set_top(p, f);
	/* Reported with its address (tag: the low half, ident the high). */
	pyimg__expect(p, 0, 0, (uint32_t)f);
	p->want[p->nwant - 1].ident = (uint32_t)(f >> 32);
	return f;
}

/* What the walker should report in slot i (innermost first). */
static inline const struct py_frame *pyimg__want(const struct pyimg *p, uint32_t i)
{
	return &p->want[p->nwant - 1 - i];
}

#endif /* TESTS_BPF_PYIMAGE_H */
