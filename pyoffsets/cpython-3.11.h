/* DO NOT EDIT - regenerate with make pyoffsets */
/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CPython 3.11.7 (PY_VERSION_HEX 0x030b07f0), x86_64
 * headers: $(pyenv root)/versions/3.11.7/include/python3.11
 * generator: tools/pyoffsets/pyoffsets.c
 *
 * call_ops, from the opcode headers:
 *   CALL = 171
 *   CALL_ADAPTIVE = 22
 *   CALL_FUNCTION_EX = 142
 *   PRECALL = 166
 *   PRECALL_ADAPTIVE = 64
 *   PRECALL_BOUND_METHOD = 65
 *   PRECALL_BUILTIN_CLASS = 66
 *   PRECALL_BUILTIN_FAST_WITH_KEYWORDS = 67
 *   PRECALL_METHOD_DESCRIPTOR_FAST_WITH_KEYWORDS = 72
 *   PRECALL_NO_KW_BUILTIN_FAST = 73
 *   PRECALL_NO_KW_BUILTIN_O = 76
 *   PRECALL_NO_KW_ISINSTANCE = 77
 *   PRECALL_NO_KW_LEN = 78
 *   PRECALL_NO_KW_LIST_APPEND = 79
 *   PRECALL_NO_KW_METHOD_DESCRIPTOR_FAST = 80
 *   PRECALL_NO_KW_METHOD_DESCRIPTOR_NOARGS = 81
 *   PRECALL_NO_KW_METHOD_DESCRIPTOR_O = 113
 *   PRECALL_NO_KW_STR_1 = 121
 *   PRECALL_NO_KW_TUPLE_1 = 127
 *   PRECALL_NO_KW_TYPE_1 = 141
 */
#ifndef PYOFFSETS_CPYTHON_3_11_H
#define PYOFFSETS_CPYTHON_3_11_H

#include "pyoffsets.h"

static const struct py_offsets py_offsets_3_11 = {
	.version_hex = 0x30b07f0,
	.minor = 11,
	.runtime_interpreters_head = 40,
	.runtime_main_thread = 80,
	.runtime_autotss_key = 592,
	.runtime_tstate_current = 576,
	.interp_threads_head = 16,
	.tstate_next = 8,
	.tstate_interp = 16,
	.tstate_frame = PYOFF_NONE,
	.tstate_cframe = 56,
	.tstate_current_frame = PYOFF_NONE,
	.tstate_thread_id = 152,
	.tstate_native_thread_id = 160,
	.tstate_datastack_chunk = 296,
	.tstate_datastack_top = 304,
	.stackchunk_data = 24,
	.cframe_current_frame = 8,
	.cframe_previous = 16,
	.frame_code = 32,
	.frame_previous = 48,
	.frame_instr = 56,
	.frame_owner = 69,
	.frame_is_entry = 68,
	.frame_size = 80,
	.code_argcount = 56,
	.code_flags = 48,
	.code_firstlineno = 72,
	.code_filename = 112,
	.code_name = 120,
	.code_qualname = 128,
	.code_linetable = 136,
	.code_code_adaptive = 184,
	.code_code = PYOFF_NONE,
	.object_type = 8,
	.varobject_size = 16,
	.type_basicsize = 32,
	.type_name = 24,
	.type_dealloc = 48,
	.bytes_sval = 32,
	.unicode_length = 16,
	.unicode_state = 32,
	.unicode_ascii_size = 48,
	.unicode_compact_size = 72,
	.unicode_kind_mask = 0x1c,
	.unicode_compact_mask = 0x20,
	.unicode_ascii_mask = 0x40,
	.dbg_version = PYOFF_NONE,
	.dbg_free_threaded = PYOFF_NONE,
	.dbg_runtime_interpreters_head = PYOFF_NONE,
	.dbg_interp_threads_head = PYOFF_NONE,
	.dbg_tstate_current_frame = PYOFF_NONE,
	.dbg_tstate_thread_id = PYOFF_NONE,
	.dbg_tstate_next = PYOFF_NONE,
	.dbg_frame_previous = PYOFF_NONE,
	.dbg_frame_executable = PYOFF_NONE,
	.dbg_frame_instr_ptr = PYOFF_NONE,
	.dbg_frame_owner = PYOFF_NONE,
	.dbg_code_filename = PYOFF_NONE,
	.dbg_code_name = PYOFF_NONE,
	.dbg_code_qualname = PYOFF_NONE,
	.dbg_code_linetable = PYOFF_NONE,
	.dbg_code_firstlineno = PYOFF_NONE,
	.dbg_code_code_adaptive = PYOFF_NONE,
	.dbg_tstate_interp = PYOFF_NONE,
	.dbg_tstate_native_thread_id = PYOFF_NONE,
	.dbg_tstate_datastack_chunk = PYOFF_NONE,
	.dbg_interp_ceval_gil = PYOFF_NONE,
	.dbg_frame_size = PYOFF_NONE,
	.dbg_frame_localsplus = PYOFF_NONE,
	.dbg_code_argcount = PYOFF_NONE,
	.dbg_object_type = PYOFF_NONE,
	.dbg_type_name = PYOFF_NONE,
	.dbg_bytes_size = PYOFF_NONE,
	.dbg_bytes_sval = PYOFF_NONE,
	.dbg_unicode_state = PYOFF_NONE,
	.dbg_unicode_length = PYOFF_NONE,
	.dbg_unicode_ascii_size = PYOFF_NONE,
	.call_ops = { 0x0000000000400000, 0x820200000003f30f, 0x0000084000006000, 0x0000000000000000 },
	.runtime_ceval_gil = 360,
	.runtime_interp_main = 48,
	.interp_ceval_gil = PYOFF_NONE,
	.gil_locked = 16,
	.gil_last_holder = 8,
	.gil_locks = 32,
	.gil_size = 208,
	.gil_enabled = PYOFF_NONE,
	.interp_gc_collecting = 848,
	.frame_globals = 8,
	.frame_localsplus = 72,
	.frame_stacktop = 64,
	.frame_valuestack = PYOFF_NONE,
	.frame_state = PYOFF_NONE,
	.gen_frame = PYOFF_NONE,
	.gen_iframe = 80,
	.gen_frame_state = 75,
	.gen_running = PYOFF_NONE,
	.frame_stackpointer = PYOFF_NONE,
	.tstate_asyncio_tasks = PYOFF_NONE,
	.interp_asyncio_tasks = PYOFF_NONE,
	.state_created = -2,
	.state_suspended = -1,
	.state_suspended_yf = -1,
	.state_executing = 0,
	.type_flags = 168,
	.type_dictoffset = 288,
	.heaptype_cached_keys = 872,
	.type_base = 256,
	.tpflags_heaptype = 0x200,
	.tpflags_managed_dict = 0x10,
	.tpflags_inline_values = 0x0,
	.managed_values_off = -32,
	.managed_dict_off = -24,
	.dict_keys = 32,
	.dict_values = 40,
	.keys_log2_size = 8,
	.keys_log2_index_bytes = 9,
	.keys_kind = 10,
	.keys_nentries = 24,
	.keys_indices = 32,
	.dict_entry_size = 24,
	.dict_entry_key = 8,
	.dict_entry_value = 16,
	.dict_uentry_size = 16,
	.dict_uentry_key = 0,
	.dict_uentry_value = 8,
	.values_values = 0,
	.values_valid = PYOFF_NONE,
	.keys_kind_general = 0,
	.set_mask = 32,
	.set_table = 40,
	.setentry_size = 16,
	.setentry_key = 0,
	.weakref_object = 16,
	.long_size = 16,
	.long_digits = 24,
	.long_shift = 30,
	.free_threaded = 0,
};

#endif /* PYOFFSETS_CPYTHON_3_11_H */
