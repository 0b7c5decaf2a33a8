/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The asyncio layout probe (user/session/asyncprobe.py) built into the binary as a
 * NUL-terminated string for user/session/asyncprobe.c.  The path is relative to the
 * top of the tree, where make runs.
 */
	.section .rodata
	.global asyncprobe_script
	.type asyncprobe_script, @object
asyncprobe_script:
	.incbin "user/session/asyncprobe.py"
	.byte 0
	.size asyncprobe_script, . - asyncprobe_script

	.section .note.GNU-stack, "", %progbits
