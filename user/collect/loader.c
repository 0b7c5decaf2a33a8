// SPDX-License-Identifier: BSD-2-Clause
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <inttypes.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "base/clock.h"
#include "base/elfsym.h"
#include "base/ksyms.h"
#include "collect/loader.h"
#include "sampler/sampler.h"
#include "base/log.h"
#include "probes.h"
#include "profile.skel.h"

_Static_assert(sizeof(struct py_walk_cfg) == 248, "py_walk_cfg layout");
_Static_assert(sizeof(struct proc_info) == 288, "proc_info layout");
_Static_assert(sizeof(struct py_frame) == 24, "py_frame layout");
_Static_assert(SAMPLE_HDR_SIZE == 128, "sample_event header layout");
_Static_assert(sizeof(struct proc_record) == 64, "proc_record layout");
_Static_assert(sizeof(struct agg_key) == 32, "agg_key layout");
_Static_assert(sizeof(struct agg_val) == 64, "agg_val layout");
_Static_assert(STACK_HDR_SIZE == 24, "agg_stack_record layout");
_Static_assert(NATIVE_HDR_SIZE == 128 + MAX_FRAMES * 24 + 8 * NATIVE_REGS + 16 + 8 * NATIVE_KFRAMES,
	       "native_sample layout");
_Static_assert(sizeof(struct unwind_row) == 8, "unwind_row layout");
#define UNWIND_ROWS_BYTES ((size_t)UNWIND_ROWS_MAX * sizeof(struct unwind_row))
_Static_assert(sizeof(struct unwind_page) == 8, "unwind_page layout");
#define UNWIND_PAGES_BYTES ((size_t)UNWIND_PAGES_MAX * sizeof(struct unwind_page))
_Static_assert(sizeof(struct unwind_proc) == 8 + 48 * UNWIND_MAPS, "unwind_proc layout");
_Static_assert(sizeof(struct sampler_record) == 40 + SAMPLER_STATE_BYTES, "sampler_record layout");
_Static_assert(sizeof(struct scalene_bpf_sampler_state) == SAMPLER_STATE_BYTES,
	       "sampler state block size");

/* A uprobe at a library's probe function: a uprobe_multi link (fd) or,
 * where the kernel has none, a perf-event one (link). */
struct probe_link {
	struct bpf_link *link;
	int fd;
	bool held;
};

/* How often the sampling timers' periods are drawn again (redraw_periods). */
#define REDRAW_NS (20 * 1000 * 1000ull)
#define REDRAW_HOST_NS (100 * 1000 * 1000ull)

struct loader {
	struct profile_bpf *skel;
	struct ring_buffer *rb;
	int in_record;		     /* inside on_record (the ring buffer is being read) */
	struct ring_buffer *code_rb; /* code_snaps: code objects copied as they were freed */
	struct bpf_link **links;
	struct probe_link sampler_links[5];
	struct probe_link gpu_links[6];
	struct probe_link **alloc_links;
	int nalloc_links;
	struct detacher *detacher;	   /* allocation uprobes let go during the run */
	struct code_probe_job **code_jobs; /* code-deallocator probes placed by threads */
	int ncode_jobs;
	struct loader_link_stats link_stats;
	int *pfds;
	int ncpus;
	uint64_t period_ns;
	/* The timers' periods are drawn anew now and then (see redraw_periods);
	 * next_draw_ns: when next, redraw_ns: how often, rng: the draws' state
	 * (nrand48). */
	uint64_t next_draw_ns, redraw_ns;
	unsigned short rng[3];
	/* Each CPU's count of samples of followed threads at the last draw
	 * (STAT_SAMPLES, per CPU); [ncpus] the read of the count now. */
	uint64_t *drawn_at, *samples_now;
	bool probe_check; /* samples inside uprobe hits are told apart */
	bool offcpu_work; /* off-CPU records by task work (on_switch_work) */
	struct loader_kernel kernel;
	loader_event_fn on_event;
	void *ctx;
	struct counts *counts; /* samples counted in BPF (aggregate) */
	/* --native-unwind bpf: unwind_rows and unwind_pages, mapped. */
	struct unwind_row *unwind_rows;
	struct unwind_page *unwind_pages;
};

#define ARRAY_SIZE_(a) (sizeof(a) / sizeof((a)[0]))

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* libbpf's own chatter only at -vv. */
	if (level == LIBBPF_DEBUG && log_get_level() < LOG_DEBUG)
		return 0;
	if (level == LIBBPF_INFO && log_get_level() < LOG_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

uint64_t loader__period_ns(unsigned int rate_hz)
{
	return 1000000000ULL / (rate_hz ? rate_hz : 1);
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

/* The oldest kernel the BPF side is tested on (tools/vmtest); what it needs
 * first is the ring buffer, Linux 5.8. */
#define OLDEST_KERNEL "Linux 5.10"

/*
 * The offset of a per-CPU variable in the per-CPU area (the section
 * .data..percpu of the kernel's BTF), or -1.  Two variables of one CPU lie
 * that far apart from each other on every CPU.
 */
static int64_t percpu_offset(const struct btf *vmlinux, const char *name)
{
	int id = btf__find_by_name_kind(vmlinux, ".data..percpu", BTF_KIND_DATASEC);
	const struct btf_var_secinfo *v;
	const struct btf_type *sec;
	int i;

	if (id <= 0)
		return -1;
	sec = btf__type_by_id(vmlinux, id);
	v = btf_var_secinfos(sec);
	for (i = 0; i < btf_vlen(sec); i++, v++) {
		const struct btf_type *var = btf__type_by_id(vmlinux, v->type);

		if (var && btf_is_var(var) &&
		    !strcmp(btf__name_by_offset(vmlinux, var->name_off), name))
			return v->offset;
	}
	return -1;
}

/*
 * Where the KVM steal-time area of a CPU (steal_time) lies from the CPU's run
 * queue (runqueues): the BPF programs reach the run queue through the task
 * and read there the time the host has kept the CPU away.  A kernel built
 * without KALLSYMS_ALL has no address for either variable, but its BTF has
 * their places in the per-CPU area.  0 where either is missing (no KVM guest
 * support).
 */
static int64_t steal_from_rq(const struct btf *vmlinux)
{
	int64_t st = percpu_offset(vmlinux, "steal_time"), rq = percpu_offset(vmlinux, "runqueues");

	return st >= 0 && rq >= 0 && st != rq ? st - rq : 0;
}

/*
 * Whether the kernel's sched_switch tracepoint passes prev_state (Linux 5.18
 * added it as a fourth argument): its BTF typedef btf_trace_sched_switch is a
 * pointer to a function of the tracepoint's data and then its arguments.
 */
static bool switch_passes_state(const struct btf *vmlinux)
{
	const struct btf_type *t;
	int id = btf__find_by_name_kind(vmlinux, "btf_trace_sched_switch", BTF_KIND_TYPEDEF);

	if (id <= 0)
		return false;
	t = btf__type_by_id(vmlinux, id);
	t = t && btf_is_typedef(t) ? btf__type_by_id(vmlinux, t->type) : NULL;
	t = t && btf_is_ptr(t) ? btf__type_by_id(vmlinux, t->type) : NULL;
	return t && btf_is_func_proto(t) && btf_vlen(t) >= 5;
}

/*
 * The size of a task's kernel stack, where the user registers sit at the top
 * (x86_64's THREAD_SIZE): 16 KiB, doubled by KASAN, which the kernel's
 * configuration says where it is installed.  Used only where
 * bpf_task_pt_regs is missing (before Linux 5.15); a wrong size reads no user
 * frame there, and the BPF side checks for one.
 */
static uint64_t kernel_stack_size(const char *release)
{
	uint64_t size = 16384;
	char path[128], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/boot/config-%s", release);
	f = fopen(path, "re");
	if (!f)
		return size;
	while (fgets(line, sizeof(line), f)) {
		if (!strcmp(line, "CONFIG_KASAN=y\n"))
			size *= 2;
	}
	fclose(f);
	return size;
}

/* The BPF build's name: "iterators", "bpf_loop", "bounded" ("none"). */
static const char *loops_name(enum loader_loops loops)
{
	switch (loops) {
	case LOADER_LOOPS_ITER:
		return "iterators";
	case LOADER_LOOPS_BPF_LOOP:
		return "bpf_loop";
	case LOADER_LOOPS_BOUNDED:
		return "bounded";
	default:
		return "none";
	}
}

/*
 * What this kernel has that the BPF side chooses by, read from its BTF and
 * its answers, never from its version: the walker's loops (the numeric
 * iterator kfuncs, Linux 6.4; else the bpf_loop helper, 5.17; else plain
 * loops, each another build of the same programs, profile.bpf.c), off-CPU
 * records by task work (the kfunc, 6.18; else at every system call exit, or
 * with SCALENE_BPF_SYSCALL_EXIT=1) and sched_switch's prev_state (5.18; else
 * the state is read from the task, or with SCALENE_BPF_SWITCH=task).
 * SCALENE_BPF_LOOPS=bpf_loop or bounded takes that build where a newer one
 * would load.  (The variables are there to measure and test the older paths
 * on a newer kernel.)  Parsing the kernel's BTF takes about 10 ms; the
 * helper's probe loads a program of two instructions.  0, or -ENOTSUP after
 * a message saying what is missing (-errno when no map can be made).
 */
static int probe_kernel(struct loader_kernel *k)
{
	const char *env = getenv("SCALENE_BPF_SYSCALL_EXIT"), *loops = getenv("SCALENE_BPF_LOOPS"),
		   *sw = getenv("SCALENE_BPF_SWITCH");
	struct utsname u;
	struct btf *vmlinux;
	int err;

	memset(k, 0, sizeof(*k));
	snprintf(k->release, sizeof(k->release), "%s", uname(&u) ? "unknown" : u.release);
	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux) {
		pr_warn("this kernel (%s) has no BTF (/sys/kernel/btf/vmlinux: %s; a kernel "
			"built with CONFIG_DEBUG_INFO_BTF=y has it): the BPF programs need it; the "
			"oldest kernel supported is %s with BTF\n",
			k->release, strerror(errno), OLDEST_KERNEL);
		return -ENOTSUP;
	}
	err = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL);
	if (err < 0) {
		/* Not an answer about the kernel: the map could not be made. */
		pr_warn("cannot make a BPF map to learn what this kernel (%s) has: %s%s\n",
			k->release, strerror(-err), privilege_hint(-err));
		btf__free(vmlinux);
		return err;
	}
	if (!err)
		k->loops = LOADER_LOOPS_NONE;
	else if (btf__find_by_name_kind(vmlinux, "bpf_iter_num_new", BTF_KIND_FUNC) > 0 &&
		 !(loops && (!strcmp(loops, "bpf_loop") || !strcmp(loops, "bounded"))))
		k->loops = LOADER_LOOPS_ITER;
	else if (libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_loop, NULL) > 0 &&
		 !(loops && !strcmp(loops, "bounded")))
		k->loops = LOADER_LOOPS_BPF_LOOP;
	else
		k->loops = LOADER_LOOPS_BOUNDED;
	k->task_work = !(env && !strcmp(env, "1")) &&
		       btf__find_by_name_kind(vmlinux, "bpf_task_work_schedule_resume_impl",
					      BTF_KIND_FUNC) > 0;
	k->switch_state = !(sw && !strcmp(sw, "task")) && switch_passes_state(vmlinux);
	k->steal_from_rq = steal_from_rq(vmlinux);
	/* Only the build for 5.10-5.16 finds the registers by it. */
	if (k->loops == LOADER_LOOPS_BOUNDED)
		k->stack_size = kernel_stack_size(k->release);
	btf__free(vmlinux);
	pr_debug("kernel %s: loops by %s, off-CPU records %s, sleep state %s\n", k->release,
		 loops_name(k->loops), k->task_work ? "by task work" : "at system call exit",
		 k->switch_state ? "from sched_switch" : "from the task");
	if (!k->loops) {
		pr_warn("this kernel (%s) has no BPF ring buffer (Linux 5.8): the oldest kernel "
			"supported is %s\n",
			k->release, OLDEST_KERNEL);
		return -ENOTSUP;
	}
	return 0;
}

/* What each fallback stands for: the one place its words live. */
static const struct loader_fallback fallback_bpf_loop = {
	"the numeric iterator kfuncs (Linux 6.4)",
	"the frame walker's loops run by bpf_loop (its build of the programs)",
	"a helper call per frame walked",
};
static const struct loader_fallback fallback_bounded = {
	"bpf_loop (Linux 5.17), task storage and the current task as a BTF pointer (5.11), "
	"bpf_task_pt_regs (5.15)",
	"the build for Linux 5.10-5.16: the walk's steps as calls of one global function, thread "
	"state in a preallocated hash map by thread id, task fields by probe reads, the user "
	"registers found at the top of the kernel stack",
	"a function call per frame walked and a few probe reads per sample; 16384 threads "
	"followed at most (those past it are counted as thread_state_unavailable)",
};
static const struct loader_fallback fallback_task_work = {
	"BPF task work (Linux 6.18)",
	"off-CPU records made at every system call exit (the sys_exit tracepoint)",
	"about 150 ns per system call of every process on the host while a profile is taken",
};
static const struct loader_fallback fallback_switch_state = {
	"sched_switch's prev_state argument (Linux 5.18)",
	"the sleep state read from the task at the switch",
	"none measurable: a block is missed only if its wakeup came between the switch's decision "
	"and the read, when it is already over",
};
static const struct loader_fallback fallback_uprobe_multi = {
	"uprobe_multi links (Linux 6.6)",
	"a perf-event uprobe per probed function",
	"attaching and detaching take longer, and without root they need CAP_SYS_ADMIN",
};

void loader__kernel_report(const struct loader *l, struct loader_kernel_report *out)
{
	const struct loader_kernel *k = &l->kernel;
	int n = 0;

	memset(out, 0, sizeof(*out));
	out->release = k->release;
	out->build = loops_name(k->loops);
	out->sleep_state = k->switch_state ? "sched_switch" : "task";
	out->offcpu_hook = loader__offcpu_hook(l);
	out->uprobes = loader__probe_links();
	if (k->loops == LOADER_LOOPS_BPF_LOOP)
		out->fallbacks[n++] = fallback_bpf_loop;
	if (k->loops == LOADER_LOOPS_BOUNDED)
		out->fallbacks[n++] = fallback_bounded;
	if (!l->offcpu_work)
		out->fallbacks[n++] = fallback_task_work;
	if (!k->switch_state)
		out->fallbacks[n++] = fallback_switch_state;
	if (out->uprobes && !strcmp(out->uprobes, "perf_event"))
		out->fallbacks[n++] = fallback_uprobe_multi;
	out->nfallbacks = n;
}

/* The BPF object for the kernel: the skeleton's own (iterators), or the
 * same source built for older kernels, whose maps, programs and variables
 * are the skeleton's (the Makefile checks it), embedded beside it. */
extern const char profile_loop_object[], profile_loop_object_end[];
extern const char profile_bounded_object[], profile_bounded_object_end[];

static struct profile_bpf *open_object(enum loader_loops loops)
{
	struct profile_bpf *obj = calloc(1, sizeof(*obj));
	int err;

	if (!obj) {
		errno = ENOMEM;
		return NULL;
	}
	err = profile_bpf__create_skeleton(obj);
	if (!err && loops == LOADER_LOOPS_BPF_LOOP) {
		obj->skeleton->data = (void *)profile_loop_object;
		obj->skeleton->data_sz = profile_loop_object_end - profile_loop_object;
	} else if (!err && loops == LOADER_LOOPS_BOUNDED) {
		obj->skeleton->data = (void *)profile_bounded_object;
		obj->skeleton->data_sz = profile_bounded_object_end - profile_bounded_object;
	}
	if (!err)
		err = bpf_object__open_skeleton(obj->skeleton, NULL);
	if (err) {
		profile_bpf__destroy(obj);
		errno = -err;
		return NULL;
	}
	return obj;
}

static int attach_perf(struct loader *l)
{
	int cpu, fd, err, attached = 0;

	l->ncpus = libbpf_num_possible_cpus();
	if (l->ncpus <= 0)
		return l->ncpus ? l->ncpus : -EINVAL;
	l->pfds = calloc(l->ncpus, sizeof(int));
	l->links = calloc(l->ncpus, sizeof(*l->links));
	l->drawn_at = calloc(l->ncpus, sizeof(*l->drawn_at));
	l->samples_now = calloc(l->ncpus, sizeof(*l->samples_now));
	if (!l->pfds || !l->links || !l->drawn_at || !l->samples_now)
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

/*
 * Uprobes at the probe functions of the libraries loaded into profiled
 * programs (probes.h), one link per program, for every process that maps the
 * library: the programs keep only tracked processes.
 *
 * Where the kernel has them (Linux 6.6+), these are uprobe_multi links.  A
 * perf-event uprobe, the older kind, takes the kernel's global trace-event
 * lock when it is opened, and when it goes holds that lock through several
 * RCU grace periods (seen on 6.18: ~0.3 s a probe, one probe after the
 * other), so any process opening or closing such a probe meanwhile waits: a
 * `run` started within a second or so of another one's end took ~1 s longer.
 * A uprobe_multi link takes no such lock.
 */
static bool uprobe_multi_checked, uprobe_multi_ok;

static int sys_link_create(struct uprobe_multi_attr *attr)
{
	return syscall(__NR_bpf, BPF_LINK_CREATE, attr, sizeof(*attr));
}

/* Whether the kernel creates uprobe_multi links: a link asked for on "/"
 * fails with EBADF (not a regular file) where it does, with EINVAL where the
 * attach type is unknown.  SCALENE_BPF_PERF_UPROBES=1 asks for perf-event
 * uprobes anyway (to compare the two, and to test that path). */
static bool have_uprobe_multi(void)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = ATTACH_UPROBE_MULTI);
	uint64_t offset = 0;
	struct uprobe_multi_attr attr = {
		.attach_type = ATTACH_UPROBE_MULTI,
		.path = (uintptr_t) "/",
		.offsets = (uintptr_t)&offset,
		.cnt = 1,
	};
	const char *env;
	int prog_fd, fd;

	if (uprobe_multi_checked)
		return uprobe_multi_ok;
	uprobe_multi_checked = true;
	env = getenv("SCALENE_BPF_PERF_UPROBES");
	if (env && !strcmp(env, "1")) {
		pr_debug("uprobe_multi links: not used (SCALENE_BPF_PERF_UPROBES=1)\n");
		return false;
	}
	prog_fd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, NULL, "GPL", insns, 2, &opts);
	if (prog_fd < 0)
		return false;
	attr.prog_fd = prog_fd;
	fd = sys_link_create(&attr);
	uprobe_multi_ok = fd < 0 && errno == EBADF;
	if (fd >= 0)
		close(fd);
	close(prog_fd);
	pr_debug("uprobe_multi links: %s\n", uprobe_multi_ok ? "yes" : "no (perf-event uprobes)");
	return uprobe_multi_ok;
}

const char *loader__probe_links(void)
{
	if (!uprobe_multi_checked)
		return NULL;
	return uprobe_multi_ok ? "uprobe_multi" : "perf_event";
}

/* Before the load: a program for uprobe_multi links says so. */
static void probe_prog_prepare(struct bpf_program *prog)
{
	if (have_uprobe_multi())
		bpf_program__set_expected_attach_type(prog, ATTACH_UPROBE_MULTI);
}

/* The file offset of the probe function `name` in the library at path. */
static int probe_offset(const struct elf_file *e, const char *path, const char *name, uint64_t *off)
{
	char sym[128];
	uint64_t vaddr;
	int err;

	snprintf(sym, sizeof(sym), "%s%s", SCALENE_BPF_PROBE_PREFIX, name);
	err = elf_file__find_symbol(e, sym, &vaddr, NULL);
	if (!err)
		err = elf_file__vaddr_to_offset(e, vaddr, off);
	if (err)
		pr_warn("%s has no probe function %s: it is not a library of this build of "
			"scalene-bpf\n",
			path, sym);
	return err;
}

static const uint8_t probe_entry[] = { SCALENE_BPF_PROBE_ENTRY_BYTES };

int loader__probe_entry_check(const struct elf_file *e, uint64_t off)
{
	uint8_t c[sizeof(probe_entry)];
	int err = elf_file__read(e, off, c, sizeof(c));

	if (err)
		return err;
	return memcmp(c, probe_entry, sizeof(c)) ? -EINVAL : 0;
}

/* One uprobe: prog at file offset off of path, for process pid (-1: every
 * process that maps the file). */
static int attach_probe(struct bpf_program *prog, int pid, const char *path, uint64_t off,
			struct probe_link *out)
{
	if (have_uprobe_multi()) {
		struct uprobe_multi_attr attr = {
			.prog_fd = bpf_program__fd(prog),
			.attach_type = ATTACH_UPROBE_MULTI,
			.path = (uintptr_t)path,
			.offsets = (uintptr_t)&off,
			.cnt = 1,
			.pid = pid > 0 ? pid : 0,
		};

		out->fd = sys_link_create(&attr);
		if (out->fd < 0)
			return -errno;
	} else {
		out->link = bpf_program__attach_uprobe(prog, false, pid, path, off);
		if (!out->link)
			return -errno;
	}
	out->held = true;
	return 0;
}

static void probe_link_destroy(struct probe_link *pl)
{
	if (!pl->held)
		return;
	if (pl->link)
		bpf_link__destroy(pl->link);
	else
		close(pl->fd);
	pl->held = false;
}

static void probe_link_free(struct probe_link *pl)
{
	if (pl)
		probe_link_destroy(pl);
	free(pl);
}

/* Attaches progs[i] to the probe function names[i] of the library at path;
 * what is attached is released by the caller. */
static int attach_probes(const char *what, const char *path, const char *const *names,
			 struct bpf_program *const *progs, struct probe_link *links, size_t n)
{
	struct elf_file *e = elf_file__open(path);
	uint64_t off;
	size_t i;
	int err = 0;

	if (!e) {
		err = -errno;
		pr_warn("cannot read %s (%s): %s\n", what, path, strerror(-err));
		return err;
	}
	for (i = 0; i < n; i++) {
		err = probe_offset(e, path, names[i], &off);
		if (err)
			break;
		if (loader__probe_entry_check(e, off))
			pr_warn("the probe %s%s of %s does not begin with the nop of probes.h: "
				"each hit will cost two traps instead of one (some 10 us "
				"more); rebuild the library with this build's probes.h\n",
				SCALENE_BPF_PROBE_PREFIX, names[i], path);
		err = attach_probe(progs[i], -1, path, off, &links[i]);
		if (err) {
			pr_warn("failed to attach to %s's probe %s in %s: %s\n", what, names[i],
				path, strerror(-err));
			/* Measured: the kernel refuses perf-event uprobes to
			 * CAP_BPF + CAP_PERFMON alone. */
			if ((err == -EACCES || err == -EPERM) && geteuid() != 0)
				pr_warn("profiling memory and the GPU places uprobes, which as "
					"perf-event uprobes need CAP_SYS_ADMIN besides CAP_BPF and "
					"CAP_PERFMON (uprobe_multi links, Linux 6.6+, do not); run "
					"as root, add it, or profile CPU only with --cpu-only\n");
			break;
		}
	}
	elf_file__free(e);
	return err;
}

/* The allocation sampler's probes (sampler.h) and the programs for them. */
static const char *const sampler_probes[] = { "init", "malloc", "free", "memcpy", "exit" };

static void sampler_progs(struct loader *l, struct bpf_program **progs)
{
	progs[0] = l->skel->progs.on_sampler_init;
	progs[1] = l->skel->progs.on_malloc;
	progs[2] = l->skel->progs.on_free;
	progs[3] = l->skel->progs.on_memcpy;
	progs[4] = l->skel->progs.on_sampler_exit;
}

/* The GPU library's probes (user/gpu/gpu.h) and the programs for them. */
static const char *const gpu_probes[] = { "gpu_init",	 "gpu_api",  "gpu_api_alias",
					  "gpu_records", "gpu_name", "gpu_exit" };

static void gpu_progs(struct loader *l, struct bpf_program **progs)
{
	progs[0] = l->skel->progs.on_gpu_init;
	progs[1] = l->skel->progs.on_gpu_api;
	progs[2] = l->skel->progs.on_gpu_api_alias;
	progs[3] = l->skel->progs.on_gpu_records;
	progs[4] = l->skel->progs.on_gpu_name;
	progs[5] = l->skel->progs.on_gpu_exit;
}

int loader__probes_check(const char *path, bool gpu)
{
	const char *const *names = gpu ? gpu_probes : sampler_probes;
	size_t i, n = gpu ? ARRAY_SIZE_(gpu_probes) : ARRAY_SIZE_(sampler_probes);
	struct elf_file *e = elf_file__open(path);
	uint64_t off;
	int err = 0;

	if (!e)
		return -errno;
	for (i = 0; i < n && !err; i++) {
		err = probe_offset(e, path, names[i], &off);
		if (!err)
			err = loader__probe_entry_check(e, off);
	}
	elf_file__free(e);
	return err;
}

_Static_assert(ARRAY_SIZE_(sampler_probes) == ARRAY_SIZE_(((struct loader *)0)->sampler_links),
	       "one link per sampler probe");
_Static_assert(ARRAY_SIZE_(gpu_probes) == ARRAY_SIZE_(((struct loader *)0)->gpu_links),
	       "one link per GPU probe");

static struct bpf_program *alloc_prog(struct loader *l, enum alloc_prog which)
{
	switch (which) {
	case ALLOC_MALLOC:
		return l->skel->progs.up_malloc;
	case ALLOC_CALLOC:
		return l->skel->progs.up_calloc;
	case ALLOC_REALLOC:
		return l->skel->progs.up_realloc;
	case ALLOC_PY_MALLOC:
		return l->skel->progs.up_py_malloc;
	case ALLOC_PY_CALLOC:
		return l->skel->progs.up_py_calloc;
	default:
		return l->skel->progs.up_py_realloc;
	}
}

/* Keeps a uprobe placed during the run with the others in alloc_links (let
 * go at the end, or earlier by loader__detach_alloc_probe); without room
 * for it, it is let go now: -ENOMEM. */
static int keep_link(struct loader *l, struct probe_link *link)
{
	struct probe_link **links;

	links = realloc(l->alloc_links, (l->nalloc_links + 1) * sizeof(*links));
	if (!links) {
		probe_link_free(link);
		return -ENOMEM;
	}
	l->alloc_links = links;
	l->alloc_links[l->nalloc_links++] = link;
	return 0;
}

static int attach_kept(struct loader *l, struct bpf_program *prog, int pid, const char *path,
		       uint64_t file_offset, struct probe_link **out)
{
	struct probe_link *link = calloc(1, sizeof(*link));
	int err;

	if (!link)
		return -ENOMEM;
	err = attach_probe(prog, pid, path, file_offset, link);
	if (err) {
		free(link);
		return err;
	}
	err = keep_link(l, link);
	if (!err && out)
		*out = link;
	return err;
}

int loader__attach_alloc_probe(struct loader *l, enum alloc_prog which, int pid, const char *path,
			       uint64_t file_offset, struct probe_link **out)
{
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
	int err = attach_kept(l, alloc_prog(l, which), pid, path, file_offset, out);

	if (err)
		return err;
	l->link_stats.attached++;
	l->link_stats.attach_ns += clock_ns(CLOCK_MONOTONIC) - t0;
	return 0;
}

int loader__attach_code_probe(struct loader *l, const char *path, uint64_t file_offset)
{
	return attach_kept(l, l->skel->progs.on_code_dealloc, -1, path, file_offset, NULL);
}

/*
 * The same probe placed by a thread of its own, for a process that is still
 * starting: placing a uprobe took up to 30 ms at times, and a program that
 * ends within that time would end before the loader, blocked meanwhile, had
 * recognised it.  done is set by the thread as it ends.
 */
struct code_probe_job {
	pthread_t thread;
	struct bpf_program *prog;
	char path[PATH_MAX + 32];
	uint64_t off;
	struct probe_link *link;
	int err;
	int done;   /* __atomic: placed, or failed */
	bool taken; /* joined, and its link kept with the others */
};

static void *code_probe_thread(void *arg)
{
	struct code_probe_job *j = arg;

	j->err = attach_probe(j->prog, -1, j->path, j->off, j->link);
	__atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

int loader__code_probe_begin(struct loader *l, const char *path, uint64_t file_offset)
{
	struct code_probe_job *j, **jobs;
	sigset_t all, old;
	int err;

	jobs = realloc(l->code_jobs, (l->ncode_jobs + 1) * sizeof(*jobs));
	if (!jobs)
		return -ENOMEM;
	l->code_jobs = jobs;
	j = calloc(1, sizeof(*j));
	if (j)
		j->link = calloc(1, sizeof(*j->link));
	if (!j || !j->link) {
		free(j);
		return -ENOMEM;
	}
	j->prog = l->skel->progs.on_code_dealloc;
	snprintf(j->path, sizeof(j->path), "%s", path);
	j->off = file_offset;
	/* Signals stay with the loader's own thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&j->thread, NULL, code_probe_thread, j);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		free(j->link);
		free(j);
		return -err;
	}
	l->code_jobs[l->ncode_jobs] = j;
	return l->ncode_jobs++;
}

/* Joins job j's thread and keeps its link with the run's other uprobes. */
static int code_probe_take(struct loader *l, struct code_probe_job *j)
{
	if (j->taken)
		return j->err;
	pthread_join(j->thread, NULL);
	j->taken = true;
	if (j->err)
		free(j->link);
	else
		j->err = keep_link(l, j->link);
	j->link = NULL;
	return j->err;
}

int loader__code_probe_result(struct loader *l, int id)
{
	struct code_probe_job *j;

	if (id < 0 || id >= l->ncode_jobs)
		return -EINVAL;
	j = l->code_jobs[id];
	if (!j->taken && !__atomic_load_n(&j->done, __ATOMIC_ACQUIRE))
		return -EINPROGRESS;
	return code_probe_take(l, j);
}

/* At the end: every placing finished, its link kept to go with the rest. */
static void code_jobs_free(struct loader *l)
{
	int i;

	for (i = 0; i < l->ncode_jobs; i++) {
		code_probe_take(l, l->code_jobs[i]);
		free(l->code_jobs[i]);
	}
	free(l->code_jobs);
	l->code_jobs = NULL;
	l->ncode_jobs = 0;
}

/*
 * Letting go of a uprobe link waits for the kernel to remove the probe (on
 * the kernels measured, tens of milliseconds to 0.1 s a link, most of it
 * waiting for a grace period after the breakpoints are gone).  During a run
 * that would stall the ring buffer's reader, so the links go to threads of
 * their own, DETACH_THREADS of them, so that links let go together (a duty
 * cycle's) lose their breakpoints together rather than one grace period
 * after another; at the end those still queued are handed off with the rest
 * (loader__free_detached).
 */
#define DETACH_THREADS 8

struct detacher {
	pthread_t threads[DETACH_THREADS];
	int nthreads;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct probe_link **queue;
	int n, cap;
	int busy; /* links being destroyed, taken off the queue */
	bool stop;
	struct loader_link_stats *stats;
};

static void *detach_thread(void *arg)
{
	struct detacher *d = arg;

	pthread_mutex_lock(&d->lock);
	for (;;) {
		struct probe_link *link;
		uint64_t t0;

		while (!d->n && !d->stop)
			pthread_cond_wait(&d->cond, &d->lock);
		if (d->stop)
			break;
		link = d->queue[--d->n];
		d->busy++;
		pthread_mutex_unlock(&d->lock);
		t0 = clock_ns(CLOCK_MONOTONIC);
		probe_link_free(link);
		t0 = clock_ns(CLOCK_MONOTONIC) - t0;
		pthread_mutex_lock(&d->lock);
		d->busy--;
		d->stats->detached++;
		d->stats->detach_ns += t0;
		if (t0 > d->stats->detach_max_ns)
			d->stats->detach_max_ns = t0;
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

static struct detacher *detacher_new(struct loader *l)
{
	struct detacher *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	d->stats = &l->link_stats;
	while (d->nthreads < DETACH_THREADS &&
	       !pthread_create(&d->threads[d->nthreads], NULL, detach_thread, d))
		d->nthreads++;
	if (!d->nthreads) {
		free(d);
		return NULL;
	}
	return d;
}

/* Stops the threads (after the links they are destroying, if any); the
 * links still queued are destroyed here, at once when another process holds
 * them (the hand-off). */
static void detacher_free(struct detacher *d)
{
	int i;

	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	d->stop = true;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
	for (i = 0; i < d->nthreads; i++)
		pthread_join(d->threads[i], NULL);
	for (i = 0; i < d->n; i++)
		probe_link_free(d->queue[i]);
	free(d->queue);
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->cond);
	free(d);
}

void loader__mem_window(struct loader *l, uint64_t lo_ns, uint64_t hi_ns)
{
	volatile struct profile_bpf__bss *b = l->skel->bss;

	/* Closed while it changes: a sample in between counts in neither. */
	b->mem_window_lo = UINT64_MAX;
	__sync_synchronize();
	b->mem_windowed = 1;
	b->mem_window_hi = hi_ns;
	__sync_synchronize();
	b->mem_window_lo = lo_ns;
}

int loader__detach_alloc_probe(struct loader *l, struct probe_link *link)
{
	struct detacher *d;
	int i;

	for (i = 0; i < l->nalloc_links && l->alloc_links[i] != link; i++)
		;
	if (i == l->nalloc_links)
		return -ENOENT;
	if (!l->detacher)
		l->detacher = detacher_new(l);
	d = l->detacher;
	if (!d)
		return -ENOMEM; /* kept: let go at the end */
	pthread_mutex_lock(&d->lock);
	if (d->n == d->cap) {
		int cap = d->cap ? d->cap * 2 : 16;
		struct probe_link **q = realloc(d->queue, cap * sizeof(*q));

		if (!q) {
			pthread_mutex_unlock(&d->lock);
			return -ENOMEM;
		}
		d->queue = q;
		d->cap = cap;
	}
	d->queue[d->n++] = link;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->lock);
	l->alloc_links[i] = l->alloc_links[--l->nalloc_links];
	return 0;
}

void loader__link_stats(struct loader *l, struct loader_link_stats *out)
{
	struct detacher *d = l->detacher;

	if (d)
		pthread_mutex_lock(&d->lock);
	*out = l->link_stats;
	out->pending = d ? d->n + d->busy : 0;
	if (d)
		pthread_mutex_unlock(&d->lock);
}

#ifdef __x86_64__
/* A function whose first instruction (push) the kernel emulates, as on the
 * probed allocators: the calibration's probe site. */
__asm__(".text\n"
	".globl scalene_bpf_probe_target\n"
	".type scalene_bpf_probe_target, @function\n"
	"scalene_bpf_probe_target:\n"
	"\tpush %rbx\n"
	"\tpop %rbx\n"
	"\tret\n"
	".size scalene_bpf_probe_target, .-scalene_bpf_probe_target\n");
void scalene_bpf_probe_target(void);

/* This thread's CPU time (user and system: the trap is system time), not
 * the wall clock, which on a busy machine counts the time others ran. */
static double now_ns(void)
{
	return (double)clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

static double time_calls(int n)
{
	void (*volatile fn)(void) = scalene_bpf_probe_target;
	double t0 = now_ns();
	int i;

	for (i = 0; i < n; i++)
		fn();
	return (now_ns() - t0) / n;
}

double loader__uprobe_cost_ns(struct loader *l)
{
	uintptr_t addr = (uintptr_t)scalene_bpf_probe_target;
	unsigned long start, end, off;
	char line[512], path[PATH_MAX] = "";
	struct probe_link link = { 0 };
	double base, probed, best = -1;
	FILE *f;
	int round;

	/* The probe's file offset: from our own mapping of the text. */
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %4095s", &start, &end, &off, path) == 4 &&
		    addr >= start && addr < end)
			break;
		path[0] = '\0';
	}
	fclose(f);
	if (!path[0])
		return -ENOENT;
	/* Interleaved, best of three: the machine may be busy. */
	for (round = 0; round < 3; round++) {
		base = time_calls(20000);
		int err = attach_probe(l->skel->progs.up_malloc, getpid(), path, addr - start + off,
				       &link);

		if (err)
			return err;
		probed = time_calls(20000);
		probe_link_destroy(&link);
		if (best < 0 || probed - base < best)
			best = probed - base;
	}
	return best > 0 ? best : 0;
}
#else
double loader__uprobe_cost_ns(struct loader *l)
{
	(void)l;
	return -ENOTSUP;
}
#endif

/* The kernel code of the uprobe machinery, found where it is not a symbol
 * of the kernel's own BTF (entry code, cold parts): the names are stable
 * across the kernels supported (the int3 entry has had its name since
 * Linux 5.8). */
static const char *const probe_entry_sym = "asm_exc_int3";
static const char *const probe_text_syms[] = {
	"uprobe_notify_resume", "uprobe_notify_resume.cold",
	"handle_swbp", /* a function of its own where the compiler did not inline it */
};

/*
 * Fills the programs' probe_entry and probe_text from /proc/kallsyms, so that
 * CPU samples taken inside a uprobe hit are told apart (on_cpu_sample).
 * 0, or -errno with the check left off (nprobe_text 0).
 */
static int resolve_probe_text(struct profile_bpf *skel)
{
	struct ksyms *k = ksyms__load(NULL);
	uint64_t entry = 0, entry_end = 0, start, end;
	unsigned int found = 0;
	size_t i;

	if (!k)
		return -errno;
	/* Zero addresses: kernel.kptr_restrict hides them from us (and the
	 * table is empty). */
	ksyms__find(k, probe_entry_sym, &entry, &entry_end);
	if (entry && entry_end) {
		skel->rodata->probe_entry[0] = entry;
		skel->rodata->probe_entry[1] = entry_end;
	}
	for (i = 0; i < ARRAY_SIZE_(probe_text_syms) && found < PROBE_TEXT_RANGES; i++) {
		if (ksyms__find(k, probe_text_syms[i], &start, &end) || !end)
			continue;
		skel->rodata->probe_text[found][0] = start;
		skel->rodata->probe_text[found][1] = end;
		found++;
	}
	ksyms__free(k);
	if (!entry && !found)
		return -ENOENT;
	skel->rodata->nprobe_text = found;
	skel->rodata->probe_check = 1;
	pr_debug("uprobe machinery: entry %#" PRIx64 "-%#" PRIx64 ", %u function ranges\n", entry,
		 entry_end, found);
	return 0;
}

/* The ring buffer's records: stacks for the counts stay here. */
static int on_record(void *ctx, void *data, size_t size)
{
	struct loader *l = ctx;
	__u32 type;
	int ret;

	if (size >= sizeof(type)) {
		memcpy(&type, data, sizeof(type));
		/* The session sees it too: it reads the code objects named
		 * while they are there. */
		if (type == EV_STACK && l->counts)
			counts__add_stack(l->counts, data, size);
	}
	l->in_record++;
	ret = l->on_event(l->ctx, data, size);
	l->in_record--;
	return ret;
}

/* counts' read of the ring buffer for stacks that came late: not from its
 * own callback (an image's drain as its exec or exit record is handled). */
static int read_ring(void *ctx)
{
	struct loader *l = ctx;

	if (l->in_record)
		return -EBUSY;
	return l->rb ? ring_buffer__consume(l->rb) : 0;
}

/* An mmapable array map's elements, mapped read-write (NULL and errno). */
static void *map_array(struct bpf_map *m, size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(m), 0);

	return p == MAP_FAILED ? NULL : p;
}

struct loader *loader__open(const struct loader_opts *opts)
{
	struct bpf_program *sampler[ARRAY_SIZE_(sampler_probes)], *gpu[ARRAY_SIZE_(gpu_probes)];
	struct loader *l;
	size_t i;
	int err;

	libbpf_set_print(libbpf_print);
	l = calloc(1, sizeof(*l));
	if (!l) {
		errno = ENOMEM;
		return NULL;
	}
	l->period_ns = loader__period_ns(opts->rate_hz);
	l->redraw_ns = opts->track_all ? REDRAW_HOST_NS : REDRAW_NS;
	if (getrandom(l->rng, sizeof(l->rng), 0) != sizeof(l->rng))
		memcpy(l->rng, &(uint64_t){ mono_ns() ^ getpid() }, sizeof(l->rng));
	err = probe_kernel(&l->kernel);
	if (err)
		goto fail;
	l->skel = open_object(l->kernel.loops);
	if (!l->skel) {
		err = -errno;
		pr_warn("failed to open the BPF object: %s\n", strerror(-err));
		goto fail;
	}
	l->skel->rodata->sample_period_ns = l->period_ns;
	l->skel->rodata->follow_children = opts->follow_children;
	l->skel->rodata->track_all = opts->track_all;
	l->skel->rodata->aggregate = opts->aggregate;
	if (opts->aggregate && opts->max_counts)
		bpf_map__set_max_entries(l->skel->maps.agg_counts, opts->max_counts);
	l->skel->rodata->count_idle = opts->count_idle;
	l->skel->rodata->native_stacks = opts->native_stacks;
	/* Blocked threads' kernel frames are kept for --native only. */
	if (!opts->native_stacks)
		bpf_map__set_max_entries(l->skel->maps.blocked_kstacks, 1);
	l->skel->rodata->native_unwind_bpf = opts->native_stacks && opts->native_unwind_bpf;
	if (l->skel->rodata->native_unwind_bpf) {
		bpf_map__set_max_entries(l->skel->maps.unwind_rows, UNWIND_ROWS_MAX);
		bpf_map__set_max_entries(l->skel->maps.unwind_pages, UNWIND_PAGES_MAX);
		bpf_map__set_max_entries(l->skel->maps.unwind_procs, opts->max_procs);
	}
	l->skel->rodata->nr_futex = SYS_futex;
#ifdef SYS_futex_waitv
	l->skel->rodata->nr_futex_waitv = SYS_futex_waitv;
#endif
	l->skel->rodata->tick_ns = 1000000000ULL / sysconf(_SC_CLK_TCK);
	if (l->kernel.stack_size)
		l->skel->rodata->thread_size = l->kernel.stack_size;
	l->skel->rodata->steal_from_rq = l->kernel.steal_from_rq;
	bpf_map__set_max_entries(l->skel->maps.procs, opts->max_procs);
	bpf_map__set_max_entries(l->skel->maps.events, opts->ringbuf_bytes);
	l->offcpu_work = l->kernel.task_work;
	bpf_program__set_autoload(l->skel->progs.on_switch,
				  !l->offcpu_work && l->kernel.switch_state);
	bpf_program__set_autoload(l->skel->progs.on_switch_task_state,
				  !l->offcpu_work && !l->kernel.switch_state);
	bpf_program__set_autoload(l->skel->progs.on_sys_exit, !l->offcpu_work);
	bpf_program__set_autoload(l->skel->progs.on_switch_work, l->offcpu_work);
	/* Memory and GPU programs are loaded only for the mode that uses them. */
	sampler_progs(l, sampler);
	gpu_progs(l, gpu);
	for (i = 0; i < ARRAY_SIZE_(sampler); i++) {
		if (opts->sampler_path)
			probe_prog_prepare(sampler[i]);
		else
			bpf_program__set_autoload(sampler[i], false);
	}
	for (i = 0; i < ARRAY_SIZE_(gpu); i++) {
		if (opts->gpu_path)
			probe_prog_prepare(gpu[i]);
		else
			bpf_program__set_autoload(gpu[i], false);
	}
	probe_prog_prepare(l->skel->progs.on_code_dealloc);
	for (i = 0; i < ALLOC_PROGS; i++) {
		if (opts->uprobe_sample_bytes)
			probe_prog_prepare(alloc_prog(l, i));
		else
			bpf_program__set_autoload(alloc_prog(l, i), false);
	}
	l->skel->rodata->mem_sample_bytes = opts->uprobe_sample_bytes ?: 1;
	for (i = 0; i < 256; i++) {
		/* Cell i of the exponential distribution (mean 1) holds the
		 * points from lo to hi; its mean is 256 x the integral of
		 * x e^-x over them.  The last one's is lo + 1. */
		double lo = -log(1 - i / 256.0), hi = -log(1 - (i + 1) / 256.0);
		double mean = i == 255 ? lo + 1 : 256 * ((lo + 1) * exp(-lo) - (hi + 1) * exp(-hi));

		l->skel->rodata->gap_lo[i] = (__u32)(lo * 65536 + 0.5);
		l->skel->rodata->gap_width[i] = (__u32)(2 * (mean - lo) * 65536 + 0.5);
		l->skel->rodata->weight_table[i] =
			(__u32)(65536 / (1 - exp(-(i + 0.5) / 16)) + 0.5);
	}
	/* With uprobes of ours, samples inside their hits are told apart. */
	if (opts->sampler_path || opts->uprobe_sample_bytes) {
		err = resolve_probe_text(l->skel);
		l->probe_check = !err;
		if (err)
			pr_warn("cannot locate the kernel's uprobe code in /proc/kallsyms (%s): "
				"the "
				"probes' own CPU time stays in the lines' system time\n",
				strerror(-err));
	}
	err = profile_bpf__load(l->skel);
	if (err) {
		pr_warn("failed to load the BPF programs (kernel %s, loops by %s): %s%s\n",
			l->kernel.release, loops_name(l->kernel.loops), strerror(-err),
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
		err = attach_probes("the allocation sampler", opts->sampler_path, sampler_probes,
				    sampler, l->sampler_links, ARRAY_SIZE_(sampler));
		if (err)
			goto fail;
	}
	if (opts->gpu_path) {
		err = attach_probes("the GPU library", opts->gpu_path, gpu_probes, gpu,
				    l->gpu_links, ARRAY_SIZE_(gpu));
		if (err)
			goto fail;
	}
	err = attach_perf(l);
	if (err)
		goto fail;
	if (opts->aggregate) {
		struct counts_maps maps = {
			.counts_fd = bpf_map__fd(l->skel->maps.agg_counts),
			.stacks_fd = bpf_map__fd(l->skel->maps.agg_stacks),
			.max_counts = bpf_map__max_entries(l->skel->maps.agg_counts),
			.epoch = &l->skel->bss->agg_epoch,
			.read_ring = read_ring,
			.ring_ctx = l,
		};

		l->counts = counts__new(&maps, opts->on_event, opts->ctx);
		if (!l->counts) {
			err = -errno;
			goto fail;
		}
	}
	if (l->skel->rodata->native_unwind_bpf) {
		l->unwind_rows = map_array(l->skel->maps.unwind_rows, UNWIND_ROWS_BYTES);
		l->unwind_pages =
			l->unwind_rows ? map_array(l->skel->maps.unwind_pages, UNWIND_PAGES_BYTES)
				       : NULL;
		if (!l->unwind_pages) {
			err = -errno;
			pr_warn("cannot map the unwind tables' BPF maps: %s\n", strerror(-err));
			goto fail;
		}
	}
	l->on_event = opts->on_event;
	l->ctx = opts->ctx;
	l->rb = ring_buffer__new(bpf_map__fd(l->skel->maps.events), on_record, l, NULL);
	if (l->rb)
		l->code_rb =
			ring_buffer__new(bpf_map__fd(l->skel->maps.code_snaps), on_record, l, NULL);
	if (!l->rb || !l->code_rb) {
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

static int unwind_put_rows(void *ctx, __u32 lo, const struct unwind_row *rows, __u32 n)
{
	struct loader *l = ctx;

	if ((uint64_t)lo + n > UNWIND_ROWS_MAX)
		return -ENOSPC;
	memcpy(l->unwind_rows + lo, rows, (size_t)n * sizeof(*rows));
	return 0;
}

static int unwind_put_pages(void *ctx, __u32 lo, const struct unwind_page *pages, __u32 n)
{
	struct loader *l = ctx;

	if ((uint64_t)lo + n > UNWIND_PAGES_MAX)
		return -ENOSPC;
	memcpy(l->unwind_pages + lo, pages, (size_t)n * sizeof(*pages));
	return 0;
}

static int unwind_put_proc(void *ctx, int pid, const struct unwind_proc *up)
{
	struct loader *l = ctx;
	__u32 key = (__u32)pid;

	if (bpf_map__update_elem(l->skel->maps.unwind_procs, &key, sizeof(key), up, sizeof(*up),
				 BPF_ANY))
		return -errno;
	return 0;
}

static void unwind_del_proc(void *ctx, int pid)
{
	struct loader *l = ctx;
	__u32 key = (__u32)pid;

	bpf_map__delete_elem(l->skel->maps.unwind_procs, &key, sizeof(key), 0);
}

int loader__unwind_sink(struct loader *l, struct unwind_sink *out)
{
	if (!l->unwind_rows)
		return -ENOTSUP;
	*out = (struct unwind_sink){ .put_rows = unwind_put_rows,
				     .put_pages = unwind_put_pages,
				     .put_proc = unwind_put_proc,
				     .del_proc = unwind_del_proc,
				     .ctx = l,
				     .max_rows = UNWIND_ROWS_MAX,
				     .max_pages = UNWIND_PAGES_MAX };
	return 0;
}

void loader__free(struct loader *l)
{
	size_t i;
	int cpu;

	if (!l)
		return;
	code_jobs_free(l);
	if (l->unwind_rows)
		munmap(l->unwind_rows, UNWIND_ROWS_BYTES);
	if (l->unwind_pages)
		munmap(l->unwind_pages, UNWIND_PAGES_BYTES);
	ring_buffer__free(l->rb);
	ring_buffer__free(l->code_rb);
	/* Each uprobe link waits for the kernel to quiesce as it goes (see
	 * attach_probes). */
	for (i = 0; i < ARRAY_SIZE_(l->sampler_links); i++)
		probe_link_destroy(&l->sampler_links[i]);
	for (i = 0; i < ARRAY_SIZE_(l->gpu_links); i++)
		probe_link_destroy(&l->gpu_links[i]);
	detacher_free(l->detacher);
	for (cpu = 0; cpu < l->nalloc_links; cpu++)
		probe_link_free(l->alloc_links[cpu]);
	free(l->alloc_links);
	for (cpu = 0; l->links && cpu < l->ncpus; cpu++)
		bpf_link__destroy(l->links[cpu]);
	for (cpu = 0; l->pfds && cpu < l->ncpus; cpu++) {
		if (l->pfds[cpu] >= 0)
			close(l->pfds[cpu]);
	}
	free(l->links);
	free(l->pfds);
	free(l->drawn_at);
	free(l->samples_now);
	counts__free(l->counts);
	profile_bpf__destroy(l->skel);
	free(l);
}

static void close_link(struct bpf_link *link)
{
	int fd = link ? bpf_link__fd(link) : -1;

	if (fd >= 0)
		close(fd);
}

/* In the releasing child: let go at once of everything that samples or
 * traces (CPU sampling, the scheduler and process tracepoints), so that
 * only the uprobes, disabled, outlive the run. */
static void close_all_but_uprobes(struct loader *l)
{
	int cpu, i;

	for (cpu = 0; l->links && cpu < l->ncpus; cpu++)
		close_link(l->links[cpu]);
	for (cpu = 0; l->pfds && cpu < l->ncpus; cpu++) {
		if (l->pfds[cpu] >= 0)
			close(l->pfds[cpu]);
	}
	/* The skeleton's own links: every attached program but the uprobes'
	 * (kprobe-type) ones. */
	for (i = 0; i < l->skel->skeleton->prog_cnt; i++) {
		const struct bpf_prog_skeleton *ps = &l->skel->skeleton->progs[i];

		if (bpf_program__type(*ps->prog) != BPF_PROG_TYPE_KPROBE)
			close_link(*ps->link);
	}
}

/*
 * Hands the last references to the uprobes to a child process, which holds
 * them until this process has exited and then lets them go.  The kernel
 * removes a uprobe only when its last reference goes, waiting for RCU grace
 * periods for each one, one after the other (see attach_probes); the profile
 * is written by now, so nobody need wait for that.  Their programs stay
 * disabled meanwhile (the caller detaches them from this side), and the child
 * has no terminal and no stdio.  This process goes on only once the child has
 * let go of everything else (the perf events, the other links): whoever looks
 * after it has exited finds nothing but the uprobes, held by a process named
 * for what it does.  Returns whether the child took them.
 */
static bool hand_off_uprobes(struct loader *l)
{
	int fds[2], ready[2], devnull;
	pid_t pid;
	char c;

	if (!l->nalloc_links && !(l->detacher && l->detacher->n) && !l->sampler_links[0].held &&
	    !l->gpu_links[0].held)
		return false;
	if (pipe2(fds, O_CLOEXEC))
		return false;
	if (pipe2(ready, O_CLOEXEC)) {
		close(fds[0]);
		close(fds[1]);
		return false;
	}
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		close(ready[0]);
		close(ready[1]);
		return false;
	}
	if (pid == 0) {
		close_all_but_uprobes(l);
		setsid();
		prctl(PR_SET_NAME, "scalene-bpf-rel");
		devnull = open("/dev/null", O_RDWR);
		if (devnull >= 0) {
			dup2(devnull, 0);
			dup2(devnull, 1);
			dup2(devnull, 2);
		}
		close(fds[1]);
		close(ready[0]);
		close(ready[1]);
		/* EOF when the parent has exited. */
		while (read(fds[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	/* EOF once the child is ready; the write end of fds stays open until
	 * this process exits. */
	close(ready[1]);
	while (read(ready[0], &c, 1) < 0 && errno == EINTR)
		;
	close(ready[0]);
	close(fds[0]);
	return true;
}

void loader__free_detached(struct loader *l)
{
	if (l)
		code_jobs_free(l);
	if (l && hand_off_uprobes(l))
		pr_debug("uprobes handed to a child to release after exit\n");
	loader__free(l);
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
		/* The 5.10-5.16 build's map is by thread id (profile.bpf.c). */
		if (bpf_map__type(l->skel->maps.threads) == BPF_MAP_TYPE_HASH) {
			__u32 key = tid;

			seeded += !bpf_map_update_elem(map_fd, &key, &zero, BPF_NOEXIST);
			continue;
		}
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

int loader__set_python(struct loader *l, int tgid, const struct py_walk_cfg *cfg, uint64_t gil_lo,
		       uint64_t gil_hi)
{
	int fd = bpf_map__fd(l->skel->maps.procs);
	struct proc_info info;
	__u32 key = tgid;

	if (bpf_map_lookup_elem(fd, &key, &info))
		return -errno;
	info.cfg = *cfg;
	info.gil_lo = gil_lo;
	info.gil_hi = gil_hi;
	info.has_cfg = 1;
	/* (Allocation hits counted between the read and this write are lost:
	 * the probes of --all are placed once the process is recognised, after
	 * this.) */
	if (bpf_map_update_elem(fd, &key, &info, BPF_EXIST))
		return -errno;
	return 0;
}

int loader__alloc_hits(struct loader *l, int tgid, uint64_t *hits)
{
	struct proc_info info;
	__u32 key = tgid;

	if (bpf_map_lookup_elem(bpf_map__fd(l->skel->maps.procs), &key, &info))
		return -errno;
	*hits = info.alloc_hits;
	return 0;
}

int loader__drain_counts(struct loader *l, enum counts_drain how, int tgid, uint32_t gen)
{
	if (!l->counts)
		return 0;
	/* Stacks first: each count's stack was sent before it was counted
	 * (and counts__drain reads the ring buffer again for those that come
	 * late).  An image's counts are drained while its exit or exec record
	 * is handled, from the ring buffer's callback (which must not consume
	 * again): its stacks came before that record. */
	if (how == COUNTS_PERIODIC)
		counts__next_epoch(l->counts);
	if (how != COUNTS_IMAGE)
		ring_buffer__consume(l->rb);
	return counts__drain(l->counts, how, tgid, gen);
}

bool loader__counts_stats(struct loader *l, struct counts_stats *out)
{
	if (!l->counts)
		return false;
	counts__stats(l->counts, out);
	return true;
}

/*
 * A fixed sampling period aliases with a program whose work repeats at a
 * multiple of it (a loop of 1 ms rounds, a 500 Hz control loop): the fires
 * fall at the same point of every round and one line takes them all (a
 * program spinning 0.3 and 0.7 of a period per round got 98.9 % and 0 %).
 * So every REDRAW_NS each CPU's timer gets a period drawn from 0.75-1.25 of
 * the mean, which also restarts it at a random phase.  Samples stand for
 * their thread's measured run time, so a period that varies costs no
 * accuracy; the mean rate stays what was asked for.  Only the CPUs that
 * sampled a followed thread since the last draw get one: the others record
 * nothing, and each change interrupts its CPU (an ioctl on another CPU's
 * event is a cross-CPU call), 50 times a second on every CPU of a large,
 * mostly idle host otherwise.  System-wide (--all, an agent that runs for
 * hours) a draw comes every REDRAW_HOST_NS: 100 samples a draw at 997 Hz,
 * still ten draws a second on each busy CPU, and a fifth of the calls.
 */

static void redraw_periods(struct loader *l)
{
	uint32_t key = STAT_SAMPLES;
	uint64_t now = mono_ns(), period;
	bool all;
	int cpu;

	if (now < l->next_draw_ns || !l->pfds)
		return;
	l->next_draw_ns = now + l->redraw_ns;
	all = bpf_map_lookup_elem(bpf_map__fd(l->skel->maps.stats), &key, l->samples_now) != 0;
	for (cpu = 0; cpu < l->ncpus; cpu++) {
		if (l->pfds[cpu] < 0)
			continue;
		if (!all && l->samples_now[cpu] == l->drawn_at[cpu])
			continue;
		l->drawn_at[cpu] = l->samples_now[cpu];
		period = l->period_ns * 3 / 4 + (uint64_t)nrand48(l->rng) % (l->period_ns / 2 + 1);
		/* A CPU that went offline keeps its old period: no harm. */
		ioctl(l->pfds[cpu], PERF_EVENT_IOC_PERIOD, &period);
	}
}

int loader__drain_code_copies(struct loader *l)
{
	return ring_buffer__consume(l->code_rb);
}

int loader__poll(struct loader *l, int timeout_ms)
{
	redraw_periods(l);
	loader__drain_code_copies(l);
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

const char *loader__offcpu_hook(const struct loader *l)
{
	return l->offcpu_work ? "task_work" : "sys_exit";
}

bool loader__probe_check(struct loader *l)
{
	return l->probe_check;
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

uint64_t proc_cpu_ns(int pid)
{
	char path[64];
	struct dirent *de;
	uint64_t sum = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return 0;
	while ((de = readdir(dir))) {
		unsigned long long ns;
		char file[300];
		FILE *f;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(file, sizeof(file), "/proc/%d/task/%s/schedstat", pid, de->d_name);
		f = fopen(file, "re");
		if (!f)
			continue;
		if (fscanf(f, "%llu", &ns) == 1)
			sum += ns;
		fclose(f);
	}
	closedir(dir);
	return sum;
}
