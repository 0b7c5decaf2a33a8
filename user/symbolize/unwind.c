// SPDX-License-Identifier: BSD-2-Clause
/*
 * Native stacks from sampled stack copies (unwind.h).  One Dwfl per process:
 * its modules are the files the process maps code from (usyms), each
 * reported at its load bias; its "process state" is the sample being
 * unwound, whose registers start the unwind and whose stack copy is the only
 * memory libdwfl may read.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <elfutils/libdwfl.h>
#include <linux/types.h>

#include "base/clock.h"
#include "base/hmap.h"
#include "abi.h"
#include "base/log.h"
#include "symbolize/unwind.h"
#include "symbolize/usyms.h"

/* The soname of elfutils' libdw (every release since 0.158 has the state
 * and frame calls used here). */
#define LIBDW "libdw.so.1"

static struct {
	int state; /* 0: not tried, 1: loaded, -1: missing */
	void *handle;
	Dwfl *(*begin)(const Dwfl_Callbacks *);
	void (*end)(Dwfl *);
	int (*err)(void);
	const char *(*errmsg)(int);
	void (*report_begin_add)(Dwfl *);
	Dwfl_Module *(*report_elf)(Dwfl *, const char *, const char *, int, GElf_Addr, bool);
	int (*report_end)(Dwfl *, int (*)(Dwfl_Module *, void *, const char *, Dwarf_Addr, void *),
			  void *);
	Dwfl_Module *(*addrmodule)(Dwfl *, Dwarf_Addr);
	bool (*attach_state)(Dwfl *, Elf *, pid_t, const Dwfl_Thread_Callbacks *, void *);
	int (*getthread_frames)(Dwfl *, pid_t, int (*)(Dwfl_Frame *, void *), void *);
	bool (*state_registers)(Dwfl_Thread *, int, unsigned, const Dwarf_Word *);
	void (*state_register_pc)(Dwfl_Thread *, Dwarf_Word);
	bool (*frame_pc)(Dwfl_Frame *, Dwarf_Addr *, bool *);
	int (*frame_reg)(Dwfl_Frame *, unsigned, Dwarf_Word *); /* 0.188+, else NULL */
	const char *(*addrinfo)(Dwfl_Module *, GElf_Addr, GElf_Off *, GElf_Sym *, GElf_Word *,
				Elf **, Dwarf_Addr *);
	int (*find_elf)(Dwfl_Module *, void **, const char *, Dwarf_Addr, char **, Elf **);
	int (*find_debuginfo)(Dwfl_Module *, void **, const char *, Dwarf_Addr, const char *,
			      const char *, GElf_Word, char **);
} dw;

static struct unwind_stats stats;

int unwind__available(void)
{
	void *dl;

	if (dw.state)
		return dw.state > 0 ? 0 : -ENOENT;
	dw.state = -1;
	dl = dlopen(LIBDW, RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		pr_warn("--native unwinds stacks with elfutils' libdw (%s: %s); install it "
			"(Debian and Ubuntu: apt-get install libdw1; Fedora: elfutils-libs)\n",
			LIBDW, dlerror());
		return -ENOENT;
	}
#define SYM(f, name)                                                                           \
	do {                                                                                   \
		*(void **)&dw.f = dlsym(dl, name);                                             \
		if (!dw.f) {                                                                   \
			pr_warn("%s has no %s: an elfutils older than 0.158?\n", LIBDW, name); \
			return -ENOENT;                                                        \
		}                                                                              \
	} while (0)
	SYM(begin, "dwfl_begin");
	SYM(end, "dwfl_end");
	SYM(err, "dwfl_errno");
	SYM(errmsg, "dwfl_errmsg");
	SYM(report_begin_add, "dwfl_report_begin_add");
	SYM(report_elf, "dwfl_report_elf");
	SYM(report_end, "dwfl_report_end");
	SYM(addrmodule, "dwfl_addrmodule");
	SYM(attach_state, "dwfl_attach_state");
	SYM(getthread_frames, "dwfl_getthread_frames");
	SYM(state_registers, "dwfl_thread_state_registers");
	SYM(state_register_pc, "dwfl_thread_state_register_pc");
	SYM(frame_pc, "dwfl_frame_pc");
	SYM(find_elf, "dwfl_linux_proc_find_elf");
	SYM(find_debuginfo, "dwfl_standard_find_debuginfo");
	SYM(addrinfo, "dwfl_module_addrinfo");
#undef SYM
	/* Debug files are looked for on this machine only: a libdw built with
	 * debuginfod would otherwise fetch them over the network while the
	 * samples wait. */
	unsetenv("DEBUGINFOD_URLS");
	*(void **)&dw.frame_reg = dlsym(dl, "dwfl_frame_reg");
	dw.handle = dl;
	dw.state = 1;
	return 0;
}

void *unwind__libdw(void)
{
	return unwind__available() ? NULL : dw.handle;
}

struct unwind {
	int pid;
	struct usyms *u;
	Dwfl *dwfl;
	Dwfl_Callbacks cb;
	bool attached;
	unsigned int reported_gen; /* usyms__gen() at the last report */
	/* The files reported (struct reported), each once: libdwfl refuses a
	 * module again at the same place. */
	struct hmap *reported;
	int reporting; /* new files in this report */
	/* The sample being unwound. */
	int tid;
	const struct native_tail *nt;
	bool read_outside; /* libdwfl asked for memory the copy does not hold */
	/* Where the frames go. */
	uint64_t *pcs, *sps;
	int n, max;
	/* unwind__name's answers by address (struct named): libdw looks a
	 * name up by a scan of the file's symbols, ~0.3 ms a sample when
	 * every frame was looked up anew. */
	struct hmap *names;
};

struct named {
	char *name; /* NULL: none */
	uint64_t offset;
};

/* Addresses whose names are kept, at most (then they are all let go). */
#define NAMES_MAX 65536

static void names_free(struct hmap *names)
{
	size_t it = 0;
	const void *k;
	void *v;

	while (names && hmap__next(names, &it, &k, &v)) {
		free(((struct named *)v)->name);
		free(v);
	}
	hmap__free(names);
}

static void names_clear(struct unwind *w)
{
	names_free(w->names);
	w->names = hmap__new(sizeof(uint64_t));
}

/* x86_64's DWARF register numbers (the psABI's table). */
enum {
	DWARF_RBX = 3,
	DWARF_RBP = 6,
	DWARF_RSP = 7,
	DWARF_R12 = 12,
};

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	return 0; /* threads are asked for by id only */
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	struct unwind *w = arg;

	*thread_argp = w;
	return tid == w->tid;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct unwind *w = arg;
	uint64_t sp = w->nt->regs[NATIVE_REG_SP];

	if (addr < sp || addr - sp > w->nt->stack_len || w->nt->stack_len - (addr - sp) < 8) {
		w->read_outside = true;
		return false;
	}
	memcpy(result, w->nt->stack + (addr - sp), sizeof(*result));
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct unwind *w = arg;
	const __u64 *r = w->nt->regs;
	Dwarf_Word bx = r[NATIVE_REG_BX], bpsp[2] = { r[NATIVE_REG_BP], r[NATIVE_REG_SP] },
		   hi[4] = { r[NATIVE_REG_R12], r[NATIVE_REG_R13], r[NATIVE_REG_R14],
			     r[NATIVE_REG_R15] };

	if (!dw.state_registers(thread, DWARF_RBX, 1, &bx) ||
	    !dw.state_registers(thread, DWARF_RBP, 2, bpsp) ||
	    !dw.state_registers(thread, DWARF_R12, 4, hi))
		return false;
	dw.state_register_pc(thread, r[NATIVE_REG_IP]);
	return true;
}

static const Dwfl_Thread_Callbacks thread_cb = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

struct reported {
	uint64_t bias, path; /* the path's hash */
};

static int report_one(void *arg, const struct usyms_text *t)
{
	const char *module = t->module, *path = t->path;
	struct unwind *w = arg;
	uint64_t bias = t->bias;
	struct reported k = { bias, hash_bytes(module, strlen(module)) };

	if (hmap__get(w->reported, &k))
		return 0;
	/* Tried once: a file libdwfl cannot read (not ELF, gone) is left out,
	 * and frames in it end the unwind. */
	hmap__put(w->reported, &k, w);
	if (!w->reporting++)
		dw.report_begin_add(w->dwfl);
	if (!dw.report_elf(w->dwfl, module, path, -1, bias, true))
		pr_debug("process %d: libdwfl cannot use %s: %s\n", w->pid, module, dw.errmsg(-1));
	return 0;
}

/* Reports the files mapped since the last report. */
static int report(struct unwind *w)
{
	w->reported_gen = usyms__gen(w->u);
	w->reporting = 0;
	usyms__each_text(w->u, report_one, w);
	if (w->reporting && dw.report_end(w->dwfl, NULL, NULL))
		return -EINVAL;
	/* Addresses no file held may be in one of the new ones. */
	if (w->reporting && w->names)
		names_clear(w);
	return 0;
}

struct unwind *unwind__new(int pid, struct usyms *u)
{
	struct unwind *w;

	if (unwind__available()) {
		errno = ENOENT;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->pid = pid;
	w->u = u;
	w->cb.find_elf = dw.find_elf;
	w->cb.find_debuginfo = dw.find_debuginfo;
	w->reported = hmap__new(sizeof(struct reported));
	w->names = hmap__new(sizeof(uint64_t));
	w->dwfl = w->reported && w->names ? dw.begin(&w->cb) : NULL;
	if (!w->dwfl || report(w)) {
		unwind__free(w);
		errno = EINVAL;
		return NULL;
	}
	/* The architecture comes from the modules. */
	w->attached = dw.attach_state(w->dwfl, NULL, pid, &thread_cb, w);
	if (!w->attached) {
		pr_debug("process %d: libdwfl cannot unwind it: %s\n", pid, dw.errmsg(-1));
		unwind__free(w);
		errno = EINVAL;
		return NULL;
	}
	return w;
}

void unwind__free(struct unwind *w)
{
	if (!w)
		return;
	if (w->dwfl)
		dw.end(w->dwfl);
	hmap__free(w->reported);
	names_free(w->names);
	free(w);
}

static int on_frame(Dwfl_Frame *state, void *arg)
{
	struct unwind *w = arg;
	Dwarf_Addr pc;
	bool activation;

	Dwarf_Word sp;

	if (!dw.frame_pc(state, &pc, &activation))
		return -1;
	/* A return address: the call is the byte before it. */
	if (!activation && pc)
		pc--;
	w->sps[w->n] = dw.frame_reg && !dw.frame_reg(state, DWARF_RSP, &sp) ? sp : 0;
	w->pcs[w->n++] = pc;
	return w->n < w->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

/* One unwind of the sample into w's pcs and sps. */
static enum unwind_end unwind_once(struct unwind *w, int tid, const struct native_tail *nt)
{
	int rc;

	w->tid = tid;
	w->nt = nt;
	w->read_outside = false;
	w->n = 0;
	rc = dw.getthread_frames(w->dwfl, tid, on_frame, w);
	w->nt = NULL;
	if (rc == 0)
		return UNWIND_END_ROOT;
	if (w->n >= w->max)
		return UNWIND_END_DEPTH;
	return w->read_outside ? UNWIND_END_COPY : UNWIND_END_NO_CFI;
}

int unwind__stack(struct unwind *w, int tid, const struct native_tail *nt, uint64_t ts_ns,
		  uint64_t *pcs, uint64_t *sps, int max, enum unwind_end *end)
{
	*end = UNWIND_END_NO_REGS;
	if (!nt->regs[NATIVE_REG_IP] || !nt->regs[NATIVE_REG_SP] || max <= 0) {
		stats.stacks++;
		stats.ends[*end]++;
		return 0;
	}
	/* The files mapped since the last report (the maps read again by the
	 * symbols' user). */
	if (usyms__gen(w->u) != w->reported_gen)
		report(w);
	w->pcs = pcs;
	w->sps = sps;
	w->max = max;
	*end = unwind_once(w, tid, nt);
	/* Ended in code of no file reported (a library loaded since the maps
	 * were read): once more after reading them again. */
	if (*end == UNWIND_END_NO_CFI && w->n && !dw.addrmodule(w->dwfl, pcs[w->n - 1]) &&
	    !usyms__refresh_for(w->u, ts_ns)) {
		stats.refreshes++;
		report(w);
		*end = unwind_once(w, tid, nt);
	}
	stats.stacks++;
	stats.frames += w->n;
	stats.copied_bytes += nt->stack_len;
	stats.ends[*end]++;
	return w->n;
}

/* libdw's name for pc, looked up anew. */
static const char *lookup_name(struct unwind *w, uint64_t pc, uint64_t *offset)
{
	Dwfl_Module *mod = dw.addrmodule(w->dwfl, pc);
	const char *name;
	GElf_Off off = 0;
	GElf_Sym sym;

	name = mod ? dw.addrinfo(mod, pc, &off, &sym, NULL, NULL, NULL) : NULL;
	if (!name || !name[0])
		return NULL;
	*offset = off;
	return name;
}

const char *unwind__name(struct unwind *w, uint64_t pc, uint64_t *offset)
{
	struct named *nm;
	const char *name;
	uint64_t off = 0;

	if (w->names && hmap__count(w->names) >= NAMES_MAX)
		names_clear(w);
	if (!w->names)
		return lookup_name(w, pc, offset);
	nm = hmap__get(w->names, &pc);
	if (!nm) {
		name = lookup_name(w, pc, &off);
		nm = calloc(1, sizeof(*nm));
		if (!nm)
			return NULL;
		nm->name = name ? strdup(name) : NULL;
		nm->offset = off;
		if ((name && !nm->name) || hmap__put(w->names, &pc, nm)) {
			free(nm->name);
			free(nm);
			return lookup_name(w, pc, offset);
		}
	}
	if (!nm->name)
		return NULL;
	*offset = nm->offset;
	return nm->name;
}

int unwind__refresh(struct unwind *w)
{
	int err = usyms__refresh(w->u);

	return err ? err : report(w);
}

bool unwind__frame_sp(void)
{
	return dw.state > 0 && dw.frame_reg;
}

void unwind__stats(struct unwind_stats *out)
{
	*out = stats;
}
