/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * user/session/memprobe.c: the allocation uprobes of a running process.
 * Without BPF: libc found in a process's maps, the reason each function of
 * a file is not probed (no such symbol, the file unreadable, a process
 * gone), sites known from another process taken as they are, and the
 * report as facts.  As root with the BPF side loaded (no process sampled):
 * a real Python child's nine functions probed where the kernel emulates the
 * instruction (each site checked against the file's own bytes), the child
 * running on under them and its allocations counted; a second process of
 * the same libc probed from the first one's sites.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"
#include "base/elfsym.h"
#include "base/log.h"
#include "base/uprobe_site.h"
#include "collect/loader.h"
#include "model/facts.h"
#include "session/memprobe.h"
#include "target/python.h"

/* PID_MAX_LIMIT is 4194304: no process has a PID above it. */
#define GONE_PID 5000000

static const char *const libc_fns[] = { "malloc", "calloc", "realloc" };
static const char *const py_fns[] = { "PyObject_Malloc", "PyObject_Calloc", "PyObject_Realloc",
				      "PyMem_Malloc",	 "PyMem_Calloc",    "PyMem_Realloc" };

static const char *base_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* --------------------------------------------------------- no BPF */

/* This process's libc, as its maps name it. */
static void test_libc_path(void)
{
	char path[PATH_MAX] = "", line[PATH_MAX + 128];
	bool mapped = false;
	FILE *f;

	CHECK_EQ_INT(memprobe__libc_path(getpid(), path, sizeof(path)), 0);
	CHECK(!strncmp(base_of(path), "libc.so", 7) || !strncmp(base_of(path), "libc-", 5));
	f = fopen("/proc/self/maps", "re");
	while (f && fgets(line, sizeof(line), f))
		mapped |= strstr(line, " r-xp ") && strstr(line, path);
	if (f)
		fclose(f);
	CHECK(mapped);
	CHECK(memprobe__libc_path(GONE_PID, path, sizeof(path)) < 0);
}

/* A file without Python's allocator (libc): each function says so, none
 * probed, nothing attached (no BPF side needed to find that out). */
static void test_no_symbols(void)
{
	struct memprobe_report rep;
	char libc[PATH_MAX];
	int i;

	CHECK_EQ_INT(memprobe__libc_path(getpid(), libc, sizeof(libc)), 0);
	memset(&rep, 0xa5, sizeof(rep));
	CHECK_EQ_INT(memprobe__attach_python(NULL, getpid(), getpid(), libc, NULL, &rep, NULL), 0);
	CHECK_EQ_INT(rep.nsites, MEMPROBE_PY_FNS);
	CHECK_EQ_INT(rep.attached, 0);
	CHECK(rep.hit_cost_ns < 0);
	for (i = 0; i < rep.nsites && i < MEMPROBE_PY_FNS; i++) {
		char want[64];

		CHECK_EQ_STR(rep.sites[i].func, py_fns[i]);
		CHECK_EQ_STR(rep.sites[i].module, base_of(libc));
		CHECK_EQ_INT(rep.sites[i].offset, -1);
		snprintf(want, sizeof(want), "no symbol %s", py_fns[i]);
		CHECK_EQ_STR(rep.sites[i].why, want);
	}
}

/* A file that cannot be read, a process that is gone. */
static void test_unreadable(void)
{
	const char *path = "/nonexistent/libpython3.11.so.1.0";
	struct memprobe_report rep;
	int i;

	CHECK_EQ_INT(memprobe__attach_python(NULL, getpid(), -1, path, NULL, &rep, NULL), 0);
	CHECK_EQ_INT(rep.nsites, MEMPROBE_PY_FNS);
	for (i = 0; i < rep.nsites; i++) {
		CHECK_EQ_INT(rep.sites[i].offset, -1);
		CHECK_EQ_STR(rep.sites[i].module, "libpython3.11.so.1.0");
		CHECK(strstr(rep.sites[i].why, "cannot read") && strstr(rep.sites[i].why, path));
	}
	/* Its maps cannot be read: an error, no site. */
	CHECK(memprobe__attach_python(NULL, GONE_PID, GONE_PID, path, NULL, &rep, NULL) < 0);
	CHECK_EQ_INT(rep.nsites, 0);
	CHECK(memprobe__attach_libc(NULL, GONE_PID, "/lib/libc.so.6", NULL, &rep, NULL) < 0);
	CHECK_EQ_INT(rep.nsites, 0);
}

/* Sites known from another process are taken as they are: those not
 * probed there are not probed here either, for the same reason, without
 * a look at the code. */
static void test_known_sites_kept(void)
{
	struct memprobe_report known = { 0 }, rep;
	int i;

	for (i = 0; i < MEMPROBE_LIBC_FNS; i++) {
		struct memprobe_site *s = &known.sites[known.nsites++];

		s->func = libc_fns[i];
		snprintf(s->module, sizeof(s->module), "libc.so.6");
		s->offset = -1;
		snprintf(s->why, sizeof(s->why), "reason %d", i);
	}
	memset(&rep, 0xa5, sizeof(rep));
	CHECK_EQ_INT(
		memprobe__attach_libc(NULL, getpid(), "/nonexistent/libc.so.6", &known, &rep, NULL),
		0);
	CHECK_EQ_INT(rep.nsites, MEMPROBE_LIBC_FNS);
	CHECK_EQ_INT(rep.attached, 0);
	for (i = 0; i < rep.nsites; i++) {
		char want[32];

		snprintf(want, sizeof(want), "reason %d", i);
		CHECK_EQ_STR(rep.sites[i].func, libc_fns[i]);
		CHECK_EQ_STR(rep.sites[i].why, want);
		CHECK_EQ_INT(rep.sites[i].offset, -1);
	}
}

/* The report as facts: each site with its offset, a reason only where it
 * was not probed; the hits over the time; the measured cost. */
static void test_facts(void)
{
	struct memprobe_report rep = { .hit_cost_ns = 512.5 };
	struct facts_uprobes f;
	int i;

	for (i = 0; i < MEMPROBE_MAX; i++) {
		struct memprobe_site *s = &rep.sites[rep.nsites++];

		s->func = i % 2 ? "calloc" : "malloc";
		snprintf(s->module, sizeof(s->module), "mod%d.so", i);
		s->offset = i % 3 == 0 ? -1 : i;
		/* A reason left over from a try before it was probed. */
		snprintf(s->why, sizeof(s->why), "why %d", i);
	}
	rep.attached = 10;
	memset(&f, 0xa5, sizeof(f));
	memprobe__facts(&rep, 123456, 2.5, &f);
	CHECK_EQ_INT(f.nprobes, MEMPROBE_MAX);
	for (i = 0; i < f.nprobes; i++) {
		char want[32];

		CHECK_EQ_STR(f.probes[i].function, i % 2 ? "calloc" : "malloc");
		snprintf(want, sizeof(want), "mod%d.so", i);
		CHECK_EQ_STR(f.probes[i].module, want);
		CHECK_EQ_INT(f.probes[i].offset, i % 3 == 0 ? -1 : i);
		snprintf(want, sizeof(want), "why %d", i);
		CHECK_EQ_STR(f.probes[i].not_probed, i % 3 == 0 ? want : "");
	}
	CHECK_EQ_INT(f.hits, 123456);
	CHECK(f.elapsed_s == 2.5);
	CHECK(f.ns_per_hit == 512.5);
	CHECK(!f.host);
	CHECK(f.probe_links == loader__probe_links());
}

/* -------------------------------------------- with the BPF side (root) */

static struct loader *loader;

static int on_event(void *ctx, const void *data, size_t size)
{
	return 0;
}

static const char *some_python(void)
{
	static const char *const paths[] = { "/usr/bin/python3.11", "/usr/bin/python3" };
	size_t i;

	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		if (!access(paths[i], X_OK))
			return paths[i];
	}
	return NULL;
}

/* A Python child that allocates all the time; its interpreter in *pp. */
static pid_t start_python(struct py_proc *pp)
{
	const char *py = some_python();
	char why[256];
	pid_t pid;
	int i, err = -EAGAIN;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* gone with the test */
		execl(py, py, "-c",
		      "import time\n"
		      "while True:\n"
		      "    x = [bytearray(64) for _ in range(200)]\n"
		      "    time.sleep(0.001)\n",
		      (char *)NULL);
		_exit(127);
	}
	for (i = 0; pid > 0 && i < 400 && err == -EAGAIN; i++) {
		usleep(5000);
		err = python__detect(pid, pp, why, sizeof(why));
		if (err == -ENOENT)
			err = -EAGAIN; /* not exec'ed yet */
	}
	if (err && pid > 0) {
		fprintf(stderr, "  %s: %s\n", py, why);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	return pid;
}

static void stop(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

/* What the placement should be, from the file's bytes: the function's
 * file offset and the site uprobe_site picks in its first bytes. */
static bool expected_site(const char *path, const char *func, unsigned int args, uint64_t *foff,
			  int *site)
{
	struct elf_file *e = elf_file__open(path);
	uint8_t code[32];
	uint64_t value;
	char why[160];
	bool ok = false;
	int fd;

	if (!e)
		return false;
	if (!elf_file__find_symbol(e, func, &value, NULL) &&
	    !elf_file__vaddr_to_offset(e, value, foff)) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && pread(fd, code, sizeof(code), (off_t)*foff) == sizeof(code)) {
			*site = uprobe_site(code, sizeof(code), args, why, sizeof(why));
			ok = true;
		}
		if (fd >= 0)
			close(fd);
	}
	elf_file__free(e);
	return ok;
}

/* Each site the report says was probed is at the function's first
 * emulated instruction in the file (the arguments each program reads kept:
 * calloc's and realloc's second too). */
static void check_placement(const struct memprobe_site *s, const char *path)
{
	unsigned int args =
		strstr(s->func, "alloc") &&
				(strstr(s->func, "Calloc") || strstr(s->func, "Realloc") ||
				 !strcmp(s->func, "calloc") || !strcmp(s->func, "realloc"))
			? ARG_RDI | ARG_RSI
			: ARG_RDI;
	uint64_t foff = 0;
	int site = -2;

	CHECK(expected_site(path, s->func, args, &foff, &site));
	CHECK_EQ_INT(s->offset, site);
	if (s->offset >= 0)
		CHECK_EQ_INT(s->file_offset, foff + (uint64_t)s->offset);
}

static void test_attach_process(void)
{
	static struct memprobe_placed placed;
	struct memprobe_report rep;
	struct py_proc pp;
	char libc[PATH_MAX];
	uint64_t hits = 0, before;
	int i, n, probed = 0;
	pid_t pid;

	if (!loader)
		SKIP_TEST("the BPF side cannot be loaded here (not root, or no BPF)");
	if (!some_python())
		SKIP_TEST("no /usr/bin/python3.11 here");
	pid = start_python(&pp);
	CHECK(pid > 0);
	if (pid <= 0)
		return;
	CHECK_EQ_INT(memprobe__libc_path(pid, libc, sizeof(libc)), 0);
	n = memprobe__attach(loader, pid, &pp, &rep, &placed);
	CHECK_EQ_INT(rep.nsites, MEMPROBE_LIBC_FNS + MEMPROBE_PY_FNS);
	for (i = 0; i < rep.nsites; i++) {
		const struct memprobe_site *s = &rep.sites[i];
		bool in_libc = i < MEMPROBE_LIBC_FNS;

		CHECK_EQ_STR(s->func, in_libc ? libc_fns[i] : py_fns[i - MEMPROBE_LIBC_FNS]);
		CHECK_EQ_STR(s->module, base_of(in_libc ? libc : pp.path));
		check_placement(s, in_libc ? libc : pp.path);
		probed += s->offset >= 0;
	}
	CHECK_EQ_INT(n, probed);
	CHECK_EQ_INT(rep.attached, probed);
	/* libc's malloc at least: its prologue is plain on every build. */
	CHECK(rep.sites[0].offset >= 0);
	CHECK(rep.hit_cost_ns > 0);
	CHECK(loader__probe_links() != NULL);

	/* The child allocates on under the probes, and they count its calls
	 * once it is followed. */
	CHECK_EQ_INT(loader__track(loader, pid, 0), 0);
	for (i = 0; i < 200 && !hits; i++) {
		usleep(5000);
		if (loader__alloc_hits(loader, pid, &hits))
			hits = 0;
	}
	CHECK(hits > 0);
	/* Where they went is kept, one place a probe: taken out, they fire no
	 * more (once the kernel has removed them); put back, they fire again. */
	CHECK_EQ_INT(placed.n, probed);
	memprobe__take_out(loader, &placed);
	for (i = 0; i < placed.n; i++)
		CHECK(placed.p[i].link == NULL);
	for (i = 0; i < 1000; i++) {
		struct loader_link_stats st;

		loader__link_stats(loader, &st);
		if (!st.pending)
			break;
		usleep(10000);
	}
	loader__alloc_hits(loader, pid, &before);
	usleep(200000);
	loader__alloc_hits(loader, pid, &hits);
	CHECK(hits == before);
	CHECK_EQ_INT(memprobe__put_back(loader, pid, &placed), probed);
	for (i = 0; i < 200 && hits == before; i++) {
		usleep(5000);
		if (loader__alloc_hits(loader, pid, &hits))
			hits = before;
	}
	CHECK(hits > before);
	usleep(100000);
	CHECK(waitpid(pid, NULL, WNOHANG) == 0);
	loader__untrack(loader, pid);
	stop(pid);
}

/* System-wide: libc per process with its links; a second process of the
 * same libc takes the first one's sites as they are. */
static void test_libc_known(void)
{
	struct probe_link *links1[MEMPROBE_LIBC_FNS] = { 0 }, *links2[MEMPROBE_LIBC_FNS] = { 0 };
	struct memprobe_report rep1, rep2;
	struct py_proc pp;
	char libc[PATH_MAX];
	pid_t a, b;
	int i;

	if (!loader)
		SKIP_TEST("the BPF side cannot be loaded here (not root, or no BPF)");
	if (!some_python())
		SKIP_TEST("no /usr/bin/python3.11 here");
	a = start_python(&pp);
	b = start_python(&pp);
	CHECK(a > 0 && b > 0);
	if (a <= 0 || b <= 0)
		goto out;
	CHECK_EQ_INT(memprobe__libc_path(a, libc, sizeof(libc)), 0);
	CHECK_EQ_INT(memprobe__attach_libc(loader, a, libc, NULL, &rep1, links1), rep1.attached);
	CHECK(rep1.attached >= 1);
	CHECK(rep1.hit_cost_ns < 0);
	CHECK_EQ_INT(memprobe__attach_libc(loader, b, libc, &rep1, &rep2, links2), rep1.attached);
	CHECK_EQ_INT(rep2.nsites, rep1.nsites);
	for (i = 0; i < rep1.nsites && i < MEMPROBE_LIBC_FNS; i++) {
		CHECK_EQ_INT(rep2.sites[i].offset, rep1.sites[i].offset);
		CHECK_EQ_INT(rep2.sites[i].file_offset, rep1.sites[i].file_offset);
		CHECK((links1[i] != NULL) == (rep1.sites[i].offset >= 0));
		CHECK((links2[i] != NULL) == (rep2.sites[i].offset >= 0));
	}
	for (i = 0; i < MEMPROBE_LIBC_FNS; i++) {
		if (links1[i])
			CHECK_EQ_INT(loader__detach_alloc_probe(loader, links1[i]), 0);
		if (links2[i])
			CHECK_EQ_INT(loader__detach_alloc_probe(loader, links2[i]), 0);
	}
	/* Both ran on under them. */
	CHECK(waitpid(a, NULL, WNOHANG) == 0 && waitpid(b, NULL, WNOHANG) == 0);
out:
	stop(a);
	stop(b);
}

int main(void)
{
	struct loader_opts o = { .rate_hz = 1,
				 .max_procs = 64,
				 .ringbuf_bytes = 1 << 20,
				 .uprobe_sample_bytes = 65536,
				 .on_event = on_event };
	int rc;

	RUN_TEST(test_libc_path);
	RUN_TEST(test_no_symbols);
	RUN_TEST(test_unreadable);
	RUN_TEST(test_known_sites_kept);
	RUN_TEST(test_facts);
	if (geteuid() == 0) {
		log_set_level(-1);
		loader = loader__open(&o);
		log_set_level(LOG_WARN);
	}
	RUN_TEST(test_attach_process);
	RUN_TEST(test_libc_known);
	loader__free(loader);
	rc = test_summary("memprobe");
	return rc;
}
