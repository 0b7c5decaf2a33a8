// SPDX-License-Identifier: BSD-2-Clause
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "loader.h"
#include "sampler.h"
#include "log.h"
#include "profile.skel.h"

_Static_assert(sizeof(struct py_walk_cfg) == 40, "py_walk_cfg layout");
_Static_assert(sizeof(struct proc_info) == 56, "proc_info layout");
_Static_assert(sizeof(struct py_frame) == 24, "py_frame layout");
_Static_assert(SAMPLE_HDR_SIZE == 88, "sample_event header layout");
_Static_assert(sizeof(struct proc_record) == 40, "proc_record layout");
_Static_assert(sizeof(struct sampler_record) == 40 + SAMPLER_STATE_BYTES, "sampler_record layout");
_Static_assert(sizeof(struct scalene_bpf_sampler_state) == SAMPLER_STATE_BYTES,
	       "sampler state block size");

struct loader {
	struct profile_bpf *skel;
	struct ring_buffer *rb;
	struct bpf_link **links;
	struct bpf_link *usdt_links[5];
	int *pfds;
	int ncpus;
	uint64_t period_ns;
};

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* libbpf's own chatter only at -vv. */
	if (level == LIBBPF_DEBUG && log_get_level() < LOG_DEBUG)
		return 0;
	if (level == LIBBPF_INFO && log_get_level() < LOG_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int open_perf_event(int cpu, uint64_t period_ns)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		/* cpu-clock: a timer, so it works in VMs without PMU access. */
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = period_ns,
	};

	return syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static const char *privilege_hint(int err)
{
	if ((err == EPERM || err == EACCES) && geteuid() != 0)
		return " (run as root, or grant CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE)";
	return "";
}

static int attach_perf(struct loader *l)
{
	int cpu, fd, err, attached = 0;

	l->ncpus = libbpf_num_possible_cpus();
	if (l->ncpus <= 0)
		return l->ncpus ? l->ncpus : -EINVAL;
	l->pfds = calloc(l->ncpus, sizeof(int));
	l->links = calloc(l->ncpus, sizeof(*l->links));
	if (!l->pfds || !l->links)
		return -ENOMEM;
	for (cpu = 0; cpu < l->ncpus; cpu++) {
		l->pfds[cpu] = -1;
		fd = open_perf_event(cpu, l->period_ns);
		if (fd < 0) {
			err = -errno;
			if (err == -ENODEV) /* possible but offline */
				continue;
			pr_warn("failed to open the cpu-clock perf event on CPU %d: %s%s\n", cpu,
				strerror(-err), privilege_hint(-err));
			return err;
		}
		l->pfds[cpu] = fd;
		l->links[cpu] = bpf_program__attach_perf_event(l->skel->progs.on_cpu_sample, fd);
		if (!l->links[cpu]) {
			err = -errno;
			pr_warn("failed to attach the sampler to CPU %d: %s\n", cpu,
				strerror(-err));
			return err;
		}
		attached++;
	}
	return attached ? 0 : -ENODEV;
}

static int attach_sampler(struct loader *l, const char *path)
{
	struct {
		struct bpf_program *prog;
		const char *name;
	} probes[] = {
		{ l->skel->progs.on_sampler_init, "init" }, { l->skel->progs.on_malloc, "malloc" },
		{ l->skel->progs.on_free, "free" },	    { l->skel->progs.on_memcpy, "memcpy" },
		{ l->skel->progs.on_sampler_exit, "exit" },
	};
	size_t i;
	int err;

	_Static_assert(sizeof(probes) / sizeof(probes[0]) ==
			       sizeof(l->usdt_links) / sizeof(l->usdt_links[0]),
		       "one link per probe");
	for (i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		/* No PID: every process that maps the library, fork children
		 * included; the programs keep only tracked processes. */
		l->usdt_links[i] = bpf_program__attach_usdt(
			probes[i].prog, -1, path, SCALENE_BPF_USDT_PROVIDER, probes[i].name, NULL);
		if (!l->usdt_links[i]) {
			err = -errno;
			pr_warn("failed to attach to the allocation sampler's probe %s in %s: %s\n",
				probes[i].name, path, strerror(-err));
			return err;
		}
	}
	return 0;
}

struct loader *loader__open(const struct loader_opts *opts)
{
	struct loader *l;
	int err;

	libbpf_set_print(libbpf_print);
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		pr_warn("this kernel has no BTF (/sys/kernel/btf/vmlinux is missing); "
			"a kernel built with CONFIG_DEBUG_INFO_BTF=y is needed\n");
		errno = ENOTSUP;
		return NULL;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		errno = ENOMEM;
		return NULL;
	}
	l->period_ns = 1000000000ULL / (opts->rate_hz ? opts->rate_hz : 1);
	l->skel = profile_bpf__open();
	if (!l->skel) {
		err = -errno;
		pr_warn("failed to open the BPF object: %s\n", strerror(-err));
		goto fail;
	}
	l->skel->rodata->sample_period_ns = l->period_ns;
	l->skel->rodata->follow_children = opts->follow_children;
	l->skel->rodata->tick_ns = 1000000000ULL / sysconf(_SC_CLK_TCK);
	bpf_map__set_max_entries(l->skel->maps.procs, opts->max_procs);
	bpf_map__set_max_entries(l->skel->maps.events, opts->ringbuf_bytes);
	if (!opts->sampler_path) {
		bpf_program__set_autoload(l->skel->progs.on_sampler_init, false);
		bpf_program__set_autoload(l->skel->progs.on_malloc, false);
		bpf_program__set_autoload(l->skel->progs.on_free, false);
		bpf_program__set_autoload(l->skel->progs.on_memcpy, false);
		bpf_program__set_autoload(l->skel->progs.on_sampler_exit, false);
	}
	err = profile_bpf__load(l->skel);
	if (err) {
		pr_warn("failed to load the BPF programs: %s%s\n", strerror(-err),
			privilege_hint(-err));
		goto fail;
	}
	err = profile_bpf__attach(l->skel);
	if (err) {
		pr_warn("failed to attach the BPF tracepoints: %s%s\n", strerror(-err),
			privilege_hint(-err));
		goto fail;
	}
	if (opts->sampler_path) {
		err = attach_sampler(l, opts->sampler_path);
		if (err)
			goto fail;
	}
	err = attach_perf(l);
	if (err)
		goto fail;
	l->rb = ring_buffer__new(bpf_map__fd(l->skel->maps.events),
				 (ring_buffer_sample_fn)opts->on_event, opts->ctx, NULL);
	if (!l->rb) {
		err = -errno;
		pr_warn("failed to create the ring buffer reader: %s\n", strerror(-err));
		goto fail;
	}
	return l;
fail:
	loader__free(l);
	errno = -err;
	return NULL;
}

void loader__free(struct loader *l)
{
	int cpu;

	if (!l)
		return;
	ring_buffer__free(l->rb);
	for (cpu = 0; cpu < (int)(sizeof(l->usdt_links) / sizeof(l->usdt_links[0])); cpu++)
		bpf_link__destroy(l->usdt_links[cpu]);
	for (cpu = 0; l->links && cpu < l->ncpus; cpu++)
		bpf_link__destroy(l->links[cpu]);
	for (cpu = 0; l->pfds && cpu < l->ncpus; cpu++) {
		if (l->pfds[cpu] >= 0)
			close(l->pfds[cpu]);
	}
	free(l->links);
	free(l->pfds);
	profile_bpf__destroy(l->skel);
	free(l);
}

int loader__track(struct loader *l, int tgid, uint64_t start_time)
{
	struct proc_info info = { .start_time = start_time };
	__u32 key = tgid;

	if (bpf_map_update_elem(bpf_map__fd(l->skel->maps.procs), &key, &info, BPF_ANY))
		return -errno;
	return 0;
}

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif

int loader__seed_threads(struct loader *l, int tgid)
{
	int map_fd = bpf_map__fd(l->skel->maps.threads), seeded = 0, fd;
	struct tracked_thread zero = {};
	char path[64];
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", tgid);
	dir = opendir(path);
	if (!dir)
		return -errno;
	while ((d = readdir(dir)) != NULL) {
		int tid = atoi(d->d_name);

		if (tid <= 0)
			continue;
		/* PIDFD_THREAD (6.9+) names a thread; older kernels only take the
		 * leader, and other threads get their state at their first sample. */
		fd = syscall(SYS_pidfd_open, tid, tid == tgid ? 0 : PIDFD_THREAD);
		if (fd < 0)
			continue;
		if (!bpf_map_update_elem(map_fd, &fd, &zero, BPF_NOEXIST))
			seeded++;
		close(fd);
	}
	closedir(dir);
	return seeded;
}

int loader__untrack(struct loader *l, int tgid)
{
	__u32 key = tgid;

	if (bpf_map_delete_elem(bpf_map__fd(l->skel->maps.procs), &key) && errno != ENOENT)
		return -errno;
	return 0;
}

int loader__set_python(struct loader *l, int tgid, const struct py_walk_cfg *cfg)
{
	int fd = bpf_map__fd(l->skel->maps.procs);
	struct proc_info info;
	__u32 key = tgid;

	if (bpf_map_lookup_elem(fd, &key, &info))
		return -errno;
	info.cfg = *cfg;
	info.has_cfg = 1;
	if (bpf_map_update_elem(fd, &key, &info, BPF_EXIST))
		return -errno;
	return 0;
}

int loader__poll(struct loader *l, int timeout_ms)
{
	/* Samples are submitted without wake-ups, and a record submitted with
	 * one behind unconsumed records wakes no one either: wait, then always
	 * drain. */
	int n = ring_buffer__poll(l->rb, timeout_ms);

	if (n < 0 && n != -EINTR)
		return n;
	return ring_buffer__consume(l->rb);
}

int loader__drain(struct loader *l)
{
	return ring_buffer__consume(l->rb);
}

int loader__stats(struct loader *l, uint64_t *out)
{
	int fd = bpf_map__fd(l->skel->maps.stats);
	int ncpu = libbpf_num_possible_cpus(), cpu;
	uint64_t *vals;
	__u32 id;

	vals = calloc(ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (id = 0; id < STAT_MAX; id++) {
		out[id] = 0;
		if (bpf_map_lookup_elem(fd, &id, vals))
			continue;
		for (cpu = 0; cpu < ncpu; cpu++)
			out[id] += vals[cpu];
	}
	free(vals);
	return 0;
}

uint64_t loader__period_ns(const struct loader *l)
{
	return l->period_ns;
}

int loader__prog_runtime(struct loader *l, uint64_t *run_ns, uint64_t *run_cnt)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	int err;

	err = bpf_obj_get_info_by_fd(bpf_program__fd(l->skel->progs.on_cpu_sample), &info, &len);
	if (err)
		return -errno;
	*run_ns = info.run_time_ns;
	*run_cnt = info.run_cnt;
	return 0;
}

uint64_t proc_start_ticks(int pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ticks = 0;
	long hz = sysconf(_SC_CLK_TCK);
	FILE *f;
	size_t n;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* comm may hold spaces and parentheses: fields resume after the last ')'. */
	p = strrchr(buf, ')');
	if (!p)
		return 0;
	for (i = 2; i < 22 && p; i++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &ticks) != 1 || hz <= 0)
		return 0;
	return ticks;
}
