/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Where a thread-local variable lies relative to a thread's pointer (x86-64
 * fsbase), found in the code of a function that returns it: CPython 3.15
 * keeps each thread's bound PyThreadState in a thread-local and publishes
 * no offset for it, but PyGILState_GetThisThreadState() is exported and
 * reads nothing else.
 */
#ifndef TLSSLOT_H
#define TLSSLOT_H

#include <stddef.h>
#include <stdint.h>

/*
 * The code at the start of a function that returns one thread-local
 * pointer, as the compiler emits it for each TLS model (an endbr64, a
 * frame-pointer prologue and a stack adjustment are skipped):
 *   local-exec (the executable's own):   mov rax, fs:[imm32]
 *   initial-exec (a library loaded with the program):
 *                                        mov rax, [rip + got]; mov rax, fs:[rax]
 *   general-dynamic:                     lea rdi, [rip + got]; call __tls_get_addr
 * TLS_CODE_LOCAL_EXEC gives the offset itself; the others the link-time
 * address of their GOT entry (relative to the code's own address `vaddr`).
 */
enum tls_code {
	TLS_CODE_UNKNOWN,
	TLS_CODE_LOCAL_EXEC,
	TLS_CODE_INITIAL_EXEC,
	TLS_CODE_GENERAL_DYNAMIC,
};

struct tls_access {
	enum tls_code kind;
	int64_t off;  /* LOCAL_EXEC: the variable at fsbase + off */
	uint64_t got; /* INITIAL_EXEC: its tp offset; GENERAL_DYNAMIC: module id, then offset */
};

/* Decodes the n bytes of code at link-time address vaddr. */
struct tls_access tls_decode(const uint8_t *code, size_t n, uint64_t vaddr);

/*
 * The offset from fsbase of the variable that `func` (an exported function
 * of e, loaded at bias in pid) returns, in the thread whose fsbase is tp:
 * 0, or -ENOENT (no such function), -ENOTSUP (code of another shape), or
 * -errno of a read.  The offset is the same in every thread of the process
 * for a variable in the static TLS block (the executable's and the
 * libraries loaded with it).
 */
struct elf_file;
int tls_slot_offset(const struct elf_file *e, uint64_t bias, int pid, uint64_t tp, const char *func,
		    int64_t *off);

#endif /* TLSSLOT_H */
