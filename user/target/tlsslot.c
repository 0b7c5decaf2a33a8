// SPDX-License-Identifier: BSD-2-Clause
/* A thread-local variable's offset from the thread pointer (tlsslot.h). */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "base/elfsym.h"
#include "base/memread.h"
#include "target/tlsslot.h"

/* glibc x86-64: the thread control block starts with itself, then the
 * dynamic thread vector, whose entry i (16 bytes) starts with the address
 * of module i's TLS block. */
#define TCB_DTV 8
#define DTV_ENTRY 16

static int32_t le32(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
			 (uint32_t)p[3] << 24);
}

static bool starts(const uint8_t *p, const uint8_t *end, const uint8_t *pat, size_t n)
{
	return (size_t)(end - p) >= n && !memcmp(p, pat, n);
}

struct tls_access tls_decode(const uint8_t *code, size_t n, uint64_t vaddr)
{
	static const uint8_t endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };
	static const uint8_t push_rbp[] = { 0x55, 0x48, 0x89, 0xe5 }; /* push rbp; mov rbp, rsp */
	static const uint8_t sub_rsp[] = { 0x48, 0x83, 0xec };	      /* sub rsp, imm8 */
	static const uint8_t mov_fs_abs[] = { 0x64, 0x48, 0x8b, 0x04, 0x25 };
	static const uint8_t mov_rip[] = { 0x48, 0x8b, 0x05 };
	static const uint8_t mov_fs_rax[] = { 0x64, 0x48, 0x8b, 0x00 };
	static const uint8_t lea_rdi_rip[] = { 0x66, 0x48, 0x8d, 0x3d };
	static const uint8_t call_pfx[] = { 0x66, 0x66, 0x48, 0xe8 };
	const uint8_t *p = code, *end = code + n;
	struct tls_access a = { TLS_CODE_UNKNOWN, 0, 0 };

	if (starts(p, end, endbr64, sizeof(endbr64)))
		p += sizeof(endbr64);
	if (starts(p, end, push_rbp, sizeof(push_rbp)))
		p += sizeof(push_rbp);
	if (starts(p, end, sub_rsp, sizeof(sub_rsp)) && end - p >= 4)
		p += 4;
	if (starts(p, end, mov_fs_abs, sizeof(mov_fs_abs)) && end - p >= 9) {
		a.kind = TLS_CODE_LOCAL_EXEC;
		a.off = le32(p + 5);
	} else if (starts(p, end, mov_rip, sizeof(mov_rip)) &&
		   starts(p + 7, end, mov_fs_rax, sizeof(mov_fs_rax))) {
		a.kind = TLS_CODE_INITIAL_EXEC;
		a.got = vaddr + (uint64_t)(p + 7 - code) + (int64_t)le32(p + 3);
	} else if (starts(p, end, lea_rdi_rip, sizeof(lea_rdi_rip)) &&
		   starts(p + 8, end, call_pfx, sizeof(call_pfx))) {
		a.kind = TLS_CODE_GENERAL_DYNAMIC;
		a.got = vaddr + (uint64_t)(p + 8 - code) + (int64_t)le32(p + 4);
	}
	return a;
}

int tls_slot_offset(const struct elf_file *e, uint64_t bias, int pid, uint64_t tp, const char *func,
		    int64_t *off)
{
	uint64_t vaddr, foff, v, modid, dtpoff, dtv, block;
	uint8_t code[32];
	struct tls_access a;
	int err;

	if (elf_file__find_symbol(e, func, &vaddr, NULL))
		return -ENOENT;
	err = elf_file__vaddr_to_offset(e, vaddr, &foff);
	if (!err)
		err = elf_file__read(e, foff, code, sizeof(code));
	if (err)
		return err;
	a = tls_decode(code, sizeof(code), vaddr);
	switch (a.kind) {
	case TLS_CODE_LOCAL_EXEC:
		*off = a.off;
		return 0;
	case TLS_CODE_INITIAL_EXEC:
		/* The dynamic loader wrote the offset into the GOT. */
		err = mem_read_u64(pid, bias + a.got, &v);
		if (err)
			return err;
		*off = (int64_t)v;
		return 0;
	case TLS_CODE_GENERAL_DYNAMIC:
		/* The module's block in this thread, through its vector: a
		 * module loaded with the program has its block at one offset
		 * from every thread's pointer. */
		err = mem_read_u64(pid, bias + a.got, &modid);
		if (!err)
			err = mem_read_u64(pid, bias + a.got + 8, &dtpoff);
		if (!err)
			err = mem_read_u64(pid, tp + TCB_DTV, &dtv);
		if (!err)
			err = mem_read_u64(pid, dtv + modid * DTV_ENTRY, &block);
		if (err)
			return err;
		*off = (int64_t)(block + dtpoff - tp);
		return 0;
	default:
		return -ENOTSUP;
	}
}
