// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <sys/uio.h>

#include "base/memread.h"

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

int mem_write(int pid, uint64_t addr, const void *buf, size_t len)
{
	struct iovec local = { .iov_base = (void *)buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t n;

	if (!len)
		return 0;
	n = process_vm_writev(pid, &local, 1, &remote, 1, 0);
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

/* Remote pieces per process_vm_readv call (the kernel's UIO_MAXIOV). */
#define READV_MAX 1024

int mem_read_many(int pid, struct mem_piece *p, size_t n)
{
	struct iovec local[READV_MAX], remote[READV_MAX];
	size_t i = 0;

	while (i < n) {
		size_t k, m = n - i < READV_MAX ? n - i : READV_MAX;
		ssize_t got;

		for (k = 0; k < m; k++) {
			local[k] = (struct iovec){ p[i + k].buf, p[i + k].len };
			remote[k] =
				(struct iovec){ (void *)(uintptr_t)p[i + k].addr, p[i + k].len };
		}
		got = process_vm_readv(pid, local, m, remote, m, 0);
		if (got < 0 && errno != EFAULT)
			return -errno;
		if (got < 0)
			got = 0;
		/* The call stops at the first piece it cannot read whole:
		 * those before it are done, that one failed, and the rest are
		 * read by the next call. */
		for (k = 0; k < m && (size_t)got >= p[i + k].len; k++) {
			got -= (ssize_t)p[i + k].len;
			p[i + k].err = 0;
		}
		if (k < m) {
			p[i + k].err = -EFAULT;
			k++;
		}
		i += k;
	}
	return 0;
}
