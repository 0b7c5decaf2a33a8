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

/*
 * The instruction at a probe's entry, where the uprobe goes, decides what a
 * hit costs.  An instruction the kernel cannot emulate (the `ret` an empty C
 * function compiles to, an endbr64, a push on older kernels) is stepped out
 * of line: a breakpoint trap and then a debug trap, some 15-20 us of system
 * time in the profiled thread per hit on a virtual machine, which the
 * profile then shows as that line's system time.  A 5-byte nop is emulated
 * on every kernel with uprobes, and from Linux 6.18 on x86-64 the kernel
 * rewrites it after the first hit into a call to a trampoline that enters
 * the kernel by a system call, with no trap at all.  So each probe is a
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
#define SCALENE_BPF_PROBE_FN __attribute__((visibility("default"), noinline, noclone, used, naked))
#if defined(__x86_64__)
#define SCALENE_BPF_PROBE_ENTRY_BYTES 0x0f, 0x1f, 0x44, 0x00, 0x00 /* nopl 0(%rax,%rax,1) */
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
