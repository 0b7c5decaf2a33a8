/* DO NOT EDIT - regenerate with make pyoffsets */
/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CPython 3.13.0 (PY_VERSION_HEX 0x030d00f0), x86_64
 * headers: $(pyenv root)/versions/3.13.0/include/python3.13
 * generator: tools/pyoffsets/pyoffsets.c
 *
 * call_ops, from the opcode headers:
 *   CALL = 53
 *   CALL_BUILTIN_CLASS = 165
 *   CALL_BUILTIN_FAST = 166
 *   CALL_BUILTIN_FAST_WITH_KEYWORDS = 167
 *   CALL_BUILTIN_O = 168
 *   CALL_FUNCTION_EX = 54
 *   CALL_ISINSTANCE = 169
 *   CALL_KW = 57
 *   CALL_LEN = 170
 *   CALL_LIST_APPEND = 171
 *   CALL_METHOD_DESCRIPTOR_FAST = 172
 *   CALL_METHOD_DESCRIPTOR_FAST_WITH_KEYWORDS = 173
 *   CALL_METHOD_DESCRIPTOR_NOARGS = 174
 *   CALL_METHOD_DESCRIPTOR_O = 175
 *   CALL_NON_PY_GENERAL = 176
 *   CALL_STR_1 = 179
 *   CALL_TUPLE_1 = 180
 *   CALL_TYPE_1 = 181
 *   INSTRUMENTED_CALL = 244
 *   INSTRUMENTED_CALL_FUNCTION_EX = 246
 *   INSTRUMENTED_CALL_KW = 245
 */
#ifndef PYOFFSETS_CPYTHON_3_13_H
#define PYOFFSETS_CPYTHON_3_13_H

#include "pyoffsets.h"

static const struct py_offsets py_offsets_3_13 = {
	.version_hex = 0x30d00f0,
	.minor = 13,
	.runtime_interpreters_head = 632,
	.runtime_main_thread = 656,
	.runtime_autotss_key = 2160,
	.runtime_tstate_current = PYOFF_NONE,
	.interp_threads_head = 7344,
	.tstate_next = 8,
	.tstate_interp = 16,
	.tstate_frame = PYOFF_NONE,
	.tstate_cframe = PYOFF_NONE,
	.tstate_current_frame = 72,
	.tstate_thread_id = 152,
	.tstate_native_thread_id = 160,
	.tstate_datastack_chunk = 232,
	.tstate_datastack_top = 240,
	.stackchunk_data = 24,
	.cframe_current_frame = PYOFF_NONE,
	.cframe_previous = PYOFF_NONE,
	.frame_code = 0,
	.frame_previous = 8,
	.frame_instr = 56,
	.frame_owner = 70,
	.frame_is_entry = PYOFF_NONE,
	.frame_size = 80,
	.code_argcount = 52,
	.code_flags = 48,
	.code_firstlineno = 68,
	.code_filename = 112,
	.code_name = 120,
	.code_qualname = 128,
	.code_linetable = 136,
	.code_code_adaptive = 200,
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
	.dbg_tstate_current_frame = 184,
	.dbg_tstate_thread_id = 192,
	.dbg_tstate_next = 168,
	.dbg_frame_previous = 232,
	.dbg_frame_executable = 240,
	.dbg_frame_instr_ptr = 248,
	.dbg_frame_owner = 264,
	.dbg_code_filename = 280,
	.dbg_code_name = 288,
	.dbg_code_qualname = 296,
	.dbg_code_linetable = 304,
	.dbg_code_firstlineno = 312,
	.dbg_code_code_adaptive = 344,
	.dbg_tstate_interp = 176,
	.dbg_tstate_native_thread_id = 200,
	.dbg_tstate_datastack_chunk = 208,
	.dbg_interp_ceval_gil = 112,
	.dbg_frame_size = 224,
	.dbg_frame_localsplus = 256,
	.dbg_code_argcount = 320,
	.dbg_object_type = 360,
	.dbg_type_name = 376,
	.dbg_bytes_size = 520,
	.dbg_bytes_sval = 528,
	.dbg_unicode_state = 544,
	.dbg_unicode_length = 552,
	.dbg_unicode_ascii_size = 560,
	.call_ops = { 0x0260000000000000, 0x0000000000000000, 0x0039ffe000000000, 0x0070000000000000 },
	.runtime_ceval_gil = PYOFF_NONE,
	.runtime_interp_main = 640,
	.interp_ceval_gil = 16,
	.gil_locked = 16,
	.gil_last_holder = 8,
	.gil_locks = 32,
	.gil_size = 208,
	.gil_enabled = PYOFF_NONE,
	.interp_gc_collecting = 7600,
	.frame_globals = 24,
	.frame_localsplus = 72,
	.frame_stacktop = 64,
	.frame_valuestack = PYOFF_NONE,
	.frame_state = PYOFF_NONE,
	.gen_frame = PYOFF_NONE,
	.gen_iframe = 72,
	.gen_frame_state = 67,
	.gen_running = PYOFF_NONE,
	.frame_stackpointer = PYOFF_NONE,
	.tstate_asyncio_tasks = PYOFF_NONE,
	.interp_asyncio_tasks = PYOFF_NONE,
	.state_created = -3,
	.state_suspended = -2,
	.state_suspended_yf = -1,
	.state_executing = 0,
	.type_flags = 168,
	.type_dictoffset = 288,
	.heaptype_cached_keys = 880,
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

#endif /* PYOFFSETS_CPYTHON_3_13_H */
