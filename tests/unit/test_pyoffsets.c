/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The generated offset tables: structural invariants that every table must
 * hold, and spot values that were checked against live interpreters.  A
 * regeneration that silently drops a field or picks up the wrong headers
 * fails here.
 */
#include <stddef.h>
#include <stdint.h>

#include "testlib.h"
#include "cpython.h"

#define FIRST_MINOR 9
#define LAST_MINOR 15

static const struct py_offsets *find(unsigned int minor)
{
	const struct py_offsets *const *t;

	for (t = py_offsets_table; *t; t++)
		if ((*t)->minor == minor && !(*t)->free_threaded)
			return *t;
	return NULL;
}

/* The free-threaded build's table of 3.minor, or NULL. */
static const struct py_offsets *find_ft(unsigned int minor)
{
	const struct py_offsets *const *t;

	for (t = py_offsets_table; *t; t++)
		if ((*t)->minor == minor && (*t)->free_threaded)
			return *t;
	return NULL;
}

static uint16_t u16_at(const struct py_offsets *o, size_t off)
{
	uint16_t v;

	memcpy(&v, (const char *)o + off, sizeof(v));
	return v;
}

static void test_table_lists_every_minor_once(void)
{
	size_t n = 0;
	unsigned int minor;

	while (py_offsets_table[n])
		n++;
	/* A default build's table per minor, and the free-threaded 3.13t's. */
	CHECK_EQ_INT(n, LAST_MINOR - FIRST_MINOR + 1 + 1);
	CHECK(find_ft(13) != NULL);
	CHECK(find_ft(12) == NULL);
	for (minor = FIRST_MINOR; minor <= LAST_MINOR; minor++) {
		const struct py_offsets *o = find(minor);

		CHECK(o != NULL);
		if (o)
			CHECK_EQ_INT(o->minor, minor);
	}
	CHECK(find(8) == NULL);
	CHECK(find(16) == NULL);
}

static void test_version_hex_matches_minor(void)
{
	const struct py_offsets *const *t;

	for (t = py_offsets_table; *t; t++) {
		CHECK_EQ_INT((*t)->version_hex >> 24, 3);
		CHECK_EQ_INT(((*t)->version_hex >> 16) & 0xff, (*t)->minor);
		/* A final release: level 0xf. */
		CHECK_EQ_INT(((*t)->version_hex >> 4) & 0xf, 0xf);
	}
}

/* Which minors have each 16-bit field; outside [first, last] it is NONE. */
struct presence {
	const char *name;
	size_t off;
	unsigned int first, last;
};

#define HAS(f, first, last)                                     \
	{                                                       \
#f, offsetof(struct py_offsets, f), first, last \
	}
#define ALWAYS(f) HAS(f, FIRST_MINOR, LAST_MINOR)

static const struct presence presence[] = {
	ALWAYS(runtime_interpreters_head),
	ALWAYS(runtime_main_thread),
	HAS(runtime_autotss_key, 9, 14), /* 3.15: a thread-local (target/tlsslot.h) */
	HAS(runtime_tstate_current, 9, 11),
	ALWAYS(interp_threads_head),
	ALWAYS(tstate_next),
	ALWAYS(tstate_interp),
	HAS(tstate_frame, 9, 10),
	HAS(tstate_cframe, 11, 12),
	HAS(tstate_current_frame, 13, LAST_MINOR),
	ALWAYS(tstate_thread_id),
	HAS(tstate_native_thread_id, 11, LAST_MINOR),
	HAS(cframe_current_frame, 11, 12),
	HAS(cframe_previous, 11, 12),
	ALWAYS(frame_code),
	ALWAYS(frame_previous),
	ALWAYS(frame_instr),
	HAS(frame_owner, 11, LAST_MINOR),
	HAS(frame_is_entry, 11, 11),
	ALWAYS(frame_size),
	ALWAYS(code_argcount),
	ALWAYS(code_flags),
	ALWAYS(code_firstlineno),
	ALWAYS(code_filename),
	ALWAYS(code_name),
	HAS(code_qualname, 11, LAST_MINOR),
	ALWAYS(code_linetable),
	HAS(code_code_adaptive, 11, LAST_MINOR),
	HAS(code_code, 9, 10),
	ALWAYS(object_type),
	ALWAYS(varobject_size),
	ALWAYS(type_basicsize),
	ALWAYS(type_name),
	ALWAYS(bytes_sval),
	ALWAYS(unicode_length),
	ALWAYS(unicode_state),
	ALWAYS(unicode_ascii_size),
	ALWAYS(unicode_compact_size),
	HAS(dbg_version, 13, LAST_MINOR),
	HAS(dbg_free_threaded, 13, LAST_MINOR),
	HAS(dbg_runtime_interpreters_head, 13, LAST_MINOR),
	HAS(dbg_interp_threads_head, 13, LAST_MINOR),
	HAS(dbg_tstate_current_frame, 13, LAST_MINOR),
	HAS(dbg_tstate_thread_id, 13, LAST_MINOR),
	HAS(dbg_tstate_next, 13, LAST_MINOR),
	HAS(dbg_frame_previous, 13, LAST_MINOR),
	HAS(dbg_frame_executable, 13, LAST_MINOR),
	HAS(dbg_frame_instr_ptr, 13, LAST_MINOR),
	HAS(dbg_frame_owner, 13, LAST_MINOR),
	HAS(dbg_code_filename, 13, LAST_MINOR),
	HAS(dbg_code_name, 13, LAST_MINOR),
	HAS(dbg_code_qualname, 13, LAST_MINOR),
	HAS(dbg_code_linetable, 13, LAST_MINOR),
	HAS(dbg_code_firstlineno, 13, LAST_MINOR),
	HAS(dbg_code_code_adaptive, 13, LAST_MINOR),
	HAS(dbg_tstate_interp, 13, LAST_MINOR),
	HAS(dbg_tstate_native_thread_id, 13, LAST_MINOR),
	HAS(dbg_tstate_datastack_chunk, 13, LAST_MINOR),
	HAS(dbg_interp_ceval_gil, 13, LAST_MINOR),
	HAS(dbg_frame_size, 13, LAST_MINOR),
	HAS(dbg_frame_localsplus, 13, LAST_MINOR),
	HAS(dbg_code_argcount, 13, LAST_MINOR),
	HAS(dbg_object_type, 13, LAST_MINOR),
	HAS(dbg_type_name, 13, LAST_MINOR),
	HAS(dbg_bytes_size, 13, LAST_MINOR),
	HAS(dbg_bytes_sval, 13, LAST_MINOR),
	HAS(dbg_unicode_state, 13, LAST_MINOR),
	HAS(dbg_unicode_length, 13, LAST_MINOR),
	HAS(dbg_unicode_ascii_size, 13, LAST_MINOR),
	/* GIL wait */
	HAS(runtime_ceval_gil, 9, 11),
	ALWAYS(runtime_interp_main),
	HAS(interp_ceval_gil, 12, LAST_MINOR),
	/* garbage collection */
	ALWAYS(interp_gc_collecting),
	ALWAYS(gil_locked),
	ALWAYS(gil_locks),
	ALWAYS(gil_size),
	/* async: 3.14 points at the top of the stack, and lists its C tasks */
	HAS(frame_stacktop, 9, 13),
	HAS(frame_stackpointer, 14, LAST_MINOR),
	HAS(tstate_asyncio_tasks, 14, LAST_MINOR),
	HAS(interp_asyncio_tasks, 14, LAST_MINOR),
};

/* The GIL's locks (two pthread_cond_t of 48 bytes, two pthread_mutex_t of
 * 40) lie after locked, inside the struct. */
static void test_gil_fields(void)
{
	const struct py_offsets *const *t;

	for (t = py_offsets_table; *t; t++) {
		const struct py_offsets *o = *t;

		CHECK(o->gil_locked + 4 <= o->gil_locks);
		CHECK(o->gil_locks + 2 * 48 + 2 * 40 <= o->gil_size);
	}
}

static void test_none_exactly_where_absent(void)
{
	const struct py_offsets *const *t;
	size_t i;

	for (t = py_offsets_table; *t; t++) {
		for (i = 0; i < sizeof(presence) / sizeof(presence[0]); i++) {
			const struct presence *p = &presence[i];
			int want = (*t)->minor >= p->first && (*t)->minor <= p->last;
			int has = u16_at(*t, p->off) != PYOFF_NONE;

			if (has != want)
				fprintf(stderr, "3.%u %s: %s\n", (*t)->minor, p->name,
					want ? "missing" : "should be PYOFF_NONE");
			CHECK_EQ_INT(has, want);
		}
	}
}

static void test_frame_fields_inside_frame(void)
{
	const struct py_offsets *const *t;

	for (t = py_offsets_table; *t; t++) {
		const struct py_offsets *o = *t;

		CHECK(o->frame_instr < o->frame_size);
		CHECK(o->frame_code + 8 <= o->frame_size);
		CHECK(o->frame_previous + 8 <= o->frame_size);
		CHECK(o->frame_code != o->frame_previous);
		if (o->frame_owner != PYOFF_NONE)
			CHECK(o->frame_owner < o->frame_size);
		/* The walker reads the first 80 bytes of a 3.11+ frame at once. */
		if (o->minor >= 11)
			CHECK(o->frame_owner < 80 && o->frame_instr + 8 <= 80);
	}
}

static int is_contiguous(uint32_t mask)
{
	uint32_t low = mask >> __builtin_ctz(mask);

	return (low & (low + 1)) == 0;
}

static void test_unicode_masks(void)
{
	const struct py_offsets *const *t;

	for (t = py_offsets_table; *t; t++) {
		const struct py_offsets *o = *t;

		CHECK(o->unicode_kind_mask != 0);
		CHECK(o->unicode_compact_mask != 0);
		CHECK(o->unicode_ascii_mask != 0);
		CHECK((o->unicode_kind_mask & o->unicode_compact_mask) == 0);
		CHECK((o->unicode_kind_mask & o->unicode_ascii_mask) == 0);
		CHECK((o->unicode_compact_mask & o->unicode_ascii_mask) == 0);
		/* kind is 3 bits: 1, 2 or 4 bytes per character. */
		if (o->unicode_kind_mask)
			CHECK(is_contiguous(o->unicode_kind_mask) &&
			      __builtin_popcount(o->unicode_kind_mask) == 3);
		CHECK_EQ_INT(__builtin_popcount(o->unicode_compact_mask), 1);
		CHECK_EQ_INT(__builtin_popcount(o->unicode_ascii_mask), 1);

		CHECK(o->unicode_length < o->unicode_ascii_size);
		CHECK(o->unicode_state + 4 <= o->unicode_ascii_size);
		CHECK(o->unicode_ascii_size < o->unicode_compact_size);
	}
}

static void test_debug_offsets_layout(void)
{
	const struct py_offsets *o = find(13);
	size_t i;

	if (!o) {
		CHECK(o != NULL);
		return;
	}
	/* After the 8-byte cookie, every entry is a u64. */
	CHECK_EQ_INT(o->dbg_version, 8);
	CHECK_EQ_INT(o->dbg_free_threaded, 16);
	for (i = 0; i < sizeof(presence) / sizeof(presence[0]); i++) {
		uint16_t v = u16_at(o, presence[i].off);

		if (strncmp(presence[i].name, "dbg_", 4))
			continue;
		CHECK_EQ_INT(v % 8, 0);
		/* sizeof(_Py_DebugOffsets) is 584 in 3.13.0; the cookie, the
		 * version and the build come first. */
		CHECK(v < 584);
		if (strcmp(presence[i].name, "dbg_version") &&
		    strcmp(presence[i].name, "dbg_free_threaded"))
			CHECK(v >= 24);
	}
}

/* Values checked against live interpreters and the design notes. */
static void test_spot_values(void)
{
	const struct py_offsets *o9 = find(9), *o10 = find(10), *o11 = find(11);
	const struct py_offsets *o12 = find(12), *o13 = find(13), *o14 = find(14);
	const struct py_offsets *o15 = find(15), *o;

	CHECK(o9 && o10 && o11 && o12 && o13 && o14 && o15);
	if (!o9 || !o10 || !o11 || !o12 || !o13 || !o14 || !o15)
		return;

	CHECK_EQ_INT(o9->frame_instr, 104);
	CHECK_EQ_INT(o10->frame_instr, 96);
	CHECK_EQ_INT(o9->tstate_frame, 24);
	CHECK_EQ_INT(o9->runtime_tstate_current, 568);
	CHECK_EQ_INT(o11->runtime_tstate_current, 576);

	CHECK_EQ_INT(o11->tstate_cframe, 56);
	CHECK_EQ_INT(o11->cframe_current_frame, 8);
	CHECK_EQ_INT(o11->cframe_previous, 16);
	CHECK_EQ_INT(o11->frame_code, 32);
	CHECK_EQ_INT(o11->frame_previous, 48);
	CHECK_EQ_INT(o11->frame_is_entry, 68);
	CHECK_EQ_INT(o11->frame_owner, 69);
	CHECK_EQ_INT(o11->code_code_adaptive, 184);

	CHECK_EQ_INT(o12->runtime_autotss_key, 1544);
	CHECK_EQ_INT(o12->tstate_thread_id, 136);
	CHECK_EQ_INT(o12->cframe_current_frame, 0);
	CHECK_EQ_INT(o12->cframe_previous, 8);
	CHECK_EQ_INT(o12->frame_owner, 70);
	CHECK_EQ_INT(o12->code_code_adaptive, 192);

	CHECK_EQ_INT(o13->tstate_current_frame, 72);
	CHECK_EQ_INT(o13->runtime_interpreters_head, 632);
	CHECK_EQ_INT(o13->interp_threads_head, 7344);
	CHECK_EQ_INT(o13->frame_instr, 56);
	CHECK_EQ_INT(o13->code_code_adaptive, 200);

	/* The free-threaded 3.13t: a PyObject header of 32 bytes (ob_tid,
	 * flags, mutex, gc bits, local and shared counts before ob_type), so
	 * every object field 16 further on; the thread state and frames as
	 * the default build's. */
	o = find_ft(13);
	CHECK(o != NULL);
	if (o) {
		CHECK_EQ_INT(o->object_type, 24);
		CHECK_EQ_INT(o->code_firstlineno, o13->code_firstlineno + 16);
		CHECK_EQ_INT(o->code_code_adaptive, o13->code_code_adaptive + 16);
		CHECK_EQ_INT(o->tstate_current_frame, o13->tstate_current_frame);
		CHECK_EQ_INT(o->frame_instr, o13->frame_instr);
		CHECK_EQ_INT(o->runtime_autotss_key, o13->runtime_autotss_key);
		CHECK_EQ_INT(o->free_threaded, 1);
		CHECK_EQ_INT(o13->free_threaded, 0);
	}

	/* 3.15 numbers a generator's frame states from 0 (3.14: from -3). */
	CHECK_EQ_INT(o14->state_created, -3);
	CHECK_EQ_INT(o15->state_created, 0);
	CHECK_EQ_INT(o15->state_suspended, 1);
	CHECK_EQ_INT(o15->state_suspended_yf, 2);
	CHECK_EQ_INT(o15->state_executing, 4);
	CHECK_EQ_INT(o15->tstate_thread_id, 176);

	/* 3.12 dropped wstr/wstr_length from PyASCIIObject. */
	CHECK_EQ_INT(o9->unicode_ascii_size, 48);
	CHECK_EQ_INT(o11->unicode_ascii_size, 48);
	CHECK_EQ_INT(o12->unicode_ascii_size, 40);
	CHECK_EQ_INT(o13->unicode_ascii_size, 40);
}

static int has_op(const struct py_offsets *o, unsigned int op)
{
	return (o->call_ops[op / 64] >> (op % 64)) & 1;
}

static int count_ops(const struct py_offsets *o)
{
	int i, n = 0;

	for (i = 0; i < 4; i++)
		n += __builtin_popcountll(o->call_ops[i]);
	return n;
}

/* Values from each live interpreter's opcode module (dis.opmap, and the
 * specialised names of 3.11+). */
static void test_call_ops(void)
{
	const struct py_offsets *o9 = find(9), *o10 = find(10), *o11 = find(11);
	const struct py_offsets *o12 = find(12), *o13 = find(13), *o14 = find(14);
	const struct py_offsets *o15 = find(15);

	CHECK(o9 && o10 && o11 && o12 && o13 && o14 && o15);
	if (!o9 || !o10 || !o11 || !o12 || !o13 || !o14 || !o15)
		return;
	/* CALL_FUNCTION, CALL_FUNCTION_KW, CALL_FUNCTION_EX, CALL_METHOD. */
	CHECK_EQ_INT(count_ops(o9), 4);
	CHECK(has_op(o9, 131) && has_op(o9, 141) && has_op(o9, 142) && has_op(o9, 161));
	CHECK(!memcmp(o9->call_ops, o10->call_ops, sizeof(o9->call_ops)));
	CHECK(!has_op(o9, 23) && !has_op(o9, 160)); /* BINARY_ADD, LOAD_METHOD */
	/* 3.11: PRECALL and CALL with their specialised forms, but not those
	 * for a Python callee (CALL_PY_EXACT_ARGS 23, CALL_PY_WITH_DEFAULTS 24,
	 * PRECALL_PYFUNC 143): under them C code is the frame's making. */
	CHECK_EQ_INT(count_ops(o11), 20);
	CHECK(!has_op(o11, 23) && !has_op(o11, 24) && !has_op(o11, 143));
	CHECK(has_op(o11, 166) && has_op(o11, 171) && has_op(o11, 142));
	CHECK(has_op(o11, 67) &&
	      has_op(o11, 80)); /* PRECALL_BUILTIN_FAST_WITH_KEYWORDS, ..._METHOD_DESCRIPTOR_FAST */
	CHECK(!has_op(o11, 122) && !has_op(o11, 0)); /* BINARY_OP, CACHE */
	/* 3.12: INSTRUMENTED_CALL (241) in, CALL_INTRINSIC_1/2 (173, 174) out. */
	CHECK_EQ_INT(count_ops(o12), 18);
	CHECK(!has_op(o12, 23) &&
	      !has_op(o12, 28)); /* CALL_PY_EXACT_ARGS, CALL_BOUND_METHOD_EXACT_ARGS */
	CHECK(has_op(o12, 171) && has_op(o12, 241) && has_op(o12, 244) && has_op(o12, 34));
	CHECK(!has_op(o12, 173) && !has_op(o12, 174) && !has_op(o12, 122));
	/* 3.13: CALL 53, CALL_KW 57, CALL_BUILTIN_FAST 166, INSTRUMENTED_CALL_KW 245. */
	CHECK_EQ_INT(count_ops(o13), 21);
	CHECK(has_op(o13, 53) && has_op(o13, 57) && has_op(o13, 166) && has_op(o13, 245));
	CHECK(!has_op(o13, 55) && !has_op(o13, 56) && !has_op(o13, 45)); /* intrinsics, BINARY_OP */
	/* CALL_ALLOC_AND_ENTER_INIT 162, CALL_BOUND_METHOD_* 163-164, CALL_PY_* 177-178 out;
	 * CALL_NON_PY_GENERAL 176 in. */
	CHECK(!has_op(o13, 162) && !has_op(o13, 163) && !has_op(o13, 164) && !has_op(o13, 177) &&
	      !has_op(o13, 178) && has_op(o13, 176));
	/* 3.14 (Debian's 3.14.10): CALL 52, CALL_KW 55, CALL_KW_NON_PY 152 in;
	 * CALL_KW_PY 153, CALL_PY_EXACT_ARGS 161, CALL_KW_BOUND_METHOD 151 out. */
	CHECK_EQ_INT(count_ops(o14), 22);
	CHECK(has_op(o14, 52) && has_op(o14, 55) && has_op(o14, 152));
	CHECK(!has_op(o14, 153) && !has_op(o14, 161) && !has_op(o14, 151));
	/* 3.15 (Debian's 3.15.2): CALL 50, CALL_KW 53, CALL_KW_NON_PY 155,
	 * CALL_EX_NON_PY_GENERAL 151 in; CALL_EX_PY 152, CALL_KW_BOUND_METHOD
	 * 154, CALL_KW_PY 156, CALL_PY_EXACT_ARGS 164 out. */
	CHECK_EQ_INT(count_ops(o15), 23);
	CHECK(has_op(o15, 50) && has_op(o15, 53) && has_op(o15, 155) && has_op(o15, 151));
	CHECK(!has_op(o15, 152) && !has_op(o15, 154) && !has_op(o15, 156) && !has_op(o15, 164));
}

int main(void)
{
	RUN_TEST(test_table_lists_every_minor_once);
	RUN_TEST(test_version_hex_matches_minor);
	RUN_TEST(test_none_exactly_where_absent);
	RUN_TEST(test_frame_fields_inside_frame);
	RUN_TEST(test_unicode_masks);
	RUN_TEST(test_gil_fields);
	RUN_TEST(test_debug_offsets_layout);
	RUN_TEST(test_spot_values);
	RUN_TEST(test_call_ops);
	return test_summary("pyoffsets");
}
