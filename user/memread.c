// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <sys/uio.h>

#include "memread.h"

int mem_read(int pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t n;

	if (!len)
		return 0;
	/* process_vm_readv faults pages in, unlike a BPF read. */
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

int mem_read_u64(int pid, uint64_t addr, uint64_t *v)
{
	return mem_read(pid, addr, v, sizeof(*v));
}

int mem_read_u32(int pid, uint64_t addr, uint32_t *v)
{
	return mem_read(pid, addr, v, sizeof(*v));
}
