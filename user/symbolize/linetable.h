/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Bytecode offset -> source line, for the three line-table formats CPython
 * has used since 3.9.  The table bytes are copied out of the profiled
 * process, so every decoder treats them as untrusted: it never reads past
 * len, always terminates, and answers a line or -1 on any input.
 */
#ifndef LINETABLE_H
#define LINETABLE_H

#include <stddef.h>
#include <stdint.h>

enum linetable_format {
	LINETABLE_LNOTAB = 1, /* 3.9 co_lnotab: (u8 addr delta, s8 line delta) pairs */
	LINETABLE_310,	      /* 3.10 co_linetable: (u8 size, s8 line delta) ranges */
	LINETABLE_LOCATIONS,  /* 3.11+ co_linetable: the location table */
};

/*
 * The format used by CPython 3.<minor>, or 0 where no supported version uses
 * one.
 */
enum linetable_format linetable_format_for_minor(int minor);

/*
 * The source line of the instruction at byte_offset (bytes, not code units:
 * callers turn 3.10's f_lasti into bytes) in a code object whose first line is
 * firstlineno.  A negative byte_offset gives firstlineno, as
 * PyCode_Addr2Line() does.  Returns -1 where the table says the instruction
 * has no line (3.10 "-128" ranges, 3.11+ code 15), where the offset lies past
 * the table's last range (3.10+), or for an unknown format.
 */
int linetable_addr2line(enum linetable_format fmt, const uint8_t *table, size_t len,
			int firstlineno, int byte_offset);

#endif /* LINETABLE_H */
