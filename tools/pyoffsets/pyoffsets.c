/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pyoffsets: print the struct py_offsets table of one CPython minor version as
 * a C header.  Compiled against that version's own headers with Py_BUILD_CORE,
 * so every offset and size comes from the compiler (offsetof/sizeof), never
 * from a hand-written number.  tools/pyoffsets/generate builds and runs it
 * once per interpreter; see pyoffsets/README.md.
 *
 *   gcc -I$INC -I$INC/internal -Ipyoffsets -DPYOFF_CALL_OPS='"callops.h"' \
 *       tools/pyoffsets/pyoffsets.c -o pyoffsets-3.N
 *   ./pyoffsets-3.N HEADERS-LABEL > pyoffsets/cpython-3.N.h
 *
 * HEADERS-LABEL is the include directory as it should appear in the
 * provenance comment (the generator writes it relative to `pyenv root` so
 * that the output does not depend on where pyenv lives).
 *
 * PYOFF_CALL_OPS names a file of CALL_OP(NAME) lines, one per call-family
 * opcode name the generator found in the version's opcode headers; the
 * compiler gives each name's value from those same headers.
 */
#ifndef Py_BUILD_CORE
#define Py_BUILD_CORE 1
#endif

#include <Python.h>
#include <frameobject.h>
#include <opcode.h>
#include <internal/pycore_runtime.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_pystate.h>
#if PY_VERSION_HEX >= 0x030b0000
#include <internal/pycore_frame.h>
#include <internal/pycore_code.h>
#include <internal/pycore_dict.h>
#include <internal/pycore_object.h>
#endif
#if PY_VERSION_HEX >= 0x030d0000
#include <internal/pycore_ceval.h>
#endif

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "pyoffsets.h"

#if !defined(__x86_64__) || !defined(__LP64__)
#error "the committed tables describe x86_64; build this tool on an x86_64 host"
#endif

#if PY_MAJOR_VERSION != 3 || PY_VERSION_HEX < 0x03090000 || PY_VERSION_HEX >= 0x03100000
#error "pyoffsets knows the layouts of CPython 3.9 to 3.15; teach it the new version first"
#endif

#ifndef PYOFF_CALL_OPS
#error "define PYOFF_CALL_OPS as the file of CALL_OP(NAME) lines (tools/pyoffsets/generate does)"
#endif

/* Offsets that do not fit below PYOFF_NONE; reported, then main() fails. */
static int n_too_big;

static uint16_t off16(size_t value, const char *what)
{
	if (value >= PYOFF_NONE) {
		fprintf(stderr, "pyoffsets: %s = %zu does not fit below PYOFF_NONE\n", what, value);
		n_too_big++;
		return PYOFF_NONE;
	}
	return (uint16_t)value;
}

#define OFF(type, member) off16(offsetof(type, member), #type "." #member)
#define SIZE(type) off16(sizeof(type), "sizeof(" #type ")")

static void fill_runtime(struct py_offsets *o)
{
	o->runtime_interpreters_head = OFF(_PyRuntimeState, interpreters.head);
	o->runtime_main_thread = OFF(_PyRuntimeState, main_thread);
#if PY_VERSION_HEX >= 0x030f0000
	/* 3.15 keeps the thread's bound state in a thread-local
	 * (_Py_tss_gilstate), found in the code that reads it (target/python.c). */
	o->runtime_autotss_key = PYOFF_NONE;
#elif PY_VERSION_HEX >= 0x030c0000
	/* 3.12 moved the key out of gilstate and dropped tstate_current for a
	 * thread-local (_Py_tss_tstate). */
	o->runtime_autotss_key = OFF(_PyRuntimeState, autoTSSkey);
#else
	o->runtime_autotss_key = OFF(_PyRuntimeState, gilstate.autoTSSkey);
	o->runtime_tstate_current = OFF(_PyRuntimeState, gilstate.tstate_current);
#endif

#if PY_VERSION_HEX >= 0x030b0000
	o->interp_threads_head = OFF(PyInterpreterState, threads.head);
#else
	o->interp_threads_head = OFF(PyInterpreterState, tstate_head);
#endif
}

static void fill_thread_state(struct py_offsets *o)
{
	o->tstate_next = OFF(PyThreadState, next);
	o->tstate_interp = OFF(PyThreadState, interp);
	o->tstate_thread_id = OFF(PyThreadState, thread_id);
#if PY_VERSION_HEX >= 0x030b0000
	o->tstate_native_thread_id = OFF(PyThreadState, native_thread_id);
	/* The data stack the frames of 3.11+ are pushed on: its current chunk
	 * and the end of its used part. */
	o->tstate_datastack_chunk = OFF(PyThreadState, datastack_chunk);
	o->tstate_datastack_top = OFF(PyThreadState, datastack_top);
	o->stackchunk_data = OFF(_PyStackChunk, data);
#endif

	/*
	 * Where the frame chain starts.  3.10 also has a tstate->cframe, but it
	 * only carries use_tracing there; the chain hangs off tstate->frame.
	 */
#if PY_VERSION_HEX >= 0x030d0000
	o->tstate_current_frame = OFF(PyThreadState, current_frame);
#elif PY_VERSION_HEX >= 0x030b0000
	o->tstate_cframe = OFF(PyThreadState, cframe);
	o->cframe_current_frame = OFF(_PyCFrame, current_frame);
	o->cframe_previous = OFF(_PyCFrame, previous);
#else
	o->tstate_frame = OFF(PyThreadState, frame);
#endif
}

static void fill_frame(struct py_offsets *o)
{
#if PY_VERSION_HEX >= 0x030b0000
	o->frame_previous = OFF(_PyInterpreterFrame, previous);
	o->frame_owner = OFF(_PyInterpreterFrame, owner);
	o->frame_size = SIZE(_PyInterpreterFrame);
#if PY_VERSION_HEX >= 0x030d0000
	o->frame_code = OFF(_PyInterpreterFrame, f_executable);
	o->frame_instr = OFF(_PyInterpreterFrame, instr_ptr);
#else
	o->frame_code = OFF(_PyInterpreterFrame, f_code);
	o->frame_instr = OFF(_PyInterpreterFrame, prev_instr);
#endif
#if PY_VERSION_HEX < 0x030c0000
	/* 3.12 replaced is_entry with FRAME_OWNED_BY_CSTACK shim frames. */
	o->frame_is_entry = OFF(_PyInterpreterFrame, is_entry);
#endif
#else
	o->frame_code = OFF(PyFrameObject, f_code);
	o->frame_previous = OFF(PyFrameObject, f_back);
	o->frame_instr = OFF(PyFrameObject, f_lasti);
	o->frame_size = SIZE(PyFrameObject);
#endif
}

static void fill_code(struct py_offsets *o)
{
	o->code_argcount = OFF(PyCodeObject, co_argcount);
	o->code_flags = OFF(PyCodeObject, co_flags);
	o->code_firstlineno = OFF(PyCodeObject, co_firstlineno);
	o->code_filename = OFF(PyCodeObject, co_filename);
	o->code_name = OFF(PyCodeObject, co_name);
#if PY_VERSION_HEX >= 0x030b0000
	o->code_qualname = OFF(PyCodeObject, co_qualname);
	o->code_code_adaptive = OFF(PyCodeObject, co_code_adaptive);
#else
	o->code_code = OFF(PyCodeObject, co_code);
#endif
#if PY_VERSION_HEX >= 0x030a0000
	o->code_linetable = OFF(PyCodeObject, co_linetable);
#else
	o->code_linetable = OFF(PyCodeObject, co_lnotab);
#endif
}

/* The 32 bits of PyASCIIObject.state as they sit in memory. */
static uint32_t unicode_state_word(const PyASCIIObject *a)
{
	uint32_t word;

	_Static_assert(sizeof(a->state) == sizeof(word), "PyASCIIObject.state is not 32 bits");
	memcpy(&word, &a->state, sizeof(word));
	return word;
}

/*
 * The bit masks of the state bitfields, found by setting every bit of one
 * field in a zeroed object and reading the word back, so that the compiler's
 * bitfield layout decides, not an assumption.  Decrementing a zero unsigned
 * bitfield sets all of its bits, whatever its width.
 */
static void fill_unicode(struct py_offsets *o)
{
	PyASCIIObject a;

	o->unicode_length = OFF(PyASCIIObject, length);
	o->unicode_state = OFF(PyASCIIObject, state);
	o->unicode_ascii_size = SIZE(PyASCIIObject);
	o->unicode_compact_size = SIZE(PyCompactUnicodeObject);

	memset(&a, 0, sizeof(a));
	a.state.kind--;
	o->unicode_kind_mask = unicode_state_word(&a);

	memset(&a, 0, sizeof(a));
	a.state.compact--;
	o->unicode_compact_mask = unicode_state_word(&a);

	memset(&a, 0, sizeof(a));
	a.state.ascii--;
	o->unicode_ascii_mask = unicode_state_word(&a);
}

static void fill_objects(struct py_offsets *o)
{
	o->object_type = OFF(PyObject, ob_type);
	o->varobject_size = OFF(PyVarObject, ob_size);
	o->type_basicsize = OFF(PyTypeObject, tp_basicsize);
	o->type_name = OFF(PyTypeObject, tp_name);
	o->type_dealloc = OFF(PyTypeObject, tp_dealloc);
	o->bytes_sval = OFF(PyBytesObject, ob_sval);
	fill_unicode(o);
}

/* PEP 768 (3.14): what sys.remote_exec writes into a thread state. */
static void fill_remote_exec(struct py_offsets *o)
{
#if PY_VERSION_HEX >= 0x030e0000
	o->interp_threads_main = OFF(PyInterpreterState, threads.main);
	o->interp_remote_debug = OFF(PyInterpreterState, config.remote_debug);
	o->tstate_eval_breaker = OFF(PyThreadState, eval_breaker);
	o->tstate_remote_support = OFF(PyThreadState, remote_debugger_support);
	o->remote_pending_call = OFF(_PyRemoteDebuggerSupport, debugger_pending_call);
	o->remote_script_path = OFF(_PyRemoteDebuggerSupport, debugger_script_path);
	o->remote_script_path_size = off16(_Py_MAX_SCRIPT_PATH_SIZE, "_Py_MAX_SCRIPT_PATH_SIZE");
	o->dbg_interp_threads_main = OFF(_Py_DebugOffsets, interpreter_state.threads_main);
	o->dbg_interp_remote_debug =
		OFF(_Py_DebugOffsets, debugger_support.remote_debugging_enabled);
	o->dbg_tstate_eval_breaker = OFF(_Py_DebugOffsets, debugger_support.eval_breaker);
	o->dbg_tstate_remote_support =
		OFF(_Py_DebugOffsets, debugger_support.remote_debugger_support);
	o->dbg_remote_pending_call = OFF(_Py_DebugOffsets, debugger_support.debugger_pending_call);
	o->dbg_remote_script_path = OFF(_Py_DebugOffsets, debugger_support.debugger_script_path);
	o->dbg_remote_script_path_size =
		OFF(_Py_DebugOffsets, debugger_support.debugger_script_path_size);
	o->eval_please_stop = _PY_EVAL_PLEASE_STOP_BIT;
#else
	o->eval_please_stop = 0;
#endif
}

/* 3.9-3.13: the queue Py_AddPendingCall fills (target/pending_call.c). */
static void fill_pending_calls(struct py_offsets *o)
{
#if PY_VERSION_HEX < 0x030e0000
	struct _pending_calls q;

	o->interp_pending = OFF(PyInterpreterState, ceval.pending);
	o->pending_first = OFF(struct _pending_calls, first);
	o->pending_calls = OFF(struct _pending_calls, calls);
	o->pending_call_size = off16(sizeof(q.calls[0]), "sizeof(_pending_calls.calls[0])");
	o->pending_call_func = off16(offsetof(struct _pending_calls, calls[0].func) -
					     offsetof(struct _pending_calls, calls[0]),
				     "_pending_calls.calls[0].func");
	o->pending_call_arg = off16(offsetof(struct _pending_calls, calls[0].arg) -
					    offsetof(struct _pending_calls, calls[0]),
				    "_pending_calls.calls[0].arg");
	o->pending_ncalls = off16(sizeof(q.calls) / sizeof(q.calls[0]), "the ring's size");
#if PY_VERSION_HEX >= 0x030d0000
	o->pending_last = OFF(struct _pending_calls, next);
	o->pending_npending = OFF(struct _pending_calls, npending);
	o->pending_max = OFF(struct _pending_calls, max);
	o->pending_handling = OFF(struct _pending_calls, handling_thread);
	o->pending_mutex = OFF(struct _pending_calls, mutex);
	o->pending_call_flags = off16(offsetof(struct _pending_calls, calls[0].flags) -
					      offsetof(struct _pending_calls, calls[0]),
				      "_pending_calls.calls[0].flags");
	o->tstate_eval_breaker = OFF(PyThreadState, eval_breaker);
	o->eval_calls_to_do = _PY_CALLS_TO_DO_BIT;
#else
	o->pending_last = OFF(struct _pending_calls, last);
	o->pending_calls_to_do = OFF(struct _pending_calls, calls_to_do);
	o->interp_eval_breaker = OFF(PyInterpreterState, ceval.eval_breaker);
	o->eval_calls_to_do = 0;
#if PY_VERSION_HEX >= 0x030c0000
	o->pending_busy = OFF(struct _pending_calls, busy);
#endif
#endif
#else
	o->eval_calls_to_do = 0;
#endif
}

static void fill_debug_offsets(struct py_offsets *o)
{
#if PY_VERSION_HEX >= 0x030d0000
	/* Where each value sits inside the _Py_DebugOffsets at _PyRuntime+0. */
	o->dbg_version = OFF(_Py_DebugOffsets, version);
	o->dbg_free_threaded = OFF(_Py_DebugOffsets, free_threaded);
	o->dbg_runtime_interpreters_head = OFF(_Py_DebugOffsets, runtime_state.interpreters_head);
	o->dbg_interp_threads_head = OFF(_Py_DebugOffsets, interpreter_state.threads_head);
	o->dbg_tstate_current_frame = OFF(_Py_DebugOffsets, thread_state.current_frame);
	o->dbg_tstate_thread_id = OFF(_Py_DebugOffsets, thread_state.thread_id);
	o->dbg_tstate_next = OFF(_Py_DebugOffsets, thread_state.next);
	o->dbg_frame_previous = OFF(_Py_DebugOffsets, interpreter_frame.previous);
	o->dbg_frame_executable = OFF(_Py_DebugOffsets, interpreter_frame.executable);
	o->dbg_frame_instr_ptr = OFF(_Py_DebugOffsets, interpreter_frame.instr_ptr);
	o->dbg_frame_owner = OFF(_Py_DebugOffsets, interpreter_frame.owner);
	o->dbg_code_filename = OFF(_Py_DebugOffsets, code_object.filename);
	o->dbg_code_name = OFF(_Py_DebugOffsets, code_object.name);
	o->dbg_code_qualname = OFF(_Py_DebugOffsets, code_object.qualname);
	o->dbg_code_linetable = OFF(_Py_DebugOffsets, code_object.linetable);
	o->dbg_code_firstlineno = OFF(_Py_DebugOffsets, code_object.firstlineno);
	o->dbg_code_code_adaptive = OFF(_Py_DebugOffsets, code_object.co_code_adaptive);
	o->dbg_tstate_interp = OFF(_Py_DebugOffsets, thread_state.interp);
	o->dbg_tstate_native_thread_id = OFF(_Py_DebugOffsets, thread_state.native_thread_id);
	o->dbg_tstate_datastack_chunk = OFF(_Py_DebugOffsets, thread_state.datastack_chunk);
	o->dbg_interp_ceval_gil = OFF(_Py_DebugOffsets, interpreter_state.ceval_gil);
	o->dbg_frame_size = OFF(_Py_DebugOffsets, interpreter_frame.size);
	o->dbg_frame_localsplus = OFF(_Py_DebugOffsets, interpreter_frame.localsplus);
	o->dbg_code_argcount = OFF(_Py_DebugOffsets, code_object.argcount);
	o->dbg_object_type = OFF(_Py_DebugOffsets, pyobject.ob_type);
	o->dbg_type_name = OFF(_Py_DebugOffsets, type_object.tp_name);
	o->dbg_bytes_size = OFF(_Py_DebugOffsets, bytes_object.ob_size);
	o->dbg_bytes_sval = OFF(_Py_DebugOffsets, bytes_object.ob_sval);
	o->dbg_unicode_state = OFF(_Py_DebugOffsets, unicode_object.state);
	o->dbg_unicode_length = OFF(_Py_DebugOffsets, unicode_object.length);
	o->dbg_unicode_ascii_size = OFF(_Py_DebugOffsets, unicode_object.asciiobject_size);
#else
	(void)o;
#endif
}

static const struct {
	const char *name;
	long value;
} call_ops[] = {
#define CALL_OP(name) { #name, name },
#include PYOFF_CALL_OPS
#undef CALL_OP
};

#define N_CALL_OPS (sizeof(call_ops) / sizeof(call_ops[0]))

/* The call-family set; fails on a name that is not a real (< 256) opcode. */
static int fill_call_ops(struct py_offsets *o)
{
	size_t i;

	memset(o->call_ops, 0, sizeof(o->call_ops));
	for (i = 0; i < N_CALL_OPS; i++) {
		long v = call_ops[i].value;

		if (v <= 0 || v > 255) {
			fprintf(stderr, "pyoffsets: %s = %ld is not an opcode of the bytecode\n",
				call_ops[i].name, v);
			return -EINVAL;
		}
		o->call_ops[v / 64] |= 1ULL << (v % 64);
	}
	return 0;
}

/* GIL wait: the GIL's address (in _PyRuntime before 3.12, behind the main
 * interpreter's ceval.gil pointer since) and where its locks lie in it. */
static void fill_gil(struct py_offsets *o)
{
	o->runtime_interp_main = OFF(_PyRuntimeState, interpreters.main);
	/* The collector runs while its flag is set (a CPU sample then is
	 * garbage collection's). */
	o->interp_gc_collecting = OFF(PyInterpreterState, gc.collecting);
#if PY_VERSION_HEX >= 0x030c0000
	o->interp_ceval_gil = OFF(PyInterpreterState, ceval.gil);
#else
	o->runtime_ceval_gil = OFF(_PyRuntimeState, ceval.gil);
#endif
	o->gil_locked = OFF(struct _gil_runtime_state, locked);
	o->gil_last_holder = OFF(struct _gil_runtime_state, last_holder);
	o->gil_locks = OFF(struct _gil_runtime_state, cond);
	o->gil_size = SIZE(struct _gil_runtime_state);
#ifdef Py_GIL_DISABLED
	o->gil_enabled = OFF(struct _gil_runtime_state, enabled);
#endif
}

/* Frames of suspended coroutines, and how they say they are suspended. */
static void fill_async_frames(struct py_offsets *o)
{
#if PY_VERSION_HEX >= 0x030b0000
	o->frame_globals = OFF(_PyInterpreterFrame, f_globals);
	o->frame_localsplus = OFF(_PyInterpreterFrame, localsplus);
#if PY_VERSION_HEX >= 0x030e0000
	/* 3.14 keeps a pointer past the top instead, to tagged references;
	 * its C tasks are in per-thread lists, not in asyncio's task sets. */
	o->frame_stackpointer = OFF(_PyInterpreterFrame, stackpointer);
	o->tstate_asyncio_tasks = OFF(_PyThreadStateImpl, asyncio_tasks_head);
	o->interp_asyncio_tasks = OFF(PyInterpreterState, asyncio_tasks_head);
#else
	o->frame_stacktop = OFF(_PyInterpreterFrame, stacktop);
#endif
	o->gen_iframe = OFF(PyGenObject, gi_iframe);
	o->gen_frame_state = OFF(PyGenObject, gi_frame_state);
#else
	o->frame_globals = OFF(PyFrameObject, f_globals);
	o->frame_localsplus = OFF(PyFrameObject, f_localsplus);
	o->gen_frame = OFF(PyGenObject, gi_frame);
#if PY_VERSION_HEX >= 0x030a0000
	o->frame_stacktop = OFF(PyFrameObject, f_stackdepth);
	o->frame_valuestack = OFF(PyFrameObject, f_valuestack);
	o->frame_state = OFF(PyFrameObject, f_state);
#else
	o->frame_stacktop = OFF(PyFrameObject, f_stacktop);
	o->gen_running = OFF(PyGenObject, gi_running);
#endif
#endif
#if PY_VERSION_HEX >= 0x030a0000
	o->state_created = FRAME_CREATED;
	o->state_suspended = FRAME_SUSPENDED;
	o->state_executing = FRAME_EXECUTING;
#if PY_VERSION_HEX >= 0x030d0000
	o->state_suspended_yf = FRAME_SUSPENDED_YIELD_FROM;
#else
	o->state_suspended_yf = FRAME_SUSPENDED;
#endif
#else
	o->state_created = o->state_suspended = o->state_suspended_yf = o->state_executing = 0;
#endif
}

#if PY_VERSION_HEX >= 0x030b0000
/* Where the interpreter's own inline functions put an object's managed dict,
 * measured on a stand-in object whose type has the flag. */
static PyTypeObject stand_in_type;

static int32_t from_obj(const void *p, const PyObject *obj)
{
	return (int32_t)((const char *)p - (const char *)obj);
}
#endif

static void fill_dicts(struct py_offsets *o)
{
	o->type_flags = OFF(PyTypeObject, tp_flags);
	o->type_dictoffset = OFF(PyTypeObject, tp_dictoffset);
	o->heaptype_cached_keys = OFF(PyHeapTypeObject, ht_cached_keys);
	o->type_base = OFF(PyTypeObject, tp_base);
	o->tpflags_heaptype = Py_TPFLAGS_HEAPTYPE;
	o->dict_keys = OFF(PyDictObject, ma_keys);
	o->dict_values = OFF(PyDictObject, ma_values);
	o->tpflags_managed_dict = 0;
	o->tpflags_inline_values = 0;
	o->managed_values_off = 0;
	o->managed_dict_off = 0;
#if PY_VERSION_HEX >= 0x030b0000
	{
		_Alignas(16) char mem[256];
		PyObject *obj = (PyObject *)(mem + 128);

		stand_in_type.tp_flags = Py_TPFLAGS_MANAGED_DICT;
		stand_in_type.tp_basicsize = sizeof(PyObject);
		obj->ob_type = &stand_in_type;
		o->tpflags_managed_dict = Py_TPFLAGS_MANAGED_DICT;
#if PY_VERSION_HEX >= 0x030d0000
		o->tpflags_inline_values = Py_TPFLAGS_INLINE_VALUES;
		o->managed_dict_off = from_obj(_PyObject_ManagedDictPointer(obj), obj);
#elif PY_VERSION_HEX >= 0x030c0000
		o->managed_dict_off = from_obj(_PyObject_DictOrValuesPointer(obj), obj);
		o->managed_values_off = o->managed_dict_off;
#else
		o->managed_dict_off = from_obj(_PyObject_ManagedDictPointer(obj), obj);
		o->managed_values_off = from_obj(_PyObject_ValuesPointer(obj), obj);
#endif
	}
	o->keys_log2_size = OFF(PyDictKeysObject, dk_log2_size);
	o->keys_log2_index_bytes = OFF(PyDictKeysObject, dk_log2_index_bytes);
	o->keys_kind = OFF(PyDictKeysObject, dk_kind);
	o->keys_nentries = OFF(PyDictKeysObject, dk_nentries);
	o->keys_indices = OFF(PyDictKeysObject, dk_indices);
	o->dict_entry_size = SIZE(PyDictKeyEntry);
	o->dict_entry_key = OFF(PyDictKeyEntry, me_key);
	o->dict_entry_value = OFF(PyDictKeyEntry, me_value);
	o->dict_uentry_size = SIZE(PyDictUnicodeEntry);
	o->dict_uentry_key = OFF(PyDictUnicodeEntry, me_key);
	o->dict_uentry_value = OFF(PyDictUnicodeEntry, me_value);
	o->values_values = OFF(PyDictValues, values);
#if PY_VERSION_HEX >= 0x030d0000
	o->values_valid = OFF(PyDictValues, valid);
#endif
	o->keys_kind_general = DICT_KEYS_GENERAL;
#endif
}

static void fill_containers(struct py_offsets *o)
{
	o->set_mask = OFF(PySetObject, mask);
	o->set_table = OFF(PySetObject, table);
	o->setentry_size = SIZE(setentry);
	o->setentry_key = OFF(setentry, key);
	o->weakref_object = OFF(PyWeakReference, wr_object);
#if PY_VERSION_HEX >= 0x030c0000
	o->long_size = OFF(PyLongObject, long_value.lv_tag);
	o->long_digits = OFF(PyLongObject, long_value.ob_digit);
#else
	o->long_size = OFF(PyVarObject, ob_size);
	o->long_digits = OFF(PyLongObject, ob_digit);
#endif
	o->long_shift = PyLong_SHIFT;
}

/* Every field of struct py_offsets, in declaration order. */
struct field {
	const char *name;
	size_t off;
	size_t size;
	size_t align;
	bool hex;
	bool sgn;
};

#define FIELD(f, h, s)                                                                   \
	{                                                                                \
#f, offsetof(struct py_offsets, f), sizeof(((struct py_offsets *)0)->f), \
			__alignof__(((struct py_offsets *)0)->f), h, s                   \
	}
#define DEC(f) FIELD(f, false, false)
#define HEX(f) FIELD(f, true, false)
#define SDEC(f) FIELD(f, false, true)

static const struct field fields[] = {
	HEX(version_hex),
	DEC(minor),
	DEC(runtime_interpreters_head),
	DEC(runtime_main_thread),
	DEC(runtime_autotss_key),
	DEC(runtime_tstate_current),
	DEC(interp_threads_head),
	DEC(tstate_next),
	DEC(tstate_interp),
	DEC(tstate_frame),
	DEC(tstate_cframe),
	DEC(tstate_current_frame),
	DEC(tstate_thread_id),
	DEC(tstate_native_thread_id),
	DEC(tstate_datastack_chunk),
	DEC(tstate_datastack_top),
	DEC(stackchunk_data),
	DEC(cframe_current_frame),
	DEC(cframe_previous),
	DEC(frame_code),
	DEC(frame_previous),
	DEC(frame_instr),
	DEC(frame_owner),
	DEC(frame_is_entry),
	DEC(frame_size),
	DEC(code_argcount),
	DEC(code_flags),
	DEC(code_firstlineno),
	DEC(code_filename),
	DEC(code_name),
	DEC(code_qualname),
	DEC(code_linetable),
	DEC(code_code_adaptive),
	DEC(code_code),
	DEC(object_type),
	DEC(varobject_size),
	DEC(type_basicsize),
	DEC(type_name),
	DEC(type_dealloc),
	DEC(bytes_sval),
	DEC(unicode_length),
	DEC(unicode_state),
	DEC(unicode_ascii_size),
	DEC(unicode_compact_size),
	HEX(unicode_kind_mask),
	HEX(unicode_compact_mask),
	HEX(unicode_ascii_mask),
	DEC(dbg_version),
	DEC(dbg_free_threaded),
	DEC(dbg_runtime_interpreters_head),
	DEC(dbg_interp_threads_head),
	DEC(dbg_tstate_current_frame),
	DEC(dbg_tstate_thread_id),
	DEC(dbg_tstate_next),
	DEC(dbg_frame_previous),
	DEC(dbg_frame_executable),
	DEC(dbg_frame_instr_ptr),
	DEC(dbg_frame_owner),
	DEC(dbg_code_filename),
	DEC(dbg_code_name),
	DEC(dbg_code_qualname),
	DEC(dbg_code_linetable),
	DEC(dbg_code_firstlineno),
	DEC(dbg_code_code_adaptive),
	DEC(dbg_tstate_interp),
	DEC(dbg_tstate_native_thread_id),
	DEC(dbg_tstate_datastack_chunk),
	DEC(dbg_interp_ceval_gil),
	DEC(dbg_frame_size),
	DEC(dbg_frame_localsplus),
	DEC(dbg_code_argcount),
	DEC(dbg_object_type),
	DEC(dbg_type_name),
	DEC(dbg_bytes_size),
	DEC(dbg_bytes_sval),
	DEC(dbg_unicode_state),
	DEC(dbg_unicode_length),
	DEC(dbg_unicode_ascii_size),
	HEX(call_ops),
	/* GIL wait */
	DEC(runtime_ceval_gil),
	DEC(runtime_interp_main),
	DEC(interp_ceval_gil),
	DEC(gil_locked),
	DEC(gil_last_holder),
	DEC(gil_locks),
	DEC(gil_size),
	DEC(gil_enabled),
	DEC(interp_gc_collecting),
	/* async */
	DEC(frame_globals),
	DEC(frame_localsplus),
	DEC(frame_stacktop),
	DEC(frame_valuestack),
	DEC(frame_state),
	DEC(gen_frame),
	DEC(gen_iframe),
	DEC(gen_frame_state),
	DEC(gen_running),
	DEC(frame_stackpointer),
	DEC(tstate_asyncio_tasks),
	DEC(interp_asyncio_tasks),
	SDEC(state_created),
	SDEC(state_suspended),
	SDEC(state_suspended_yf),
	SDEC(state_executing),
	DEC(type_flags),
	DEC(type_dictoffset),
	DEC(heaptype_cached_keys),
	DEC(type_base),
	HEX(tpflags_heaptype),
	HEX(tpflags_managed_dict),
	HEX(tpflags_inline_values),
	SDEC(managed_values_off),
	SDEC(managed_dict_off),
	DEC(dict_keys),
	DEC(dict_values),
	DEC(keys_log2_size),
	DEC(keys_log2_index_bytes),
	DEC(keys_kind),
	DEC(keys_nentries),
	DEC(keys_indices),
	DEC(dict_entry_size),
	DEC(dict_entry_key),
	DEC(dict_entry_value),
	DEC(dict_uentry_size),
	DEC(dict_uentry_key),
	DEC(dict_uentry_value),
	DEC(values_values),
	DEC(values_valid),
	DEC(keys_kind_general),
	DEC(set_mask),
	DEC(set_table),
	DEC(setentry_size),
	DEC(setentry_key),
	DEC(weakref_object),
	DEC(long_size),
	DEC(long_digits),
	DEC(long_shift),
	DEC(free_threaded),
	/* remote execution */
	DEC(interp_threads_main),
	DEC(interp_remote_debug),
	DEC(tstate_eval_breaker),
	DEC(tstate_remote_support),
	DEC(remote_pending_call),
	DEC(remote_script_path),
	DEC(remote_script_path_size),
	DEC(dbg_interp_threads_main),
	DEC(dbg_interp_remote_debug),
	DEC(dbg_tstate_eval_breaker),
	DEC(dbg_tstate_remote_support),
	DEC(dbg_remote_pending_call),
	DEC(dbg_remote_script_path),
	DEC(dbg_remote_script_path_size),
	HEX(eval_please_stop),
	/* pending calls */
	DEC(interp_pending),
	DEC(pending_first),
	DEC(pending_last),
	DEC(pending_calls_to_do),
	DEC(pending_busy),
	DEC(pending_npending),
	DEC(pending_max),
	DEC(pending_handling),
	DEC(pending_mutex),
	DEC(pending_calls),
	DEC(pending_call_size),
	DEC(pending_call_func),
	DEC(pending_call_arg),
	DEC(pending_call_flags),
	DEC(pending_ncalls),
	DEC(interp_eval_breaker),
	HEX(eval_calls_to_do),
};

#define N_FIELDS (sizeof(fields) / sizeof(fields[0]))

static size_t align_up(size_t n, size_t a)
{
	return (n + a - 1) / a * a;
}

/*
 * The list above must name every member of struct py_offsets: each entry
 * starts where the previous one ended (rounded up to its own alignment) and
 * the last one ends the struct.  A member added to pyoffsets.h but not here
 * leaves a hole, and the tool refuses to print a table with a silent zero.
 */
static int check_field_list(void)
{
	size_t end = 0;
	size_t i;

	for (i = 0; i < N_FIELDS; i++) {
		if (fields[i].off != align_up(end, fields[i].align)) {
			fprintf(stderr,
				"pyoffsets: a member of struct py_offsets before %s is missing "
				"from the field list in %s\n",
				fields[i].name, __FILE__);
			return -EINVAL;
		}
		end = fields[i].off + fields[i].size;
	}
	if (align_up(end, _Alignof(struct py_offsets)) != sizeof(struct py_offsets)) {
		fprintf(stderr,
			"pyoffsets: members after %s are missing from the field list in %s\n",
			fields[N_FIELDS - 1].name, __FILE__);
		return -EINVAL;
	}
	return 0;
}

static void print_field(const struct py_offsets *o, const struct field *f)
{
	const char *p = (const char *)o + f->off;
	uint32_t v32;
	uint16_t v16;

	if (f->size == 4 * sizeof(uint64_t)) {
		uint64_t w[4];

		memcpy(w, p, sizeof(w));
		printf("\t.%s = { 0x%016llx, 0x%016llx, 0x%016llx, 0x%016llx },\n", f->name,
		       (unsigned long long)w[0], (unsigned long long)w[1], (unsigned long long)w[2],
		       (unsigned long long)w[3]);
		return;
	}
	if (f->size == sizeof(v32)) {
		memcpy(&v32, p, sizeof(v32));
		if (f->sgn) {
			printf("\t.%s = %d,\n", f->name, (int)(int32_t)v32);
			return;
		}
		printf("\t.%s = %s%x,\n", f->name, f->hex ? "0x" : "", v32);
		return;
	}
	memcpy(&v16, p, sizeof(v16));
	if (v16 == PYOFF_NONE)
		printf("\t.%s = PYOFF_NONE,\n", f->name);
	else
		printf("\t.%s = %u,\n", f->name, v16);
}

/* The free-threaded build's table is 3.Nt's. */
#ifdef Py_GIL_DISABLED
#define BUILD_SUFFIX "t"
#define BUILD_GUARD "T"
#else
#define BUILD_SUFFIX ""
#define BUILD_GUARD ""
#endif

static void print_header(const struct py_offsets *o, const char *headers)
{
	size_t i;

	printf("/* DO NOT EDIT - regenerate with make pyoffsets */\n");
	printf("/* SPDX-License-Identifier: BSD-2-Clause */\n");
	printf("/*\n");
	printf(" * CPython %s%s (PY_VERSION_HEX 0x%08x), x86_64%s\n", PY_VERSION, BUILD_SUFFIX,
	       (unsigned int)PY_VERSION_HEX, o->free_threaded ? ", free-threaded" : "");
	printf(" * headers: %s\n", headers);
	printf(" * generator: tools/pyoffsets/pyoffsets.c\n");
	printf(" *\n");
	printf(" * call_ops, from the opcode headers:\n");
	for (i = 0; i < N_CALL_OPS; i++)
		printf(" *   %s = %ld\n", call_ops[i].name, call_ops[i].value);
	printf(" */\n");
	printf("#ifndef PYOFFSETS_CPYTHON_3_%d%s_H\n", PY_MINOR_VERSION, BUILD_GUARD);
	printf("#define PYOFFSETS_CPYTHON_3_%d%s_H\n\n", PY_MINOR_VERSION, BUILD_GUARD);
	printf("#include \"pyoffsets.h\"\n\n");
	printf("static const struct py_offsets py_offsets_3_%d%s = {\n", PY_MINOR_VERSION,
	       BUILD_SUFFIX);
	for (i = 0; i < N_FIELDS; i++)
		print_field(o, &fields[i]);
	printf("};\n\n");
	printf("#endif /* PYOFFSETS_CPYTHON_3_%d%s_H */\n", PY_MINOR_VERSION, BUILD_GUARD);
}

int main(int argc, char **argv)
{
	struct py_offsets o;

	if (argc != 2) {
		fprintf(stderr, "usage: %s HEADERS-LABEL > cpython-3.%d.h\n", argv[0],
			PY_MINOR_VERSION);
		return 2;
	}
	if (check_field_list())
		return 1;

	/* All bytes 0xff: every 16-bit field a version lacks reads PYOFF_NONE. */
	memset(&o, 0xff, sizeof(o));
	o.version_hex = PY_VERSION_HEX;
	o.minor = PY_MINOR_VERSION;
#ifdef Py_GIL_DISABLED
	o.free_threaded = 1;
#else
	o.free_threaded = 0;
#endif
	fill_runtime(&o);
	fill_thread_state(&o);
	fill_frame(&o);
	fill_code(&o);
	fill_objects(&o);
	fill_debug_offsets(&o);
	fill_remote_exec(&o);
	fill_pending_calls(&o);
	if (fill_call_ops(&o))
		return 1;
	fill_gil(&o);
	fill_async_frames(&o);
	fill_dicts(&o);
	fill_containers(&o);
	if (n_too_big)
		return 1;

	print_header(&o, argv[1]);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "pyoffsets: failed to write the table: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}
