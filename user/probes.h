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
 * Exported, so that the loader finds it in .dynsym and the compiler, which
 * must assume it can be interposed, neither drops a call to it nor leaves out
 * an argument; never inlined or cloned, so that each call enters that one
 * function.  The body does nothing.
 */
#define SCALENE_BPF_PROBE_FN __attribute__((visibility("default"), noinline, noclone, used))
#define SCALENE_BPF_PROBE_BODY __asm__ __volatile__("" ::: "memory")

#endif
