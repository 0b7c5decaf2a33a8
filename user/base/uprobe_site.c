// SPDX-License-Identifier: BSD-2-Clause
#include <stdio.h>

#include "base/uprobe_site.h"

#define MAX_INSNS 8

/* Register number (0-15) of a ModRM reg or rm field with its REX bit. */
static unsigned int reg_of(unsigned int bits3, int rex_bit)
{
	return (bits3 & 7) | (rex_bit ? 8 : 0);
}

static unsigned int arg_bit(unsigned int reg)
{
	switch (reg) {
	case 7:
		return ARG_RDI;
	case 6:
		return ARG_RSI;
	case 2:
		return ARG_RDX;
	}
	return 0;
}

int uprobe_site(const uint8_t *c, size_t n, unsigned int args, char *why, size_t whylen)
{
	size_t at = 0;
	int i;

	for (i = 0; i < MAX_INSNS && at < n; i++) {
		const uint8_t *p = c + at;
		size_t left = n - at;
		unsigned int rex = 0, op, modrm;

		/* endbr64: a hint, no effect; not emulated itself. */
		if (left >= 4 && p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa) {
			at += 4;
			continue;
		}
		if (p[0] >= 0x40 && p[0] <= 0x4f && left >= 2) {
			rex = p[0];
			p++;
			left--;
		}
		op = p[0];
		/* Emulated: push r64, jcc rel8, jmp rel8/rel32, call rel32. */
		if (op >= 0x50 && op <= 0x57 && (rex == 0 || rex == 0x41))
			return (int)at;
		if (!rex && ((op >= 0x70 && op <= 0x7f) || op == 0xeb || op == 0xe9 || op == 0xe8))
			return (int)at;
		/* jcc rel32 */
		if (!rex && op == 0x0f && left >= 2 && p[1] >= 0x80 && p[1] <= 0x8f)
			return (int)at;
		if (left < 2)
			break;
		modrm = p[1];
		/* test r, r (85 /r) and cmp r, r (39/3b /r), register forms:
		 * flags only. */
		if ((op == 0x85 || op == 0x39 || op == 0x3b) && (modrm >> 6) == 3) {
			at += (rex ? 1 : 0) + 2;
			continue;
		}
		/* mov r, r (89 /r): fine unless it writes an argument we read. */
		if (op == 0x89 && (modrm >> 6) == 3) {
			unsigned int dst = reg_of(modrm, rex & 1);

			if (arg_bit(dst) & args)
				break;
			at += (rex ? 1 : 0) + 2;
			continue;
		}
		/* sub/add imm8, %rsp (48 83 ec/c4 ib) and imm32 (48 81 ec/c4 id). */
		if (rex == 0x48 && (op == 0x83 || op == 0x81) && (modrm == 0xec || modrm == 0xc4)) {
			at += 1 + 2 + (op == 0x83 ? 1 : 4);
			continue;
		}
		break;
	}
	snprintf(why, whylen,
		 "no instruction the kernel emulates at the start of the function (bytes %02x %02x "
		 "%02x %02x at +%zu)",
		 at < n ? c[at] : 0, at + 1 < n ? c[at + 1] : 0, at + 2 < n ? c[at + 2] : 0,
		 at + 3 < n ? c[at + 3] : 0, at);
	return -1;
}
