// SPDX-License-Identifier: BSD-2-Clause
/*
 * Line-table decoders for CPython 3.9 - 3.15.  No Debian library reads these
 * formats, so they are written here from the format descriptions (CPython's
 * Objects/lnotab_notes.txt and Objects/locations.md) and checked against
 * PyCode_Addr2Line() itself by tests/unit/test_linetable.c.
 *
 * The tables come from another process's memory and may be torn, truncated
 * or garbage.  Each loop below therefore advances by at least one byte per
 * iteration and stops at len; lines are summed in 64 bits and saturated, so
 * hostile deltas cannot overflow; and a result that no valid table can give
 * (a negative line) is reported as -1, "no line".
 */
#include <limits.h>

#include "symbolize/linetable.h"

enum linetable_format linetable_format_for_minor(int minor)
{
	if (minor == 9)
		return LINETABLE_LNOTAB;
	if (minor == 10)
		return LINETABLE_310;
	/* 3.11 introduced the location table; 3.14 and 3.15 kept it unchanged. */
	if (minor >= 11 && minor <= 15)
		return LINETABLE_LOCATIONS;
	return 0;
}

/* Adds a delta from the table, clamped so that garbage cannot overflow. */
static long long line_add(long long line, long long delta)
{
	line += delta;
	if (line > INT_MAX)
		return INT_MAX;
	if (line < INT_MIN)
		return INT_MIN;
	return line;
}

static int line_result(long long line)
{
	return line < 0 ? -1 : (int)line;
}

/*
 * 3.9 co_lnotab: (u8 addr_delta, s8 line_delta) pairs.  A pair's line delta
 * applies from the address reached by its addr delta, so the line for addrq is
 * the sum of the line deltas of every pair whose cumulative address is
 * <= addrq.  Past the last pair the last line holds (3.9 has no "no line").
 */
static int addr2line_lnotab(const uint8_t *t, size_t len, int firstlineno, int addrq)
{
	long long line = firstlineno, addr = 0;
	size_t i;

	for (i = 0; i + 1 < len; i += 2) {
		addr += t[i];
		if (addr > addrq)
			break;
		line = line_add(line, (int8_t)t[i + 1]);
	}
	return line_result(line);
}

/*
 * 3.10 co_linetable: (u8 size, s8 line_delta) pairs, each describing the
 * range [end, end + size) in bytes.  line_delta == -128 marks a range with no
 * line and leaves the running line alone; every other delta is added, even on
 * zero-size entries, which exist only to carry line jumps beyond +-127.  An
 * offset past the last range has no line.
 */
static int addr2line_310(const uint8_t *t, size_t len, int firstlineno, int addrq)
{
	long long line = firstlineno, end = 0;
	size_t i;

	for (i = 0; i + 1 < len; i += 2) {
		int ldelta = (int8_t)t[i + 1];
		int noline = ldelta == -128;

		if (!noline)
			line = line_add(line, ldelta);
		end += t[i];
		if (addrq < end)
			return noline ? -1 : line_result(line);
	}
	return -1;
}

/* Location-table entries start with a byte with bit 7 set; payload bytes never have it. */
#define LOC_ENTRY_START 0x80

/*
 * Reads an unsigned varint (6 data bits per byte, least significant first,
 * 0x40 = more follows) at t[*pos], stopping at len or at the next entry's
 * first byte.  Bits beyond 32 are dropped: only garbage has them.
 */
static unsigned int loc_varint(const uint8_t *t, size_t len, size_t *pos)
{
	unsigned int v = 0, shift = 0;

	while (*pos < len && !(t[*pos] & LOC_ENTRY_START)) {
		uint8_t b = t[(*pos)++];

		if (shift < 32)
			v |= (unsigned int)(b & 0x3f) << shift;
		shift += 6;
		if (!(b & 0x40))
			break;
	}
	return v;
}

/* A signed varint keeps its sign in bit 0 of the unsigned one. */
static long long loc_svarint(const uint8_t *t, size_t len, size_t *pos)
{
	unsigned int v = loc_varint(t, len, pos);

	return (v & 1) ? -(long long)(v >> 1) : (long long)(v >> 1);
}

/*
 * 3.11+ location table.  Entry header: bit 7 set, bits 6-3 the code, bits
 * 2-0 the entry's length in code units minus one.  Codes 0-9 (short form)
 * keep the line; 10-12 (one-line form) add code - 10; 13 (no column) and 14
 * (long form) add a signed varint; 15 means no location and, unlike a
 * 3.10 "-128", still leaves the running line untouched for later entries.
 * Bytes that cannot start an entry are skipped, which is how a reader
 * resynchronises after garbage; a valid table never has any.
 */
static int addr2line_locations(const uint8_t *t, size_t len, int firstlineno, int addrq)
{
	long long line = firstlineno, end = 0;
	size_t i = 0;

	while (i < len) {
		uint8_t head = t[i++];
		int code = (head >> 3) & 0xf;
		int noline = code == 15;

		if (!(head & LOC_ENTRY_START))
			continue;
		if (code >= 10 && code <= 12)
			line = line_add(line, code - 10);
		else if (code == 13 || code == 14)
			line = line_add(line, loc_svarint(t, len, &i));
		end += ((head & 7) + 1) * 2;
		if (addrq < end)
			return noline ? -1 : line_result(line);
		/* Skip the rest of the payload (columns, end line). */
		while (i < len && !(t[i] & LOC_ENTRY_START))
			i++;
	}
	return -1;
}

int linetable_addr2line(enum linetable_format fmt, const uint8_t *table, size_t len,
			int firstlineno, int byte_offset)
{
	if (byte_offset < 0)
		return firstlineno;
	if (!table)
		len = 0;
	switch (fmt) {
	case LINETABLE_LNOTAB:
		return addr2line_lnotab(table, len, firstlineno, byte_offset);
	case LINETABLE_310:
		return addr2line_310(table, len, firstlineno, byte_offset);
	case LINETABLE_LOCATIONS:
		return addr2line_locations(table, len, firstlineno, byte_offset);
	}
	return -1;
}
