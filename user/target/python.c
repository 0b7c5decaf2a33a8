// SPDX-License-Identifier: BSD-2-Clause
#include <elf.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cpython.h"
#include "base/elfcache.h"
#include "base/elfsym.h"
#include "base/log.h"
#include "base/memread.h"
#include "base/procmaps.h"
#include "target/python.h"
#include "target/tlsslot.h"
#include "sampler/sampler.h"

/* glibc x86_64: struct pthread.specific_1stblock and struct pthread_key_data.
 * Validated per process against the main thread before use. */
#define GLIBC_TSD_BASE 0x310
#define GLIBC_TSD_STRIDE 16
#define GLIBC_TSD_DATA 8

/* Bounds on the interpreter and thread lists walked at attach time. */
#define MAX_INTERPS 64
#define MAX_THREADS 100000

/* The minor version a name says ("python3.12", "libpython3.13t.so"), or
 * -1; *ft: whether it says a free-threaded build ('t' after it). */
static int name_version(const char *name, bool *ft)
{
	const char *p = name;

	while ((p = strstr(p, "python3.")) != NULL) {
		char *end;
		long minor;

		p += strlen("python3.");
		minor = strtol(p, &end, 10);
		if (end != p && minor >= 0 && minor < 100 &&
		    (*end == '\0' || *end == '.' || *end == '-' || *end == 'd' || *end == 't' ||
		     *end == 'm')) {
			*ft = *end == 't';
			return (int)minor;
		}
	}
	*ft = false;
	return -1;
}

int python__minor_from_name(const char *name)
{
	bool ft;

	return name_version(name, &ft);
}

void python__version_string(uint32_t hex, char *buf, size_t n)
{
	snprintf(buf, n, "%u.%u.%u", hex >> 24, (hex >> 16) & 0xff, (hex >> 8) & 0xff);
}

/* The table of 3.minor's default build, or of its free-threaded one. */
static const struct py_offsets *offsets_for(int minor, bool free_threaded)
{
	int i;

	for (i = 0; py_offsets_table[i]; i++) {
		if (py_offsets_table[i]->minor == minor &&
		    py_offsets_table[i]->free_threaded == free_threaded)
			return py_offsets_table[i];
	}
	return NULL;
}

bool python__in_interpreter(const struct py_proc *pp, uint64_t ip)
{
	int i;

	for (i = 0; i < pp->ntext; i++) {
		if (ip >= pp->text[i][0] && ip < pp->text[i][1])
			return true;
	}
	return false;
}

bool python__in_call_machinery(const struct py_proc *pp, uint64_t ip)
{
	int i;

	for (i = 0; i < pp->nmachinery; i++) {
		if (ip >= pp->machinery[i][0] && ip < pp->machinery[i][1])
			return true;
	}
	return false;
}

/*
 * The eval loop, and the functions that push, make, clear and free Python
 * frames, in 3.9 to 3.15.  A call instruction runs them to enter or leave a
 * Python function: the interpreter's own work, as when its bytecode runs
 * (without them a line calling a small Python function counts a third to a
 * half of its time as native on 3.9 and 3.10).  Names missing from a build
 * (static functions of a stripped binary) are skipped.  From 3.11 the call
 * instructions specialised for a Python callee are not call instructions
 * for this (tools/pyoffsets/generate), so what runs under them is the
 * interpreter's time even where it has no name.
 */
static const char *const call_machinery[] = {
	"_PyEval_EvalFrameDefault",
	"_PyEval_EvalFrameDefault.cold",
	"_PyEval_EvalCode",	   /* 3.9 */
	"function_code_fastcall",  /* 3.9 */
	"_PyEval_MakeFrameVector", /* 3.10 */
	"_PyEval_Vector",	   /* 3.10+ */
	"_PyFunction_Vectorcall",
	"_PyFrame_New_NoTrack",
	"frame_dealloc",
	"_PyFrame_Push",	    /* 3.11 */
	"_PyEvalFramePushAndInit",  /* 3.11+ */
	"_PyEvalFrameClearAndPop",  /* 3.12 */
	"_PyEval_FrameClearAndPop", /* 3.13 */
	"_PyFrame_Clear",	    /* 3.11 */
	"_PyFrame_ClearExceptCode", /* 3.12+ */
	"_PyFrame_ClearLocals",	    /* 3.13 */
	"_PyThreadState_PushFrame", /* 3.12+ */
	"_PyThreadState_PopFrame",  /* 3.11+ */
	"_Py_CheckFunctionResult",  /* after every call returns */
};

static void call_machinery_ranges(struct py_proc *pp, const struct elf_file *e, uint64_t bias)
{
	uint64_t addr, size;
	size_t i;

	pp->nmachinery = 0;
	for (i = 0; i < sizeof(call_machinery) / sizeof(call_machinery[0]) &&
		    pp->nmachinery < PY_MAX_MACHINERY;
	     i++) {
		if (elf_file__find_symbol(e, call_machinery[i], &addr, &size) || !size)
			continue;
		pp->machinery[pp->nmachinery][0] = bias + addr;
		pp->machinery[pp->nmachinery][1] = bias + addr + size;
		pp->nmachinery++;
	}
}

/* The mapped file holding the interpreter: libpython if one is mapped,
 * otherwise the executable. */
static const char *find_interp_module(const struct procmaps *m, int pid, char *exe, size_t n)
{
	size_t i;
	ssize_t len;
	char link[64];

	for (i = 0; i < procmaps__count(m); i++) {
		const struct map_entry *e = procmaps__get(m, i);

		if (!strncmp(basename(e->path), "libpython3", 10) && strstr(e->path, ".so"))
			return e->path;
	}
	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	len = readlink(link, exe, n - 1);
	if (len <= 0)
		return NULL;
	exe[len] = '\0';
	return exe;
}

static int open_module(int pid, const char *path, struct elf_file **e)
{
	char p[PATH_MAX + 64];

	*e = procmaps__file_in_root(p, sizeof(p), pid, path) ? NULL : elf_file__open(p);
	if (*e)
		return 0;
	snprintf(p, sizeof(p), "/proc/%d/exe", pid);
	*e = elf_file__open(p);
	return *e ? 0 : -errno;
}

/* The dynamic loader counts as the interpreter: the only code that reaches it
 * while a program runs is TLS lookup (__tls_get_addr), which shared 3.12+
 * builds call on every thread-state access; without this a pure-Python loop
 * would show a tenth of its time as native. */
static bool is_dynamic_loader(const char *path)
{
	const char *b = basename(path);

	return !strncmp(b, "ld-linux", 8) || !strncmp(b, "ld-musl", 7);
}

/* scalene-bpf's own allocation sampler: it wraps Python's allocator, so the
 * time in it is the interpreter's allocation time (its libc hooks only
 * forward, in a few nanoseconds). */
static bool is_sampler(const char *path)
{
	return !strcmp(basename(path), SCALENE_BPF_SAMPLER_SONAME);
}

static void text_ranges(struct py_proc *pp, const struct procmaps *m, const char *path)
{
	size_t i;

	pp->ntext = 0;
	for (i = 0; i < procmaps__count(m) && pp->ntext < PY_MAX_TEXT; i++) {
		const struct map_entry *e = procmaps__get(m, i);

		if (e->x &&
		    (!strcmp(e->path, path) || is_dynamic_loader(e->path) || is_sampler(e->path))) {
			pp->text[pp->ntext][0] = e->start;
			pp->text[pp->ntext][1] = e->end;
			pp->ntext++;
		}
	}
}

/* Before 3.11 nothing exported holds the version: the PY_VERSION string
 * ("3.9.18") is in .rodata.  Its micro number, or 0. */
static unsigned int rodata_micro(const struct elf_file *e, int minor)
{
	const char *data, *p, *end;
	char prefix[16];
	size_t size, plen;

	if (elf_file__section(e, ".rodata", (const void **)&data, &size))
		return 0;
	plen = snprintf(prefix, sizeof(prefix), "3.%d.", minor);
	for (p = data, end = data + size; p + plen < end;) {
		const char *q = memmem(p, end - p, prefix, plen), *d;

		if (!q)
			break;
		for (d = q + plen; d < end && *d >= '0' && *d <= '9'; d++)
			;
		/* The end of a string (the linker may share the literal's bytes
		 * with a longer string ending the same way), not part of a
		 * longer number. */
		if ((q == data || (q[-1] != '.' && (q[-1] < '0' || q[-1] > '9'))) && d > q + plen &&
		    d < end && *d == '\0' && d - (q + plen) <= 3)
			return (unsigned int)atoi(q + plen);
		p = q + 1;
	}
	return 0;
}

static int read_version(struct py_proc *pp, const struct elf_file *e, uint64_t bias,
			const char *path, char *why, size_t whylen)
{
	uint64_t addr;
	uint32_t hex = 0;
	int minor;

	/* Py_Version (3.11+) holds PY_VERSION_HEX. */
	if (!elf_file__find_symbol(e, "Py_Version", &addr, NULL) &&
	    !mem_read_u32(pp->pid, bias + addr, &hex) && (hex >> 24) == 3) {
		pp->version_hex = hex;
		pp->minor = (hex >> 16) & 0xff;
		return 0;
	}
	minor = python__minor_from_name(basename(path));
	if (minor < 0) {
		snprintf(why, whylen, "cannot tell the Python version of %s", path);
		return -ENOTSUP;
	}
	pp->minor = minor;
	pp->version_hex = 0x03000000u | ((uint32_t)minor << 16) | rodata_micro(e, minor) << 8;
	return 0;
}

/* The minors whose free-threaded build has a table, as "3.13, 3.14". */
static void ft_minors(char *buf, size_t n)
{
	size_t len = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; py_offsets_table[i] && len < n; i++) {
		if (py_offsets_table[i]->free_threaded)
			len += snprintf(buf + len, n - len, "%s3.%d", len ? ", " : "",
					py_offsets_table[i]->minor);
	}
	if (!buf[0])
		snprintf(buf, n, "none");
}

/* What _Py_DebugOffsets publishes of the layout, each against the table's
 * field (both as offsets into struct py_offsets), by CPython's name. */
#define PUBLISHED(dbg, field, name)                                                        \
	{                                                                                  \
		offsetof(struct py_offsets, dbg), offsetof(struct py_offsets, field), name \
	}
static const struct published_field {
	uint16_t dbg, field;
	const char *name;
} published_fields[] = {
	PUBLISHED(dbg_runtime_interpreters_head, runtime_interpreters_head,
		  "runtime.interpreters_head"),
	PUBLISHED(dbg_interp_threads_head, interp_threads_head, "interp.threads_head"),
	PUBLISHED(dbg_interp_ceval_gil, interp_ceval_gil, "interp.ceval.gil"),
	PUBLISHED(dbg_tstate_current_frame, tstate_current_frame, "tstate.current_frame"),
	PUBLISHED(dbg_tstate_thread_id, tstate_thread_id, "tstate.thread_id"),
	PUBLISHED(dbg_tstate_native_thread_id, tstate_native_thread_id, "tstate.native_thread_id"),
	PUBLISHED(dbg_tstate_next, tstate_next, "tstate.next"),
	PUBLISHED(dbg_tstate_interp, tstate_interp, "tstate.interp"),
	PUBLISHED(dbg_tstate_datastack_chunk, tstate_datastack_chunk, "tstate.datastack_chunk"),
	PUBLISHED(dbg_frame_size, frame_size, "sizeof(frame)"),
	PUBLISHED(dbg_frame_previous, frame_previous, "frame.previous"),
	PUBLISHED(dbg_frame_executable, frame_code, "frame.executable"),
	PUBLISHED(dbg_frame_instr_ptr, frame_instr, "frame.instr_ptr"),
	PUBLISHED(dbg_frame_localsplus, frame_localsplus, "frame.localsplus"),
	PUBLISHED(dbg_frame_owner, frame_owner, "frame.owner"),
	PUBLISHED(dbg_code_filename, code_filename, "code.co_filename"),
	PUBLISHED(dbg_code_name, code_name, "code.co_name"),
	PUBLISHED(dbg_code_qualname, code_qualname, "code.co_qualname"),
	PUBLISHED(dbg_code_linetable, code_linetable, "code.co_linetable"),
	PUBLISHED(dbg_code_firstlineno, code_firstlineno, "code.co_firstlineno"),
	PUBLISHED(dbg_code_argcount, code_argcount, "code.co_argcount"),
	PUBLISHED(dbg_code_code_adaptive, code_code_adaptive, "code.co_code_adaptive"),
	PUBLISHED(dbg_object_type, object_type, "object.ob_type"),
	PUBLISHED(dbg_type_name, type_name, "type.tp_name"),
	PUBLISHED(dbg_bytes_size, varobject_size, "bytes.ob_size"),
	PUBLISHED(dbg_bytes_sval, bytes_sval, "bytes.ob_sval"),
	PUBLISHED(dbg_unicode_state, unicode_state, "unicode.state"),
	PUBLISHED(dbg_unicode_length, unicode_length, "unicode.length"),
	PUBLISHED(dbg_unicode_ascii_size, unicode_ascii_size, "sizeof(PyASCIIObject)"),
	PUBLISHED(dbg_interp_threads_main, interp_threads_main, "interp.threads_main"),
	PUBLISHED(dbg_interp_remote_debug, interp_remote_debug, "interp.config.remote_debug"),
	PUBLISHED(dbg_tstate_eval_breaker, tstate_eval_breaker, "tstate.eval_breaker"),
	PUBLISHED(dbg_tstate_remote_support, tstate_remote_support,
		  "tstate.remote_debugger_support"),
	PUBLISHED(dbg_remote_pending_call, remote_pending_call, "debugger_pending_call"),
	PUBLISHED(dbg_remote_script_path, remote_script_path, "debugger_script_path"),
	PUBLISHED(dbg_remote_script_path_size, remote_script_path_size, "_Py_MAX_SCRIPT_PATH_SIZE"),
};
#undef PUBLISHED

static uint16_t *table_u16(struct py_offsets *o, uint16_t at)
{
	return (uint16_t *)((char *)o + at);
}

/* The tables made from a process's own layout: kept for the profiler's life
 * (a py_proc is copied by value, with its table pointer), one per distinct
 * layout. */
static struct py_offsets adopted_tables[8];
static int nadopted;
static pthread_mutex_t adopted_lock = PTHREAD_MUTEX_INITIALIZER;

static const struct py_offsets *adopted_table(const struct py_offsets *o)
{
	const struct py_offsets *r = NULL;
	int i;

	pthread_mutex_lock(&adopted_lock);
	for (i = 0; i < nadopted && !r; i++) {
		if (!memcmp(&adopted_tables[i], o, sizeof(*o)))
			r = &adopted_tables[i];
	}
	if (!r && nadopted < (int)(sizeof(adopted_tables) / sizeof(adopted_tables[0]))) {
		adopted_tables[nadopted] = *o;
		r = &adopted_tables[nadopted++];
	}
	pthread_mutex_unlock(&adopted_lock);
	return r;
}

int python__adopt_debug_offsets(const struct py_offsets *table, const uint8_t *buf, size_t n,
				const struct py_offsets **out, char *note, size_t notelen,
				char *why, size_t whylen)
{
	struct py_offsets mine = *table;
	size_t i, len = 0;
	uint64_t v;

	*out = table;
	note[0] = '\0';
	for (i = 0; i < sizeof(published_fields) / sizeof(published_fields[0]); i++) {
		const struct published_field *f = &published_fields[i];
		uint16_t at = *table_u16(&mine, f->dbg), *field = table_u16(&mine, f->field);

		if (at == PYOFF_NONE || at + 8u > n)
			continue;
		memcpy(&v, buf + at, sizeof(v));
		if (v == *field)
			continue;
		if (v >= PYOFF_NONE) {
			snprintf(why, whylen,
				 "the interpreter's _Py_DebugOffsets puts %s at %llu, which no "
				 "layout has: not a CPython this profiler can read",
				 f->name, (unsigned long long)v);
			return -EPROTO;
		}
		if (len < notelen) {
			char was[16] = "none";

			if (*field != PYOFF_NONE)
				snprintf(was, sizeof(was), "%u", *field);
			len += snprintf(note + len, notelen - len, "%s%s at %llu (table %s)",
					len ? ", " : "", f->name, (unsigned long long)v, was);
		}
		*field = (uint16_t)v;
	}
	if (!note[0])
		return 0;
	/* The frame is read in one piece of its size. */
	if (mine.frame_previous + 8u > mine.frame_size || mine.frame_code + 8u > mine.frame_size ||
	    mine.frame_instr + 8u > mine.frame_size) {
		snprintf(why, whylen, "the interpreter's frame fields lie outside its frame (%s)",
			 note);
		return -EPROTO;
	}
	*out = adopted_table(&mine);
	if (!*out) {
		snprintf(why, whylen,
			 "too many interpreter layouts that differ from the tables (%s): "
			 "regenerate pyoffsets for this build",
			 note);
		return -EPROTO;
	}
	return 0;
}

/* 3.13+: the runtime begins with _Py_DebugOffsets, what the interpreter says
 * about itself, starting with its build: the free-threaded one has a table
 * of its own (_Py_DebugOffsets is laid out alike in both).  What it publishes
 * of its layout is taken from it where it differs from the table (a patch
 * release that moved a field), and said (layout_note); the rest is the
 * table's, and the checks that follow (the code object's size against its
 * type, the thread-state key, the GIL) still hold it to the process. */
static int check_debug_offsets(struct py_proc *pp, char *why, size_t whylen)
{
	static const char cookie[8] = "xdebugpy";
	const struct py_offsets *o = pp->off;
	uint8_t buf[2048];
	char list[64];
	uint64_t v;
	int err;

	if (o->dbg_version == PYOFF_NONE)
		return 0;
	err = mem_read(pp->pid, pp->runtime, buf, sizeof(buf));
	if (err) {
		snprintf(why, whylen, "failed to read _Py_DebugOffsets: %s", strerror(-err));
		return err;
	}
	if (memcmp(buf, cookie, sizeof(cookie))) {
		snprintf(why, whylen, "_PyRuntime does not start with the debug-offsets cookie");
		return -EPROTO;
	}
	memcpy(&v, buf + o->dbg_free_threaded, sizeof(v));
	if ((v != 0) != (o->free_threaded != 0)) {
		o = offsets_for(pp->minor, v != 0);
		if (!o) {
			ft_minors(list, sizeof(list));
			snprintf(why, whylen,
				 "the free-threaded build of Python 3.%d is not supported "
				 "(free-threaded "
				 "builds supported: %s)",
				 pp->minor, list);
			return -ENOTSUP;
		}
		pp->off = o;
	}
	err = python__adopt_debug_offsets(pp->off, buf, sizeof(buf), &pp->off, pp->layout_note,
					  sizeof(pp->layout_note), why, whylen);
	if (!err && pp->layout_note[0])
		pr_warn("pid %d: Python %s lays out %s, not as the table has it: taken from the "
			"interpreter\n",
			pp->pid, pp->path, pp->layout_note);
	return err;
}

int python__main_interp(const struct py_proc *pp, uint64_t *interp)
{
	int err;

	*interp = 0;
	if (pp->off->runtime_interp_main == PYOFF_NONE)
		return -ENOTSUP;
	err = mem_read_u64(pp->pid, pp->runtime + pp->off->runtime_interp_main, interp);
	if (!err && !*interp)
		err = -EAGAIN;
	return err;
}

/* Walks runtime -> interpreters -> threads (python.h). */
int python__main_tstate(const struct py_proc *pp, uint64_t *tstate)
{
	const struct py_offsets *o = pp->off;
	uint64_t interp = 0, ts, tid;
	int ni, nt, err;

	err = mem_read_u64(pp->pid, pp->runtime + o->runtime_interpreters_head, &interp);
	if (err)
		return err;
	for (ni = 0; interp && ni < MAX_INTERPS; ni++) {
		err = mem_read_u64(pp->pid, interp + o->interp_threads_head, &ts);
		if (err)
			return err;
		for (nt = 0; ts && nt < MAX_THREADS; nt++) {
			err = mem_read_u64(pp->pid, ts + o->tstate_thread_id, &tid);
			if (err)
				return err;
			if (tid == pp->main_thread) {
				*tstate = ts;
				return 0;
			}
			err = mem_read_u64(pp->pid, ts + o->tstate_next, &ts);
			if (err)
				return err;
		}
		/* PyInterpreterState.next is its first field. */
		err = mem_read_u64(pp->pid, interp, &interp);
		if (err)
			return err;
	}
	return -EAGAIN;
}

/* Where the walker finds a thread's own state: autoTSSkey's slot in the
 * thread's TSD block (3.9-3.14), or the thread-local _Py_tss_gilstate that
 * 3.15's PyGILState_GetThisThreadState() reads (its offset from the thread
 * pointer, from that function's code).  0 or -errno, with why. */
static int tstate_slot(struct py_proc *pp, const struct elf_file *e, uint64_t bias, uint64_t *slot,
		       char *why, size_t whylen)
{
	const struct py_offsets *o = pp->off;
	uint64_t key_addr = pp->runtime + o->runtime_autotss_key;
	uint32_t inited = 0, key = 0;
	int64_t off = 0;
	int err;

	if (o->runtime_autotss_key == PYOFF_NONE) {
		err = tls_slot_offset(e, bias, pp->pid, pp->main_thread,
				      "PyGILState_GetThisThreadState", &off);
		if (err == -ENOENT || err == -ENOTSUP) {
			snprintf(why, whylen,
				 "cannot find the thread-local that holds each thread's state: "
				 "PyGILState_GetThisThreadState %s; not supported",
				 err == -ENOENT ? "is not exported" : "has code of another shape");
			return -ENOTSUP;
		}
		if (err) {
			snprintf(why, whylen, "failed to read the thread-local's offset: %s",
				 strerror(-err));
			return err;
		}
		pp->cfg.tls_off = off;
		*slot = pp->main_thread + (uint64_t)off;
		return 0;
	}
	err = mem_read_u32(pp->pid, key_addr, &inited);
	if (!err)
		err = mem_read_u32(pp->pid, key_addr + 4, &key);
	if (err) {
		snprintf(why, whylen, "failed to read _PyRuntime: %s", strerror(-err));
		return err;
	}
	if (!inited) {
		snprintf(why, whylen, "the Python runtime is not initialised yet");
		return -EAGAIN;
	}
	if (key >= TSD_DIRECT_KEYS) {
		snprintf(why, whylen,
			 "thread-state key %u is outside glibc's first TSD block; not supported",
			 key);
		return -ENOTSUP;
	}
	pp->cfg.tss_key_addr = key_addr + 4;
	*slot = pp->main_thread + GLIBC_TSD_BASE + (uint64_t)key * GLIBC_TSD_STRIDE +
		GLIBC_TSD_DATA;
	return 0;
}

/* The recipe (tstate_slot) must give the main thread's own state, the one
 * _PyRuntime's thread list names: otherwise a layout assumption is wrong and
 * every stack would be garbage, so the process is refused with the reason. */
static int check_tsd(struct py_proc *pp, const struct elf_file *e, uint64_t bias, char *why,
		     size_t whylen)
{
	uint64_t slot = 0, via_tsd = 0, via_list = 0;
	int err;

	err = mem_read_u64(pp->pid, pp->runtime + pp->off->runtime_main_thread, &pp->main_thread);
	if (err) {
		snprintf(why, whylen, "failed to read _PyRuntime: %s", strerror(-err));
		return err;
	}
	if (!pp->main_thread) {
		snprintf(why, whylen, "the Python runtime is not initialised yet");
		return -EAGAIN;
	}
	err = tstate_slot(pp, e, bias, &slot, why, whylen);
	if (err)
		return err;
	err = python__main_tstate(pp, &via_list);
	if (err == -EAGAIN) {
		snprintf(why, whylen, "the main thread has no Python thread state yet");
		return err;
	}
	if (err) {
		snprintf(why, whylen, "failed to read the thread list: %s", strerror(-err));
		return err;
	}
	err = mem_read_u64(pp->pid, slot, &via_tsd);
	if (err || via_tsd != via_list) {
		/* During start-up the state is listed before it is bound to the
		 * slot: the caller retries, and gives up after a while with this
		 * reason. */
		snprintf(why, whylen,
			 "the thread-state slot does not hold the main thread's state "
			 "(not glibc x86_64?); not supported");
		return -EAGAIN;
	}
	return 0;
}

/*
 * Where the main interpreter's GIL keeps its locks: _PyRuntime.ceval.gil
 * (3.9-3.11), or what _PyRuntime.interpreters.main->ceval.gil points to
 * (3.12+).  Its `locked` must read 0 or 1, else the range is not used and
 * gil_why says why (GIL wait is then not measured; the rest of the profile
 * does not depend on it).  -EAGAIN while the GIL is not created yet.
 */
/* Where the main interpreter's collector says it is running (its
 * gc.collecting), or 0 where the table or the process does not tell. */
static uint64_t gc_flag(const struct py_proc *pp)
{
	const struct py_offsets *o = pp->off;
	uint64_t interp = 0;

	if (o->interp_gc_collecting == PYOFF_NONE || python__main_interp(pp, &interp))
		return 0;
	return interp + o->interp_gc_collecting;
}

static int find_gil(struct py_proc *pp)
{
	const struct py_offsets *o = pp->off;
	uint64_t gil = 0, interp = 0;
	int32_t locked = 0;
	int err;

	pp->gil_lo = pp->gil_hi = pp->gil_holder = 0;
	pp->gil_enabled = -1;
	/* A free-threaded build runs its threads' Python side by side, but
	 * keeps a GIL that can be turned on (PYTHON_GIL=1, an extension that
	 * needs it): its wait is measured as in other builds, and is 0 while
	 * it is off. */
	if (o->free_threaded && o->gil_enabled == PYOFF_NONE) {
		snprintf(pp->gil_why, sizeof(pp->gil_why),
			 "the free-threaded table of 3.%d does not say where its GIL is turned on",
			 pp->minor);
		return 0;
	}
	if (o->gil_locks == PYOFF_NONE || o->gil_size == PYOFF_NONE ||
	    o->gil_locked == PYOFF_NONE) {
		snprintf(pp->gil_why, sizeof(pp->gil_why),
			 "the layout table of 3.%d has no GIL fields", pp->minor);
		return 0;
	}
	if (o->runtime_ceval_gil != PYOFF_NONE) {
		gil = pp->runtime + o->runtime_ceval_gil;
	} else if (o->runtime_interp_main != PYOFF_NONE && o->interp_ceval_gil != PYOFF_NONE) {
		err = python__main_interp(pp, &interp);
		if (!err)
			err = mem_read_u64(pp->pid, interp + o->interp_ceval_gil, &gil);
		if (err && err != -EAGAIN) {
			snprintf(pp->gil_why, sizeof(pp->gil_why),
				 "failed to read the GIL's address: %s", strerror(-err));
			return 0;
		}
		if (!gil)
			return -EAGAIN;
	} else {
		snprintf(pp->gil_why, sizeof(pp->gil_why),
			 "the layout table of 3.%d does not say where the GIL is", pp->minor);
		return 0;
	}
	err = mem_read(pp->pid, gil + o->gil_locked, &locked, sizeof(locked));
	if (err) {
		snprintf(pp->gil_why, sizeof(pp->gil_why), "failed to read the GIL: %s",
			 strerror(-err));
		return 0;
	}
	if (locked == -1)
		return -EAGAIN;
	if (locked != 0 && locked != 1) {
		snprintf(pp->gil_why, sizeof(pp->gil_why),
			 "the GIL at 0x%llx does not look like one (locked = %d)",
			 (unsigned long long)gil, (int)locked);
		return 0;
	}
	if (o->free_threaded) {
		int32_t enabled = 0;

		err = mem_read(pp->pid, gil + o->gil_enabled, &enabled, sizeof(enabled));
		if (err) {
			snprintf(pp->gil_why, sizeof(pp->gil_why), "failed to read the GIL: %s",
				 strerror(-err));
			return 0;
		}
		/* 0, a count of transient requests, or INT_MAX for good. */
		if (enabled < 0) {
			snprintf(pp->gil_why, sizeof(pp->gil_why),
				 "the GIL at 0x%llx does not look like one (enabled = %d)",
				 (unsigned long long)gil, (int)enabled);
			return 0;
		}
		pp->gil_enabled = enabled != 0;
	}
	pp->gil_lo = gil + o->gil_locks;
	pp->gil_hi = gil + o->gil_size;
	/* Who holds it: the last holder, with locked where BPF reads it. */
	if (o->gil_last_holder != PYOFF_NONE && o->gil_locked == o->gil_last_holder + 8)
		pp->gil_holder = gil + o->gil_last_holder;
	return 0;
}

/* [lo, hi) covering n fields of 8 bytes at most each, those not NONE; lo
 * PYOFF_NONE and hi 0 when there is none. */
static void fields_span(const uint16_t *fields, size_t n, unsigned int *lo, unsigned int *hi)
{
	size_t i;

	*lo = PYOFF_NONE;
	*hi = 0;
	for (i = 0; i < n; i++) {
		if (fields[i] == PYOFF_NONE)
			continue;
		*lo = fields[i] < *lo ? fields[i] : *lo;
		*hi = fields[i] + 8u > *hi ? fields[i] + 8u : *hi;
	}
}

/* The thread state's span the walker reads in one go (py_walk_cfg.ts_lo):
 * from the first to the end of the last field it needs.  A layout whose
 * fields lie further apart than TS_BUF gets ts_len 0, which the walker
 * refuses (WALK_NO_CONFIG) rather than reading them one by one. */
static void walk_cfg_tstate_span(const struct py_offsets *o, struct py_walk_cfg *c)
{
	const uint16_t fields[] = { c->ts_thread_id, c->ts_frame, o->tstate_datastack_chunk,
				    o->tstate_datastack_top };
	unsigned int lo, hi;

	fields_span(fields, sizeof(fields) / sizeof(fields[0]), &lo, &hi);
	c->ts_stack_chunk = PYOFF_NONE;
	c->ts_stack_top = PYOFF_NONE;
	c->chunk_data = PYOFF_NONE;
	if (lo >= hi || hi - lo > TS_BUF)
		return;
	c->ts_lo = lo;
	c->ts_len = hi - lo;
	if (o->tstate_datastack_chunk != PYOFF_NONE && o->tstate_datastack_top != PYOFF_NONE &&
	    o->stackchunk_data != PYOFF_NONE) {
		c->ts_stack_chunk = o->tstate_datastack_chunk;
		c->ts_stack_top = o->tstate_datastack_top;
		c->chunk_data = o->stackchunk_data;
	}
}

/* What the code-object deallocator's probe reads (struct code_snap_record):
 * the span of the code object's fields that pycode.c reads, and how to size
 * its strs and its line table.  co_len 0: nothing (a span that does not fit
 * the record). */
static void walk_cfg_code_snap(const struct py_offsets *o, struct py_walk_cfg *c)
{
	const uint16_t fields[] = { o->code_firstlineno, o->code_filename,  o->code_name,
				    o->code_qualname,	 o->code_linetable, o->code_flags };
	unsigned int lo, hi;

	fields_span(fields, sizeof(fields) / sizeof(fields[0]), &lo, &hi);
	c->co_qualname = o->code_qualname;
	c->co_linetable = o->code_linetable;
	c->co_lo = lo & ~7u;
	c->co_len = hi - c->co_lo <= CODE_SNAP_HEAD_BYTES ? hi - c->co_lo : 0;
	c->str_state = o->unicode_state;
	c->str_length = o->unicode_length;
	c->str_ascii_size = o->unicode_ascii_size;
	c->str_compact_size = o->unicode_compact_size;
	c->str_kind_mask = o->unicode_kind_mask;
	c->str_kind_shift = o->unicode_kind_mask ? __builtin_ctz(o->unicode_kind_mask) : 0;
	c->str_ascii_mask = o->unicode_ascii_mask;
	c->str_compact_mask = o->unicode_compact_mask;
	c->var_size = o->varobject_size;
}

void python__walk_cfg(const struct py_offsets *o, uint64_t tss_key_addr, int64_t tls_off,
		      struct py_walk_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->tss_key_addr = tss_key_addr;
	c->tls_off = tls_off;
	c->minor = o->minor;
	c->tsd_base = GLIBC_TSD_BASE;
	c->tsd_stride = GLIBC_TSD_STRIDE;
	c->tsd_data = GLIBC_TSD_DATA;
	c->ts_thread_id = o->tstate_thread_id;
	if (o->tstate_frame != PYOFF_NONE) {
		c->ts_frame = o->tstate_frame;
		c->cframe_current = c->cframe_prev = PYOFF_NONE;
	} else if (o->tstate_cframe != PYOFF_NONE) {
		c->ts_frame = o->tstate_cframe;
		c->cframe_current = o->cframe_current_frame;
		c->cframe_prev = o->cframe_previous;
	} else {
		c->ts_frame = o->tstate_current_frame;
		c->cframe_current = c->cframe_prev = PYOFF_NONE;
	}
	c->f_code = o->frame_code;
	c->f_prev = o->frame_previous;
	c->f_instr = o->frame_instr;
	/* 3.11 has owner but no shim frames; only 3.12+ marks them with it. */
	c->f_owner = o->minor >= 12 ? o->frame_owner : PYOFF_NONE;
	c->f_entry = o->minor == 11 ? o->frame_is_entry : PYOFF_NONE;
	c->frame_read = o->frame_size < FRAME_BUF ? o->frame_size : FRAME_BUF;
	c->co_adaptive = o->code_code_adaptive == PYOFF_NONE ? 0 : o->code_code_adaptive;
	c->co_firstlineno = o->code_firstlineno;
	c->co_filename = o->code_filename;
	c->co_name = o->code_name;
	c->co_code = o->code_code;
	c->bytes_sval = o->bytes_sval;
	walk_cfg_tstate_span(o, c);
	memcpy(c->call_ops, o->call_ops, sizeof(c->call_ops));
	walk_cfg_code_snap(o, c);
}

static int check_code_type(struct py_proc *pp, const struct elf_file *e, uint64_t bias, char *why,
			   size_t whylen)
{
	const struct py_offsets *o = pp->off;
	uint64_t addr, basicsize = 0;

	/* 3.11+: the bytecode follows the fixed part of the code object, so
	 * tp_basicsize must equal offsetof(co_code_adaptive). */
	if (o->code_code_adaptive == PYOFF_NONE)
		return 0;
	if (elf_file__find_symbol(e, "PyCode_Type", &addr, NULL))
		return 0;
	if (mem_read_u64(pp->pid, bias + addr + o->type_basicsize, &basicsize))
		return 0;
	if (basicsize != o->code_code_adaptive) {
		snprintf(why, whylen,
			 "layout mismatch: PyCode_Type.tp_basicsize is %llu, the table says %u",
			 (unsigned long long)basicsize, o->code_code_adaptive);
		return -EPROTO;
	}
	return 0;
}

int python__check_binary(const char *path, char *why, size_t whylen)
{
	char *real = realpath(path, NULL);
	struct elf_file *e;
	const char *lib;
	int minor = -1;

	why[0] = '\0';
	e = elf_file__open(real ? real : path);
	if (!e) {
		/* A script (pyenv's shims are shell scripts): decided at run time. */
		free(real);
		return 0;
	}
	if (!elf_file__find_symbol(e, "_PyRuntime", NULL, NULL))
		minor = python__minor_from_name(basename(real ? real : path));
	else if ((lib = elf_file__needed(e, "libpython3")) != NULL)
		minor = python__minor_from_name(lib);
	elf_file__free(e);
	free(real);
	if (minor >= 0 &&
	    (minor < PY_MIN_MINOR || minor > PY_MAX_MINOR || !offsets_for(minor, false))) {
		snprintf(why, whylen, "%s is Python 3.%d, which is not supported (supported: %s)",
			 path, minor, PY_SUPPORTED);
		return -ENOTSUP;
	}
	return 0;
}

/* The first file mapping of path: its identity keys the ELF cache. */
static const struct map_entry *file_entry(const struct procmaps *m, const char *path)
{
	size_t i;

	for (i = 0; i < procmaps__count(m); i++) {
		const struct map_entry *e = procmaps__get(m, i);

		if (e->inode && !e->deleted && !strcmp(e->path, path))
			return e;
	}
	return NULL;
}

/* Where the deallocator of code objects (PyCode_Type's tp_dealloc) is, in
 * the interpreter's file: a probe there lets walks keep what they read of
 * code objects (struct pywalk_owner).  Left at 0 when it is not in the
 * file's executable mapping (a type patched by the program, say) or cannot
 * take the probe. */
static void find_code_dealloc(struct py_proc *pp, const struct procmaps *m,
			      const struct elf_file *e, uint64_t bias, const char *path)
{
	static const uint8_t nop5[] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	const struct map_entry *me;
	uint64_t addr, fn = 0, off;
	uint8_t entry[sizeof(nop5)];

	if (elf_file__find_symbol(e, "PyCode_Type", &addr, NULL) ||
	    mem_read_u64(pp->pid, bias + addr + pp->off->type_dealloc, &fn))
		return;
	me = procmaps__find(m, fn);
	if (!me || !me->x || me->deleted || !me->inode || strcmp(me->path, path))
		return;
	off = fn - me->start + me->offset;
	/* Not on a 5-byte nop (a build with patchable entries): a fork child
	 * after the first hit would inherit a call to a page it has not
	 * (probes.h). */
	if (elf_file__read(e, off, entry, sizeof(entry)) || !memcmp(entry, nop5, sizeof(nop5)))
		return;
	pp->code_dealloc_off = off;
	pp->file_inode = me->inode;
	pp->file_dev_major = me->dev_major;
	pp->file_dev_minor = me->dev_minor;
}

/* The interpreter file a process that exec'ed `exe` loads: exe itself when
 * it holds _PyRuntime, else the libpython it needs, where its run path
 * names ($ORIGIN expanded).  Its path as the process sees it in path. */
static int interpreter_file(int pid, const char *exe, struct elf_file *e, char *path, size_t n,
			    struct elf_file **out)
{
	const char *name, *sp, *p;
	char dir[PATH_MAX], origin[PATH_MAX];

	if (!elf_file__find_symbol(e, "_PyRuntime", NULL, NULL)) {
		snprintf(path, n, "%s", exe);
		*out = e;
		return 0;
	}
	name = elf_file__needed(e, "libpython3");
	sp = elf_file__search_path(e);
	if (!name || !sp)
		return -ENOENT;
	snprintf(origin, sizeof(origin), "%s", exe);
	if (strrchr(origin, '/'))
		*strrchr(origin, '/') = '\0';
	for (p = sp; *p; p += *p == ':') {
		size_t len = strcspn(p, ":");

		int w;

		if (!strncmp(p, "$ORIGIN", 7) && (len == 7 || p[7] == '/'))
			w = snprintf(dir, sizeof(dir), "%s%.*s", origin, (int)(len - 7), p + 7);
		else if (!strncmp(p, "${ORIGIN}", 9) && (len == 9 || p[9] == '/'))
			w = snprintf(dir, sizeof(dir), "%s%.*s", origin, (int)(len - 9), p + 9);
		else
			w = snprintf(dir, sizeof(dir), "%.*s", (int)len, p);
		p += len;
		if (w < 0 || (size_t)w >= sizeof(dir) || dir[0] != '/')
			continue;
		w = snprintf(path, n, "%s/%s", dir, name);
		if (w < 0 || (size_t)w >= n)
			continue;
		if (!open_module(pid, path, out) &&
		    !elf_file__find_symbol(*out, "_PyRuntime", NULL, NULL))
			return 0;
		if (*out)
			elf_file__free(*out);
		*out = NULL;
	}
	return -ENOENT;
}

int python__code_dealloc_in_files(int pid, const char *exe_path, struct py_proc *pp)
{
	static const uint8_t nop5[] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	struct elf_file *e = NULL, *ie = NULL;
	char exe[PATH_MAX], link[64], rooted[PATH_MAX + 64];
	uint64_t type, fn, off, ranges[8][2], vers = 0, sym_off;
	const struct py_offsets *o;
	uint8_t entry[sizeof(nop5)];
	const char *sym;
	struct stat st;
	ssize_t len;
	int ver, i, n, err;
	bool ft;

	memset(pp, 0, sizeof(*pp));
	pp->pid = pid;
	if (exe_path) {
		if (snprintf(exe, sizeof(exe), "%s", exe_path) >= (int)sizeof(exe))
			return -ENAMETOOLONG;
	} else {
		snprintf(link, sizeof(link), "/proc/%d/exe", pid);
		len = readlink(link, exe, sizeof(exe) - 1);
		if (len <= 0)
			return -errno;
		exe[len] = '\0';
	}
	err = open_module(pid, exe, &e);
	if (err)
		return err;
	err = interpreter_file(pid, exe, e, pp->path, sizeof(pp->path), &ie);
	if (err)
		goto out;
	ver = name_version(basename(pp->path), &ft);
	/* 3.11+ says its version in Py_Version. */
	if (!elf_file__find_symbol(ie, "Py_Version", &fn, NULL) &&
	    !elf_file__vaddr_to_offset(ie, fn, &off) && !elf_file__read(ie, off, &vers, 4) &&
	    (vers >> 24) == 3)
		ver = (int)((vers >> 16) & 0xff);
	o = offsets_for(ver, ft);
	err = -ENOTSUP;
	if (!o)
		goto out;
	/* What the dynamic loader will write into PyCode_Type's tp_dealloc:
	 * a function of the file's executable code, at its first byte where
	 * the symbols say (a stripped build has no symbol for it). */
	err = -ENOENT;
	if (elf_file__find_symbol(ie, "PyCode_Type", &type, NULL) ||
	    elf_file__pointer_at(ie, type + o->type_dealloc, &fn))
		goto out;
	n = elf_file__exec_ranges(ie, ranges, 8);
	for (i = 0; i < n && (fn < ranges[i][0] || fn >= ranges[i][1]); i++)
		;
	if (i >= n || elf_file__vaddr_to_offset(ie, fn, &off))
		goto out;
	if (!elf_file__symbolize(ie, fn, &sym, &sym_off) && sym_off)
		goto out;
	if (elf_file__read(ie, off, entry, sizeof(entry)) || !memcmp(entry, nop5, sizeof(nop5)))
		goto out;
	if (procmaps__file_in_root(rooted, sizeof(rooted), pid, pp->path) || stat(rooted, &st)) {
		err = -errno;
		goto out;
	}
	pp->minor = ver;
	pp->code_dealloc_off = off;
	pp->file_inode = st.st_ino;
	pp->file_dev_major = major(st.st_dev);
	pp->file_dev_minor = minor(st.st_dev);
	err = 0;
out:
	if (ie && ie != e)
		elf_file__free(ie);
	elf_file__free(e);
	return err;
}

int python__detect(int pid, struct py_proc *pp, char *why, size_t whylen)
{
	return python__detect_cached(pid, pp, NULL, why, whylen);
}

int python__detect_cached(int pid, struct py_proc *pp, struct elf_cache *cache, char *why,
			  size_t whylen)
{
	struct procmaps *m = NULL;
	const struct map_entry *me, *fe = NULL;
	struct cached_elf *ce = NULL;
	struct elf_file *e = NULL;
	char exe[PATH_MAX];
	const char *path;
	uint64_t bias, addr;
	char ver[32];
	int err;

	memset(pp, 0, sizeof(*pp));
	pp->pid = pid;
	why[0] = '\0';
	m = procmaps__load(pid);
	if (!m) {
		err = errno == ENOENT ? -ESRCH : -errno;
		snprintf(why, whylen, "failed to read /proc/%d/maps: %s", pid, strerror(-err));
		return err;
	}
	path = find_interp_module(m, pid, exe, sizeof(exe));
	if (!path) {
		err = -ESRCH;
		snprintf(why, whylen, "process %d is gone", pid);
		goto cleanup;
	}
	snprintf(pp->path, sizeof(pp->path), "%s", path);
	if (cache)
		fe = file_entry(m, path);
	if (fe)
		ce = elf_cache__find(cache, fe->dev_major, fe->dev_minor, fe->inode);
	if (ce) {
		e = cached_elf__file(ce);
	} else {
		err = open_module(pid, path, &e);
		if (err) {
			snprintf(why, whylen, "failed to open %s: %s", path, strerror(-err));
			goto cleanup;
		}
	}
	if (elf_file__find_symbol(e, "_PyRuntime", &addr, NULL)) {
		/* Just exec'ed, before the loader has mapped libpython. */
		if (path == exe && elf_file__needed(e, "libpython3")) {
			err = -EAGAIN;
			snprintf(why, whylen, "%s has not loaded libpython yet", path);
			goto cleanup;
		}
		err = -ENOENT;
		snprintf(why, whylen, "%s is not a Python interpreter (no _PyRuntime symbol)",
			 path);
		goto cleanup;
	}
	/* An interpreter: kept for the next process of its build (other
	 * programs are not, and the cache is bounded). */
	if (fe && !ce) {
		ce = elf_cache__add(cache, fe->dev_major, fe->dev_minor, fe->inode, e);
		e = ce ? cached_elf__file(ce) : NULL;
		if (!e) {
			err = -ENOMEM;
			snprintf(why, whylen, "out of memory");
			goto cleanup;
		}
	}
	err = procmaps_load_bias(m, path, e, &bias);
	if (err) {
		/* Started but not mapped the way we expect yet (exec in progress). */
		snprintf(why, whylen, "cannot find where %s is mapped", path);
		err = -EAGAIN;
		goto cleanup;
	}
	pp->runtime = bias + addr;
	/* The dynamic loader maps the library as one read-only span first and
	 * then each segment over it: until the data segment is in place, the
	 * address holds bytes of the file, not _PyRuntime, and reading it would
	 * refuse the process for good on garbage (a TSD key, a layout). */
	me = procmaps__find(m, pp->runtime);
	if (!me || !me->w) {
		err = -EAGAIN;
		snprintf(why, whylen, "%s is not fully mapped yet", path);
		goto cleanup;
	}
	pp->static_build = strncmp(basename(path), "libpython", 9) != 0;
	err = read_version(pp, e, bias, path, why, whylen);
	if (err)
		goto cleanup;
	python__version_string(pp->version_hex, ver, sizeof(ver));
	pp->off = offsets_for(pp->minor, false);
	if (!pp->off || pp->minor < PY_MIN_MINOR || pp->minor > PY_MAX_MINOR) {
		snprintf(why, whylen, "Python 3.%d is not supported (supported: %s)", pp->minor,
			 PY_SUPPORTED);
		err = -ENOTSUP;
		goto cleanup;
	}
	err = check_debug_offsets(pp, why, whylen);
	if (!err)
		err = check_code_type(pp, e, bias, why, whylen);
	if (!err)
		err = check_tsd(pp, e, bias, why, whylen);
	if (!err) {
		err = find_gil(pp);
		if (err == -EAGAIN)
			snprintf(why, whylen, "the GIL is not created yet");
	}
	/* Not ready, but the interpreter's file is mapped and relocated (or
	 * its deallocator's address leads nowhere yet): where that is, so
	 * that its probe can be in place before the first code runs. */
	if (err == -EAGAIN)
		find_code_dealloc(pp, m, e, bias, path);
	if (err)
		goto cleanup;
	/* The code ranges as mapped now that the interpreter runs: the maps
	 * read above can be older than the libraries loaded with it (a static
	 * build's runtime is found at exec, before the dynamic loader maps
	 * the allocation sampler, whose time is the interpreter's). */
	path = pp->path; /* not into the maps freed here */
	procmaps__free(m);
	m = procmaps__load(pid);
	if (!m) {
		err = errno == ENOENT ? -ESRCH : -errno;
		snprintf(why, whylen, "failed to read /proc/%d/maps: %s", pid, strerror(-err));
		goto cleanup;
	}
	text_ranges(pp, m, path);
	call_machinery_ranges(pp, e, bias);
	find_code_dealloc(pp, m, e, bias, path);
	python__walk_cfg(pp->off, pp->cfg.tss_key_addr, pp->cfg.tls_off, &pp->cfg);
	memcpy(pp->cfg.text, pp->text, sizeof(pp->cfg.text));
	pp->cfg.ntext = pp->ntext;
	pp->cfg.gc_collecting = gc_flag(pp);
	pp->cfg.gil_holder = pp->gil_holder;
	pr_debug("pid %d: Python %s in %s, _PyRuntime at 0x%llx\n", pid, ver, path,
		 (unsigned long long)pp->runtime);
cleanup:
	if (ce)
		elf_cache__put(ce);
	else
		elf_file__free(e);
	procmaps__free(m);
	return err;
}

int python__thread_tid(const struct py_proc *pp, uint64_t tstate, int *tid)
{
	const struct py_offsets *o = pp->off;
	uint64_t v = 0, pt;
	uint32_t t = 0;
	int err;

	*tid = 0;
	if (o->tstate_native_thread_id != PYOFF_NONE) {
		err = mem_read_u64(pp->pid, tstate + o->tstate_native_thread_id, &v);
		if (err)
			return err;
		*tid = (int)v;
		return v && v < (1u << 30) ? 0 : -EINVAL;
	}
	/* Through glibc's struct pthread, whose tid offset must give the
	 * process's own id for its main thread. */
	err = mem_read_u32(pp->pid, pp->main_thread + GLIBC_PTHREAD_TID, &t);
	if (err)
		return err;
	if ((int)t != pp->pid)
		return -ENOTSUP;
	err = mem_read_u64(pp->pid, tstate + o->tstate_thread_id, &pt);
	if (!err)
		err = mem_read_u32(pp->pid, pt + GLIBC_PTHREAD_TID, &t);
	if (err)
		return err;
	*tid = (int)t;
	return t && t < (1u << 30) ? 0 : -EINVAL;
}
