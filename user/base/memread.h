/* SPDX-License-Identifier: BSD-2-Clause */
/* Reads another process's memory, and writes to it (only where a protocol
 * of the process itself asks for it: PEP 768's request, the injected
 * sampler's control words).  Everything read is untrusted. */
#ifndef MEMREAD_H
#define MEMREAD_H

#include <stddef.h>
#include <stdint.h>

/* Reads exactly len bytes at addr of pid: 0, or -errno (-EFAULT for a short
 * read, -ESRCH when the process is gone). */
int mem_read(int pid, uint64_t addr, void *buf, size_t len);
int mem_read_u64(int pid, uint64_t addr, uint64_t *v);
int mem_read_u32(int pid, uint64_t addr, uint32_t *v);

/* Writes exactly len bytes at addr of pid: 0, or -errno (-EFAULT for a
 * short write, -ESRCH when the process is gone). */
int mem_write(int pid, uint64_t addr, const void *buf, size_t len);

/* One piece of a batched read: addr and len in, err out (0 or -EFAULT). */
struct mem_piece {
	uint64_t addr;
	void *buf;
	size_t len;
	int err;
};

/* Reads every piece, as few system calls as can be: each piece's err says
 * whether it was read whole.  0, or -errno when the process cannot be read
 * at all (-ESRCH: gone). */
int mem_read_many(int pid, struct mem_piece *p, size_t n);

#endif /* MEMREAD_H */
