/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The BPF objects built for older kernels (the Makefile's BPF_VARIANTS):
 * with bpf_loop for the walker's loops (profile_loop.bpf.o, kernels without
 * the numeric iterators) and with plain loops (profile_bounded.bpf.o, kernels
 * without bpf_loop); the loader opens them through profile.skel.h (loader.c:
 * open_object).  The paths are the build's, relative to the top of the tree,
 * where make runs.
 */
	.section .rodata
	.global profile_loop_object
	.type profile_loop_object, @object
	.balign 8
profile_loop_object:
	.incbin BPF_LOOP_OBJECT
	.global profile_loop_object_end
profile_loop_object_end:
	.size profile_loop_object, . - profile_loop_object

	.global profile_bounded_object
	.type profile_bounded_object, @object
	.balign 8
profile_bounded_object:
	.incbin BPF_BOUNDED_OBJECT
	.global profile_bounded_object_end
profile_bounded_object_end:
	.size profile_bounded_object, . - profile_bounded_object
	.section .note.GNU-stack, "", %progbits
