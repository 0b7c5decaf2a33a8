/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The probes of the libraries loaded into profiled programs (the allocation
 * sampler, sampler.h; the GPU library, gpu.h): each is an exported function
 * named SCALENE_BPF_PROBE_PREFIX and the probe's name, called when there is
 * something to report, at whose entry the loader places a uprobe and reads
 * the arguments where the C calling convention passes them.
 */
#ifndef SCALENE_BPF_PROBES_H
#define SCALENE_BPF_PROBES_H

#define SCALENE_BPF_PROBE_PREFIX "scalene_bpf_probe_"

/* Never cloned: GCC's attribute; clang makes no clones of a function that
 * is not inlined (the wheel's libraries are built with clang, through zig). */
#if defined(__clang__)
#define SCALENE_BPF_NOCLONE
#else
#define SCALENE_BPF_NOCLONE noclone,
#endif

/*
 * The instruction at a probe's entry, where the uprobe goes, decides what a
 * hit costs.  An instruction the kernel cannot emulate (the `ret` an empty C
 * function compiles to, an endbr64) is stepped out of line: a breakpoint
 * trap and then a debug trap, 12-15 us of system time in the profiled thread
 * per hit on a virtual machine, which the profile then showed as that line's
 * system time.  A one-byte nop is emulated: one trap, no step.  Not a 5-byte
 * nop: Linux 6.18 on x86-64 rewrites a uprobed nop5 after its first hit into
 * a call to a trampoline page, and a child forked after that inherits the
 * call but not the page (measured on 6.18.44: every fork child that reached
 * a probe died of SIGSEGV at the trampoline's address).  So each probe is a
 * naked function, its entry that nop, then a return: no prologue of the
 * compiler's comes first.
 *
 * Exported, so that the loader finds it in .dynsym and the compiler, which
 * must assume it can be interposed, neither drops a call to it nor leaves out
 * an argument; never inlined or cloned, so that each call enters that one
 * function.  Written as
 *
 *	SCALENE_BPF_PROBE_FN void scalene_bpf_probe_x(uint64_t a, void *b)
 *	{
 *		SCALENE_BPF_PROBE_BODY;
 *	}
 */
#define SCALENE_BPF_PROBE_FN \
	__attribute__((visibility("default"), noinline, SCALENE_BPF_NOCLONE used, naked))
#if defined(__x86_64__)
#define SCALENE_BPF_PROBE_ENTRY_BYTES 0x90 /* nop */
#elif defined(__aarch64__)
#define SCALENE_BPF_PROBE_ENTRY_BYTES 0x1f, 0x20, 0x03, 0xd5 /* nop */
#else
#error "the probes' entry instruction is written for x86-64 and arm64 only"
#endif
#define SCALENE_BPF_PROBE_STR_(...) #__VA_ARGS__
#define SCALENE_BPF_PROBE_STR(...) SCALENE_BPF_PROBE_STR_(__VA_ARGS__)
#define SCALENE_BPF_PROBE_BODY \
	__asm__ __volatile__(  \
		".byte " SCALENE_BPF_PROBE_STR(SCALENE_BPF_PROBE_ENTRY_BYTES) "\n\tret")

#endif
