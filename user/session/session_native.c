// SPDX-License-Identifier: BSD-2-Clause
/*
 * --native: a sample's whole stack, Python, native and kernel frames in one
 * (session_int.h: snative_stack).
 *
 * The native stack (unwound from the sample's stack copy) holds one frame of
 * the interpreter's eval loop for each C-level call of it; the Python frames
 * the walk found fall into the same calls (resolve_frames' segments), the
 * innermost call's frames at the innermost eval-loop frame.  So each
 * eval-loop frame is replaced by its call's Python frames, in order, and the
 * native frames stay where they are: a Python line calling C that calls back
 * into Python reads line, C functions, callback line.  As Scalene writes its
 * stacks, the interpreter's own runtime (its start, its eval loop, the
 * generic call dispatch) is left out: everything below the outermost Python
 * frame, and the functions runtime_frame() names.
 */
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "model/profile.h"
#include "session/session_int.h"
#include "sampler/sampler.h"
#include "base/ksyms.h"
#include "symbolize/unwind.h"
#include "symbolize/utables.h"
#include "symbolize/usyms.h"

/* Native frames unwound per sample, at most. */
#define NATIVE_FRAMES_MAX 128
/* How often a live process's maps are read again for libraries it loaded. */
#define NATIVE_MAPS_NS 1000000000ULL

/* The eval loop's own function (and its compiler-split parts). */
static bool eval_frame(const char *sym)
{
	return !strncmp(sym, "_PyEval_EvalFrameDefault", 24);
}

/* The interpreter's runtime, as Scalene leaves it out of its stacks: process
 * entry, running the main module, the generic call dispatch. */
static bool runtime_frame(const char *sym)
{
	static const char *const names[] = {
		"Py_RunMain",
		"Py_BytesMain",
		"Py_Main",
		"PyEval_EvalCode",
		"_PyEval_Vector",
		"call_method",
		"slot_tp_init",
		"type_call",
		"builtin_exec",
		"run_mod",
		"_start",
		"__libc_start_main",
		"__libc_start_call_main",
	};
	static const char *const prefixes[] = { "PyObject_Vectorcall", "_PyObject_Vectorcall",
						"pymain_" };
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(sym, names[i]))
			return true;
	}
	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		if (!strncmp(sym, prefixes[i], strlen(prefixes[i])))
			return true;
	}
	return false;
}

static void kernel_frame(struct session *s, struct profile *p, uint64_t ip, struct frame_ref *out)
{
	const char *name = NULL, *module = "";
	uint64_t off;
	char buf[160];

	if (!s->ksyms_tried) {
		s->ksyms_tried = true;
		s->ksyms = ksyms__load(NULL);
		if (!s->ksyms || !ksyms__count(s->ksyms))
			pr_info("--native: the kernel's symbols are not readable "
				"(/proc/kallsyms, kernel.kptr_restrict): kernel frames go "
				"unnamed\n");
	}
	if (s->ksyms)
		name = ksyms__resolve(s->ksyms, ip, &module, &off);
	if (!name) {
		snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)ip);
		name = buf;
	}
	out->qualname = profile__intern(p, name);
	if (module[0]) {
		snprintf(buf, sizeof(buf), "[kernel:%s]", module);
		out->filename = profile__intern(p, buf);
	} else {
		out->filename = profile__intern(p, KERNEL_MODULE);
	}
	out->firstlineno = FRAME_KERNEL;
	out->line = 0;
}

/*
 * Whether native frame i (of n, innermost first) is the eval-loop call whose
 * entry frame is at `entry` on the C stack: the call's locals hold it, so it
 * lies between the frame's stack pointer and its caller's.  Without either
 * (up to 3.11, or a libdw before 0.188), the frame's name tells.
 */
static bool holds_call(uint64_t entry, const uint64_t *sps, int i, int n, const char *sym)
{
	if (!entry || !sps[i])
		return eval_frame(sym);
	if (entry < sps[i])
		return false;
	/* The last frame unwound (or one whose caller's is not known): where
	 * its frame ends is not known, so only its name can say.  (A leaf in
	 * code the unwind could not pass, BLAS's kernels, is not the call.) */
	if (i + 1 >= n || !sps[i + 1])
		return eval_frame(sym);
	return entry < sps[i + 1];
}

/* --native-unwind bpf: gives BPF the process's tables for the maps its
 * usyms last read, if it does not have them. */
static void give_tables(struct session *s, struct tproc *tp)
{
	int err;

	if (!s->bpf.unwind.put_rows || !tp->usyms || tp->tables_gen == usyms__gen(tp->usyms) + 1)
		return;
	if (!s->utables) {
		s->utables = utables__new(&s->bpf.unwind);
		if (!s->utables)
			return;
	}
	err = utables__proc(s->utables, tp->pid, tp->usyms, &tp->tables_sum);
	if (err) {
		pr_debug("process %d: no unwind tables for BPF: %s\n", tp->pid, strerror(-err));
		return;
	}
	tp->tables_gen = usyms__gen(tp->usyms) + 1;
}

void snative_forget(struct session *s, struct tproc *tp)
{
	if (tp->tables_gen && s->utables)
		utables__forget(s->utables, tp->pid);
	tp->tables_gen = 0;
	tp->tables_sum = 0;
}

static void open_unwinder(struct session *s, struct tproc *tp)
{
	if (!tp->usyms) {
		struct usyms_opts o = { .cache = s->elves };

		tp->usyms = usyms__new(tp->pid, &o);
	}
	tp->unwind = tp->usyms ? unwind__new(tp->pid, tp->usyms) : NULL;
	tp->unwind_failed = !tp->unwind;
	give_tables(s, tp);
}

void snative_tick(struct session *s, struct tproc *tp, uint64_t now)
{
	if (tp->state != TP_PYTHON || tp->exited || now < tp->next_native_ns)
		return;
	tp->next_native_ns = now + NATIVE_MAPS_NS;
	session_due(s, tp->next_native_ns);
	if (!tp->unwind && !tp->unwind_failed) {
		open_unwinder(s, tp);
	} else if (tp->unwind) {
		unwind__refresh(tp->unwind);
		give_tables(s, tp);
	}
}

/* The allocation sampler's own frames (its hooks, the probe they call): an
 * allocation's stack ends at what called the allocator. */
static bool sampler_frame(const char *module)
{
	const char *base = strrchr(module, '/');

	return !strcmp(base ? base + 1 : module, SCALENE_BPF_SAMPLER_SONAME);
}

/* The frames BPF unwound (--native-unwind bpf), as unwind__stack gives
 * them. */
static int bpf_frames(struct session *s, const struct native_tail *nt, uint64_t *pcs, uint64_t *sps,
		      int max, enum unwind_end *end)
{
	static const enum unwind_end ends[] = {
		[UNWIND_BPF_ROOT] = UNWIND_END_ROOT,
		[UNWIND_BPF_READ] = UNWIND_END_COPY,
		[UNWIND_BPF_NO_CFI] = UNWIND_END_NO_CFI,
		[UNWIND_BPF_DEPTH] = UNWIND_END_DEPTH,
		[UNWIND_BPF_NO_REGS] = UNWIND_END_NO_REGS,
		[UNWIND_BPF_NO_TABLES] = UNWIND_END_NO_CFI,
	};
	const struct unwind_frame *f = (const void *)nt->stack;
	uint32_t i, n = nt->ubpf_frames, why = UNWIND_BPF_END(nt->ubpf_end);

	if (n > nt->stack_len / sizeof(*f))
		n = nt->stack_len / sizeof(*f);
	if (n > (uint32_t)max)
		n = (uint32_t)max;
	for (i = 0; i < n; i++) {
		pcs[i] = f[i].pc;
		sps[i] = f[i].sp;
	}
	*end = why < sizeof(ends) / sizeof(ends[0]) ? ends[why] : UNWIND_END_NO_CFI;
	s->native_bpf_unwinds++;
	s->native_bpf_frames += n;
	if (why <= UNWIND_BPF_NO_TABLES)
		s->bpf_ends[why]++;
	return (int)n;
}

int snative_stack(struct session *s, struct tproc *tp, const struct sample_event *ev,
		  const struct native_tail *nt, const struct frame_segs *segs,
		  const struct frame_ref *frames, int nframes, struct frame_ref *stack,
		  uint64_t *ips, int max)
{
	struct profile *p = tp_profile(s, tp);
	uint64_t pcs[NATIVE_FRAMES_MAX], sps[NATIVE_FRAMES_MAX];
	int npcs = 0, n = 0, k = 0, seg = 0, evals = 0, outer = 0;
	enum unwind_end end = UNWIND_END_NO_REGS;
	uint32_t i;

	if (!tp->unwind && !tp->unwind_failed)
		open_unwinder(s, tp);
	/* A copy sent for code BPF has no table for: a library loaded since
	 * the maps were read (their next read would be up to NATIVE_MAPS_NS
	 * away).  The maps may have been read again since, by the naming of
	 * another sample's frames: the tables follow whichever read is the
	 * last. */
	if ((nt->ubpf_end & UNWIND_BPF_F_OUTSIDE) && tp->usyms) {
		usyms__refresh_for(tp->usyms, ev->ts);
		give_tables(s, tp);
	}
	if (nt->ubpf_end & UNWIND_BPF_F_OUTSIDE)
		s->native_bpf_outside++;
	else if (nt->ubpf_end & UNWIND_BPF_F_UNFOLLOWED)
		s->native_bpf_unfollowed++;
	if (UNWIND_BPF_END(nt->ubpf_end) != UNWIND_BPF_NONE) {
		npcs = bpf_frames(s, nt, pcs, sps, NATIVE_FRAMES_MAX, &end);
	} else if (tp->unwind) {
		npcs = unwind__stack(tp->unwind, (int)ev->tid, nt, ev->ts, pcs, sps,
				     NATIVE_FRAMES_MAX, &end);
	} else {
		s->native_no_unwinder++;
	}
	for (i = 0; i < nt->nkframes && i < NATIVE_KFRAMES && n < max; i++) {
		kernel_frame(s, p, nt->kips[i], &stack[n]);
		if (!stack[n].filename || !stack[n].qualname)
			continue;
		ips[n++] = nt->kips[i];
	}
	for (i = 0; i < (uint32_t)npcs && n < max; i++) {
		const char *module, *sym, *name;
		uint64_t noff;
		int64_t off;

		if (session_native_name(s, tp, pcs[i], ev->ts, &module, &sym, &off)) {
			module = profile__intern(p, "");
			sym = profile__intern(p, "[unknown]");
			if (!module || !sym)
				continue;
		} else if (off < 0 && (name = unwind__name(tp->unwind, pcs[i], &noff))) {
			/* Named by a debug file or the file's mini debug info. */
			sym = profile__intern(p, name);
			if (!sym)
				continue;
		}
		if (seg < segs->n && holds_call(segs->entry[seg], sps, (int)i, npcs, sym)) {
			/* Its call's Python frames. */
			for (; k < nframes && segs->seg[k] == seg && n < max; k++) {
				stack[n] = frames[k];
				ips[n++] = 0;
				outer = n;
			}
			seg++;
			evals++;
			continue;
		}
		if (eval_frame(sym) || runtime_frame(sym) || (!n && sampler_frame(module)))
			continue;
		stack[n].filename = module;
		stack[n].qualname = sym;
		stack[n].firstlineno = FRAME_NATIVE;
		stack[n].line = 0;
		ips[n++] = pcs[i];
	}
	/* Python frames whose eval-loop frames lie beyond what was unwound. */
	for (; k < nframes && n < max; k++) {
		stack[n] = frames[k];
		ips[n++] = 0;
		outer = n;
	}
	/* Below the outermost Python frame: the runtime's start, the thread's. */
	if (outer)
		n = outer;
	s->native_stacks++;
	if (end == UNWIND_END_ROOT && evals != segs->n) {
		s->native_mismatched++;
		pr_debug("process %d: %d eval-loop frames for %d calls of Python frames\n", tp->pid,
			 evals, segs->n);
	}
	return n;
}

void snative_facts(const struct session *s, struct facts_native *out)
{
	struct unwind_stats u;

	unwind__stats(&u);
	out->stack_copy_bytes = NATIVE_STACK_BYTES;
	out->samples = s->native_stacks;
	out->unwinds = u.stacks;
	out->frames = u.frames;
	out->copied_bytes = u.copied_bytes;
	out->ended_root = u.ends[UNWIND_END_ROOT];
	out->ended_copy = u.ends[UNWIND_END_COPY];
	out->ended_no_cfi = u.ends[UNWIND_END_NO_CFI];
	out->ended_depth = u.ends[UNWIND_END_DEPTH];
	out->ended_no_regs = u.ends[UNWIND_END_NO_REGS];
	out->calls_unpaired = s->native_mismatched;
	out->no_unwinder = s->native_no_unwinder;
	out->frame_sp = unwind__frame_sp();
	out->bpf = s->bpf.unwind.put_rows != NULL;
	out->bpf_unwinds = s->native_bpf_unwinds;
	out->bpf_frames = s->native_bpf_frames;
	out->bpf_outside = s->native_bpf_outside;
	out->bpf_unfollowed = s->native_bpf_unfollowed;
	memcpy(out->bpf_ends, s->bpf_ends, sizeof(out->bpf_ends));
	if (s->utables)
		utables__stats(s->utables, &out->tables);
}

void snative_free(struct session *s)
{
	ksyms__free(s->ksyms);
	s->ksyms = NULL;
	utables__free(s->utables);
	s->utables = NULL;
}
