/* DO NOT EDIT - regenerate with make pyoffsets */
/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CPython 3.15.2 (PY_VERSION_HEX 0x030f02f0), x86_64
 * headers: /opt/python3.15-sid/usr/include/python3.15 /opt/python3.15-sid/usr/include
 * generator: tools/pyoffsets/pyoffsets.c
 *
 * call_ops, from the opcode headers:
 *   CALL = 50
 *   CALL_BUILTIN_CLASS = 147
 *   CALL_BUILTIN_FAST = 148
 *   CALL_BUILTIN_FAST_WITH_KEYWORDS = 149
 *   CALL_BUILTIN_O = 150
 *   CALL_EX_NON_PY_GENERAL = 151
 *   CALL_FUNCTION_EX = 4
 *   CALL_ISINSTANCE = 153
 *   CALL_KW = 53
 *   CALL_KW_NON_PY = 155
 *   CALL_LEN = 157
 *   CALL_LIST_APPEND = 158
 *   CALL_METHOD_DESCRIPTOR_FAST = 159
 *   CALL_METHOD_DESCRIPTOR_FAST_WITH_KEYWORDS = 160
 *   CALL_METHOD_DESCRIPTOR_NOARGS = 161
 *   CALL_METHOD_DESCRIPTOR_O = 162
 *   CALL_NON_PY_GENERAL = 163
 *   CALL_STR_1 = 166
 *   CALL_TUPLE_1 = 167
 *   CALL_TYPE_1 = 168
 *   INSTRUMENTED_CALL = 249
 *   INSTRUMENTED_CALL_FUNCTION_EX = 251
 *   INSTRUMENTED_CALL_KW = 250
 */
#ifndef PYOFFSETS_CPYTHON_3_15_H
#define PYOFFSETS_CPYTHON_3_15_H

#include "pyoffsets.h"

static const struct py_offsets py_offsets_3_15 = {
	.version_hex = 0x30f02f0,
	.minor = 15,
	.runtime_interpreters_head = 936,
	.runtime_main_thread = 960,
	.runtime_autotss_key = PYOFF_NONE,
	.runtime_tstate_current = PYOFF_NONE,
	.interp_threads_head = 7336,
	.tstate_next = 8,
	.tstate_interp = 16,
	.tstate_frame = PYOFF_NONE,
	.tstate_cframe = PYOFF_NONE,
	.tstate_current_frame = 72,
	.tstate_thread_id = 176,
	.tstate_native_thread_id = 184,
	.tstate_datastack_chunk = 256,
	.tstate_datastack_top = 264,
	.stackchunk_data = 24,
	.cframe_current_frame = PYOFF_NONE,
	.cframe_previous = PYOFF_NONE,
	.frame_code = 0,
	.frame_previous = 8,
	.frame_instr = 56,
	.frame_owner = 74,
	.frame_is_entry = PYOFF_NONE,
	.frame_size = 88,
	.code_argcount = 52,
	.code_flags = 48,
	.code_firstlineno = 68,
	.code_filename = 112,
	.code_name = 120,
	.code_qualname = 128,
	.code_linetable = 136,
	.code_code_adaptive = 208,
	.code_code = PYOFF_NONE,
	.object_type = 8,
	.varobject_size = 16,
	.type_basicsize = 32,
	.type_name = 24,
	.type_dealloc = 48,
	.bytes_sval = 32,
	.unicode_length = 16,
	.unicode_state = 32,
	.unicode_ascii_size = 40,
	.unicode_compact_size = 56,
	.unicode_kind_mask = 0x1c,
	.unicode_compact_mask = 0x20,
	.unicode_ascii_mask = 0x40,
	.dbg_version = 8,
	.dbg_free_threaded = 16,
	.dbg_runtime_interpreters_head = 40,
	.dbg_interp_threads_head = 72,
	.dbg_tstate_current_frame = 208,
	.dbg_tstate_thread_id = 240,
	.dbg_tstate_next = 192,
	.dbg_frame_previous = 320,
	.dbg_frame_executable = 328,
	.dbg_frame_instr_ptr = 336,
	.dbg_frame_owner = 352,
	.dbg_code_filename = 384,
	.dbg_code_name = 392,
	.dbg_code_qualname = 400,
	.dbg_code_linetable = 408,
	.dbg_code_firstlineno = 416,
	.dbg_code_code_adaptive = 448,
	.dbg_tstate_interp = 200,
	.dbg_tstate_native_thread_id = 248,
	.dbg_tstate_datastack_chunk = 256,
	.dbg_interp_ceval_gil = 120,
	.dbg_frame_size = 312,
	.dbg_frame_localsplus = 344,
	.dbg_code_argcount = 424,
	.dbg_object_type = 472,
	.dbg_type_name = 488,
	.dbg_bytes_size = 696,
	.dbg_bytes_sval = 704,
	.dbg_unicode_state = 720,
	.dbg_unicode_length = 728,
	.dbg_unicode_ascii_size = 736,
	.call_ops = { 0x0024000000000010, 0x0000000000000000, 0x000001cfeaf80000, 0x0e00000000000000 },
	.runtime_ceval_gil = PYOFF_NONE,
	.runtime_interp_main = 944,
	.interp_ceval_gil = 16,
	.gil_locked = 16,
	.gil_locks = 32,
	.gil_size = 208,
	.gil_enabled = PYOFF_NONE,
	.interp_gc_collecting = 7512,
	.frame_globals = 24,
	.frame_localsplus = 80,
	.frame_stacktop = PYOFF_NONE,
	.frame_valuestack = PYOFF_NONE,
	.frame_state = PYOFF_NONE,
	.gen_frame = PYOFF_NONE,
	.gen_iframe = 72,
	.gen_frame_state = 67,
	.gen_running = PYOFF_NONE,
	.frame_stackpointer = 64,
	.tstate_asyncio_tasks = 1048,
	.interp_asyncio_tasks = 10856,
	.state_created = 0,
	.state_suspended = 1,
	.state_suspended_yf = 2,
	.state_executing = 4,
	.type_flags = 168,
	.type_dictoffset = 288,
	.heaptype_cached_keys = 888,
	.type_base = 256,
	.tpflags_heaptype = 0x200,
	.tpflags_managed_dict = 0x10,
	.tpflags_inline_values = 0x4,
	.managed_values_off = 0,
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
	.values_values = 8,
	.values_valid = 3,
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

#endif /* PYOFFSETS_CPYTHON_3_15_H */
