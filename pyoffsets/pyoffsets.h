/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The shape of one CPython minor version's layout: byte offsets of the fields
 * the profiler reads, on x86_64.  The values live in the generated
 * pyoffsets/cpython-3.N.h files (3.Nt: the free-threaded build) (tools/pyoffsets, `make pyoffsets`); nothing
 * in the code hard-codes an offset.  A field a version does not have is
 * PYOFF_NONE.
 */
#ifndef PYOFFSETS_H
#define PYOFFSETS_H

#include <stdint.h>

#define PYOFF_NONE 0xffff

struct py_offsets {
	uint32_t version_hex; /* PY_VERSION_HEX of the headers the table came from */
	uint16_t minor;	      /* 3.minor */

	/* _PyRuntimeState */
	uint16_t runtime_interpreters_head; /* interpreters.head */
	uint16_t runtime_main_thread;	    /* main_thread (pthread_t of the main thread) */
	uint16_t
		runtime_autotss_key; /* gilstate.autoTSSkey (<=3.11), autoTSSkey (3.12+): Py_tss_t */
	uint16_t runtime_tstate_current; /* gilstate.tstate_current (<=3.11), else NONE */

	/* PyInterpreterState */
	uint16_t interp_threads_head; /* tstate_head (<=3.10), threads.head (3.11+) */

	/* PyThreadState */
	uint16_t tstate_next;
	uint16_t tstate_interp;
	uint16_t tstate_frame;		  /* frame (<=3.10), else NONE */
	uint16_t tstate_cframe;		  /* cframe (3.11, 3.12), else NONE */
	uint16_t tstate_current_frame;	  /* current_frame (3.13+), else NONE */
	uint16_t tstate_thread_id;	  /* thread_id: pthread_self() */
	uint16_t tstate_native_thread_id; /* native_thread_id (3.11+), else NONE */
	uint16_t tstate_datastack_chunk;  /* datastack_chunk (3.11+), else NONE */
	uint16_t tstate_datastack_top;	  /* datastack_top (3.11+), else NONE */
	uint16_t stackchunk_data;	  /* _PyStackChunk.data (3.11+), else NONE */

	/* _PyCFrame (3.11, 3.12) */
	uint16_t cframe_current_frame;
	uint16_t cframe_previous; /* the caller's _PyCFrame */

	/* PyFrameObject (<=3.10) or _PyInterpreterFrame (3.11+) */
	uint16_t frame_code;	 /* f_code (<=3.12), f_executable (3.13+) */
	uint16_t frame_previous; /* f_back (<=3.10), previous (3.11+) */
	uint16_t
		frame_instr; /* f_lasti (<=3.10, int), prev_instr (3.11, 3.12), instr_ptr (3.13+) */
	uint16_t frame_owner;	 /* owner (3.11+, char), else NONE */
	uint16_t frame_is_entry; /* is_entry (3.11 only), else NONE */
	uint16_t frame_size;	 /* sizeof the frame struct */

	/* PyCodeObject */
	uint16_t code_argcount;
	uint16_t code_flags;
	uint16_t code_firstlineno;
	uint16_t code_filename;
	uint16_t code_name;
	uint16_t code_qualname;	     /* 3.11+, else NONE */
	uint16_t code_linetable;     /* co_lnotab (3.9) or co_linetable (3.10+) */
	uint16_t code_code_adaptive; /* co_code_adaptive (3.11+), else NONE */
	uint16_t code_code;	     /* co_code bytes object (<=3.10), else NONE */

	/* PyObject / PyVarObject / PyTypeObject */
	uint16_t object_type;	 /* ob_type */
	uint16_t varobject_size; /* ob_size */
	uint16_t type_basicsize; /* tp_basicsize */
	uint16_t type_name;	 /* tp_name */
	uint16_t type_dealloc;	 /* tp_dealloc */

	/* PyBytesObject */
	uint16_t bytes_sval; /* ob_sval */

	/* PyUnicodeObject */
	uint16_t unicode_length;
	uint16_t unicode_state;
	uint16_t unicode_ascii_size; /* sizeof(PyASCIIObject): data of compact ASCII strings */
	uint16_t
		unicode_compact_size; /* sizeof(PyCompactUnicodeObject): data of other compact strings */
	uint32_t unicode_kind_mask; /* mask of the `kind` bits in state (shift = ctz) */
	uint32_t unicode_compact_mask;
	uint32_t unicode_ascii_mask;

	/* _Py_DebugOffsets (3.13+): where, inside the struct at _PyRuntime+0, each
	 * value the interpreter publishes about its own layout lives (python.c
	 * takes those from the process); NONE before 3.13. */
	uint16_t dbg_version;
	uint16_t dbg_free_threaded;
	uint16_t dbg_runtime_interpreters_head;
	uint16_t dbg_interp_threads_head;
	uint16_t dbg_tstate_current_frame;
	uint16_t dbg_tstate_thread_id;
	uint16_t dbg_tstate_next;
	uint16_t dbg_frame_previous;
	uint16_t dbg_frame_executable;
	uint16_t dbg_frame_instr_ptr;
	uint16_t dbg_frame_owner;
	uint16_t dbg_code_filename;
	uint16_t dbg_code_name;
	uint16_t dbg_code_qualname;
	uint16_t dbg_code_linetable;
	uint16_t dbg_code_firstlineno;
	uint16_t dbg_code_code_adaptive;
	uint16_t dbg_tstate_interp;
	uint16_t dbg_tstate_native_thread_id;
	uint16_t dbg_tstate_datastack_chunk;
	uint16_t dbg_interp_ceval_gil;
	uint16_t dbg_frame_size;
	uint16_t dbg_frame_localsplus;
	uint16_t dbg_code_argcount;
	uint16_t dbg_object_type;
	uint16_t dbg_type_name;
	uint16_t dbg_bytes_size;
	uint16_t dbg_bytes_sval;
	uint16_t dbg_unicode_state;
	uint16_t dbg_unicode_length;
	uint16_t dbg_unicode_ascii_size;

	/* Opcodes of the CALL family (bit n of word n / 64 set for opcode n):
	 * every opcode the headers name (INSTRUMENTED_)?(PRE)?CALL*, with its
	 * specialised and instrumented forms, except CALL_INTRINSIC_*.  While
	 * the innermost frame's current instruction is one of them, C code run
	 * from the interpreter is the called function's (native time). */
	uint64_t call_ops[4];
	/* GIL wait: where the GIL's locks are.  A thread that waits for the GIL
	 * blocks in futex on a word of cond or mutex (take_gil) or switch_cond
	 * (drop_gil handing it over), all in [gil + gil_locks, gil + gil_size). */
	uint16_t runtime_ceval_gil;   /* ceval.gil: the GIL itself (<=3.11), else NONE */
	uint16_t runtime_interp_main; /* interpreters.main */
	uint16_t interp_ceval_gil;    /* ceval.gil: pointer to the GIL (3.12+), else NONE */
	uint16_t gil_locked;	      /* _gil_runtime_state.locked (int: -1 before creation) */
	/* _gil_runtime_state.last_holder: the thread state that took the GIL
	 * last (it holds it while locked is set). */
	uint16_t gil_last_holder;
	uint16_t gil_locks; /* _gil_runtime_state.cond: the first lock */
	uint16_t gil_size;  /* sizeof(struct _gil_runtime_state) */
	/* _gil_runtime_state.enabled (int) of a free-threaded build: 0 while
	 * its GIL is off (PYTHON_GIL=1, or an extension that needs it, turns it
	 * on); NONE in a build that always has its GIL. */
	uint16_t gil_enabled;
	/* Garbage collection: the main interpreter's collector is running
	 * while gc.collecting (int) is set. */
	uint16_t interp_gc_collecting;

	/* Reading an event loop's tasks from outside (async attribution). */
	uint16_t frame_globals;	   /* f_globals */
	uint16_t frame_localsplus; /* f_localsplus (<=3.10), localsplus (3.11+) */
	uint16_t frame_stacktop;   /* f_stacktop (3.9, pointer), f_stackdepth (3.10, int),
				    * stacktop (3.11+, int: index into localsplus) */
	uint16_t frame_valuestack; /* f_valuestack (3.10), else NONE */
	uint16_t frame_state;	   /* f_state (3.10, char), else NONE */
	uint16_t gen_frame;	   /* gi_frame (<=3.10), else NONE */
	uint16_t gen_iframe;	   /* gi_iframe: the embedded frame (3.11+), else NONE */
	uint16_t gen_frame_state;  /* gi_frame_state (3.11+, int8), else NONE */
	uint16_t gen_running;	   /* gi_running (3.9, char), else NONE */
	/* 3.14+: stackpointer (a pointer past the top of the value stack, whose
	 * slots are tagged references), and the lists C tasks are linked into
	 * (struct llist_node heads): the creating thread's, in
	 * _PyThreadStateImpl, and the interpreter's, for the tasks of threads
	 * that ended.  NONE before. */
	uint16_t frame_stackpointer;
	uint16_t tstate_asyncio_tasks;
	uint16_t interp_asyncio_tasks;
	/* Frame states (enum _framestate; 3.10 keeps it in the frame, 3.11+ in
	 * the generator); 3.9 has none (all 0).  suspended_yf is 3.13's
	 * FRAME_SUSPENDED_YIELD_FROM, else the same as suspended. */
	int32_t state_created;
	int32_t state_suspended;
	int32_t state_suspended_yf;
	int32_t state_executing;
	/* Types and instance dictionaries */
	uint16_t type_flags;		/* tp_flags */
	uint16_t type_dictoffset;	/* tp_dictoffset */
	uint16_t heaptype_cached_keys;	/* PyHeapTypeObject.ht_cached_keys */
	uint16_t type_base;		/* tp_base */
	uint32_t tpflags_heaptype;	/* Py_TPFLAGS_HEAPTYPE */
	uint32_t tpflags_managed_dict;	/* Py_TPFLAGS_MANAGED_DICT (3.11+), else 0 */
	uint32_t tpflags_inline_values; /* Py_TPFLAGS_INLINE_VALUES (3.13+), else 0 */
	/* Where a managed dict lives, from the object's address (the
	 * interpreter's own inline functions measured on a stand-in object):
	 * 3.11 values pointer and dict pointer; 3.12 one tagged dict-or-values
	 * word (both the same); 3.13 the dict pointer (values inline at
	 * tp_basicsize).  0 where the version has no managed dicts. */
	int32_t managed_values_off;
	int32_t managed_dict_off;
	/* PyDictObject */
	uint16_t dict_keys;   /* ma_keys */
	uint16_t dict_values; /* ma_values */
	/* PyDictKeysObject (3.11+; private before 3.11, measured at run time) */
	uint16_t keys_log2_size;
	uint16_t keys_log2_index_bytes;
	uint16_t keys_kind;
	uint16_t keys_nentries;
	uint16_t keys_indices;
	uint16_t dict_entry_size;  /* sizeof(PyDictKeyEntry) */
	uint16_t dict_entry_key;   /* me_key */
	uint16_t dict_entry_value; /* me_value */
	uint16_t dict_uentry_size; /* sizeof(PyDictUnicodeEntry) */
	uint16_t dict_uentry_key;
	uint16_t dict_uentry_value;
	uint16_t values_values;	    /* PyDictValues.values (3.11+) */
	uint16_t values_valid;	    /* PyDictValues.valid (3.13+), else NONE */
	uint16_t keys_kind_general; /* DICT_KEYS_GENERAL */
	/* PySetObject, setentry */
	uint16_t set_mask;
	uint16_t set_table;
	uint16_t setentry_size;
	uint16_t setentry_key;
	/* PyWeakReference */
	uint16_t weakref_object; /* wr_object */
	/* PyLongObject: ob_size (<=3.11) or long_value.lv_tag (3.12+), digits */
	uint16_t long_size;
	uint16_t long_digits;
	uint16_t long_shift; /* PyLong_SHIFT */
	/* 1: the free-threaded build (--disable-gil, Py_GIL_DISABLED), whose
	 * object header and thread state differ: a table of its own. */
	uint16_t free_threaded;
	/* Running code in a live interpreter (PEP 768, 3.14+; NONE before):
	 * the main thread state (interp.threads.main), whether the interpreter
	 * allows it (interp.config.remote_debug, an int), and where a thread
	 * state takes the request: its eval_breaker (uintptr_t; 3.13 has it
	 * too, for the pending calls below) and its
	 * _PyRemoteDebuggerSupport (debugger_pending_call, an int32, and the
	 * script's path, a char array of remote_script_path_size bytes). */
	uint16_t interp_threads_main;
	uint16_t interp_remote_debug;
	uint16_t tstate_eval_breaker;
	uint16_t tstate_remote_support;
	uint16_t remote_pending_call;
	uint16_t remote_script_path;
	uint16_t remote_script_path_size;
	/* ... and where _Py_DebugOffsets publishes each of them (3.14+). */
	uint16_t dbg_interp_threads_main;
	uint16_t dbg_interp_remote_debug;
	uint16_t dbg_tstate_eval_breaker;
	uint16_t dbg_tstate_remote_support;
	uint16_t dbg_remote_pending_call;
	uint16_t dbg_remote_script_path;
	uint16_t dbg_remote_script_path_size;
	/* The eval_breaker bit that makes the thread look at the request
	 * (_PY_EVAL_PLEASE_STOP_BIT); 0 before 3.14. */
	uint32_t eval_please_stop;

	/* The main interpreter's queue of pending calls (3.9-3.13; NONE from
	 * 3.14, which runs code sent from outside as above), the ring that
	 * Py_AddPendingCall fills and the eval loop empties with the GIL held:
	 * interp.ceval.pending, and in it the ring's ends (next is 3.13's
	 * name for last), its calls[] of pending_ncalls entries of
	 * pending_call_size bytes (func, arg and, 3.13, flags), and what says
	 * it is in use: calls_to_do (3.9-3.12, an int), busy (3.12), and
	 * 3.13's npending, max, handling_thread and one-byte PyMutex. */
	uint16_t interp_pending;
	uint16_t pending_first;
	uint16_t pending_last;
	uint16_t pending_calls_to_do;
	uint16_t pending_busy;
	uint16_t pending_npending;
	uint16_t pending_max;
	uint16_t pending_handling;
	uint16_t pending_mutex;
	uint16_t pending_calls;
	uint16_t pending_call_size;
	uint16_t pending_call_func;
	uint16_t pending_call_arg;
	uint16_t pending_call_flags;
	uint16_t pending_ncalls;
	/* What makes the eval loop look at the queue: the interpreter's
	 * eval_breaker int (3.9-3.12; NONE after: each thread has its own,
	 * tstate_eval_breaker, and the bit _PY_CALLS_TO_DO_BIT, 0 before
	 * 3.13). */
	uint16_t interp_eval_breaker;
	uint32_t eval_calls_to_do;
};

#endif /* PYOFFSETS_H */
