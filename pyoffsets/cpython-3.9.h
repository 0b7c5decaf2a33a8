/* DO NOT EDIT - regenerate with make pyoffsets */
/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CPython 3.9.18 (PY_VERSION_HEX 0x030912f0), x86_64
 * headers: $(pyenv root)/versions/3.9.18/include/python3.9
 * generator: tools/pyoffsets/pyoffsets.c
 *
 * call_ops, from the opcode headers:
 *   CALL_FUNCTION = 131
 *   CALL_FUNCTION_EX = 142
 *   CALL_FUNCTION_KW = 141
 *   CALL_METHOD = 161
 */
#ifndef PYOFFSETS_CPYTHON_3_9_H
#define PYOFFSETS_CPYTHON_3_9_H

#include "pyoffsets.h"

static const struct py_offsets py_offsets_3_9 = {
	.version_hex = 0x30912f0,
	.minor = 9,
	.runtime_interpreters_head = 32,
	.runtime_main_thread = 72,
	.runtime_autotss_key = 584,
	.runtime_tstate_current = 568,
	.interp_threads_head = 8,
	.tstate_next = 8,
	.tstate_interp = 16,
	.tstate_frame = 24,
	.tstate_cframe = PYOFF_NONE,
	.tstate_current_frame = PYOFF_NONE,
	.tstate_thread_id = 176,
	.tstate_native_thread_id = PYOFF_NONE,
	.cframe_current_frame = PYOFF_NONE,
	.frame_code = 32,
	.frame_previous = 24,
	.frame_instr = 104,
	.frame_owner = PYOFF_NONE,
	.frame_is_entry = PYOFF_NONE,
	.frame_size = 368,
	.code_argcount = 16,
	.code_flags = 36,
	.code_firstlineno = 40,
	.code_filename = 104,
	.code_name = 112,
	.code_qualname = PYOFF_NONE,
	.code_linetable = 120,
	.code_code_adaptive = PYOFF_NONE,
	.code_code = 48,
	.object_type = 8,
	.varobject_size = 16,
	.type_basicsize = 32,
	.type_name = 24,
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
	.call_ops = { 0x0000000000000000, 0x0000000000000000, 0x0000000200006008, 0x0000000000000000 },
	.runtime_ceval_gil = 352,
	.runtime_interp_main = PYOFF_NONE,
	.interp_ceval_gil = PYOFF_NONE,
	.gil_locked = 16,
	.gil_locks = 32,
	.gil_size = 208,
};

#endif /* PYOFFSETS_CPYTHON_3_9_H */
