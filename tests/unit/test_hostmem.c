/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * user/session/hostmem.c: allocation uprobes for a whole host (--all
 * --memory).  Without BPF: a process never seen, and one whose libc and
 * interpreter cannot be looked at, each say why in their facts; the
 * summary on stderr.  As root with the BPF side loaded (no process
 * sampled), two real Python children of one interpreter: its allocator
 * probed once for every process (no filter) or once per followed process
 * (filters), libc per process from the first one's sites, each process's
 * facts naming its probes, index.json's "memory" counting files,
 * processes and links, and a process's own links let go when it ends.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "testlib.h"
#include "base/log.h"
#include "collect/loader.h"
#include "model/facts.h"
#include "session/hostmem.h"
#include "session/memprobe.h"
#include "target/python.h"

/* PID_MAX_LIMIT is 4194304: no process has a PID above it. */
#define GONE_PID 5000000

static struct json_object *get(struct json_object *o, const char *k)
{
	struct json_object *v = NULL;

	return o && json_object_object_get_ex(o, k, &v) ? v : NULL;
}

static int64_t num(struct json_object *o, const char *path)
{
	char buf[128], *save = NULL, *k;

	snprintf(buf, sizeof(buf), "%s", path);
	for (k = strtok_r(buf, ".", &save); k && o; k = strtok_r(NULL, ".", &save))
		o = get(o, k);
	return o ? json_object_get_int64(o) : -1;
}

static bool near(double a, double b)
{
	return a > b - 1e-6 && a < b + 1e-6;
}

/* What hostmem__report writes to stderr. */
static void report_text(struct hostmem *hm, uint64_t hits, double elapsed, char *out, size_t n)
{
	struct test_stderr c;

	test_stderr_begin(&c);
	hostmem__report(hm, hits, elapsed);
	test_stderr_end(&c, out, n);
}

/* --------------------------------------------------------- no BPF */

/* Never seen as Python: its facts say so; the hits are the host's. */
static void test_unknown_process(void)
{
	struct hostmem *hm = hostmem__new(NULL, -1, false);
	struct facts_uprobes f;

	CHECK(hm != NULL);
	if (!hm)
		return;
	memset(&f, 0xa5, sizeof(f));
	hostmem__facts(hm, 1234, &f);
	CHECK(f.host);
	CHECK_EQ_INT(f.hits, 0);
	CHECK(f.ns_per_hit < 0);
	CHECK_EQ_INT(f.nprobes, 1);
	CHECK_EQ_STR(f.probes[0].function, "PyObject_Malloc");
	CHECK_EQ_INT(f.probes[0].offset, -1);
	CHECK_EQ_STR(f.probes[0].not_probed, "not probed: not seen as Python");
	/* Its end changes nothing. */
	hostmem__ended(hm, 1234);
	hostmem__free(hm);
	hostmem__free(NULL);
}

/* A process gone before its files could be looked at: no libc, its
 * interpreter not looked at; its facts say both. */
static void test_gone_process(void)
{
	struct hostmem *hm = hostmem__new(NULL, 250.0, false);
	struct py_proc pp = { .pid = GONE_PID };
	struct facts_uprobes f;

	CHECK(hm != NULL);
	if (!hm)
		return;
	snprintf(pp.path, sizeof(pp.path), "/usr/bin/python3.99");
	log_set_level(-1);
	hostmem__python(hm, GONE_PID, &pp);
	log_set_level(LOG_WARN);
	hostmem__facts(hm, GONE_PID, &f);
	CHECK(f.host);
	CHECK(f.ns_per_hit == 250.0);
	CHECK_EQ_INT(f.nprobes, 2);
	CHECK_EQ_STR(f.probes[0].function, "PyObject_Malloc");
	CHECK(strstr(f.probes[0].not_probed, "cannot look at /usr/bin/python3.99") != NULL);
	CHECK_EQ_STR(f.probes[1].function, "malloc");
	CHECK_EQ_STR(f.probes[1].module, "libc");
	CHECK_EQ_STR(f.probes[1].not_probed, "no libc mapped");
	hostmem__ended(hm, GONE_PID);
	hostmem__facts(hm, GONE_PID, &f);
	CHECK_EQ_STR(f.probes[0].not_probed, "not probed: not seen as Python");
	hostmem__free(hm);
}

/* The summary: the hits and their rate; their cost when it was measured. */
static void test_report(void)
{
	struct hostmem *hm = hostmem__new(NULL, -1, false),
		       *measured = hostmem__new(NULL, 2000, false);
	char text[1024];

	CHECK(hm && measured);
	if (!hm || !measured)
		goto out;
	report_text(hm, 1000, 2.0, text, sizeof(text));
	CHECK(strstr(text, "memory probes fired 1000 times (500/s)") != NULL);
	CHECK(strstr(text, "%") == NULL);
	/* 500 hits a second at 2 us each: 0.1 % of one CPU. */
	report_text(measured, 1000, 2.0, text, sizeof(text));
	CHECK(strstr(text, "fired 1000 times in the followed processes (500/s)") != NULL);
	CHECK(strstr(text, "2.00 us a hit") != NULL);
	CHECK(strstr(text, "about 0.1% of one CPU") != NULL);
out:
	hostmem__free(hm);
	hostmem__free(measured);
}

/* -------------------------------------------- with the BPF side (root) */

static int on_event(void *ctx, const void *data, size_t size)
{
	return 0;
}

/* The BPF side with the allocation programs, sampling nothing; each test
 * has its own, so that no probe of one is in the code the next one reads
 * (probes for every process put their breakpoints in every process). */
static struct loader *loader_new(void)
{
	struct loader_opts o = { .rate_hz = 1,
				 .max_procs = 64,
				 .ringbuf_bytes = 1 << 20,
				 .uprobe_sample_bytes = 65536,
				 .on_event = on_event };
	struct loader *l;

	if (geteuid() != 0)
		return NULL;
	log_set_level(-1);
	l = loader__open(&o);
	log_set_level(LOG_WARN);
	return l;
}

static const char *some_python(void)
{
	return !access("/usr/bin/python3.11", X_OK) ? "/usr/bin/python3.11" : NULL;
}

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
		execl(py, py, "-c", "import time; time.sleep(60)", (char *)NULL);
		_exit(127);
	}
	for (i = 0; pid > 0 && i < 400 && err == -EAGAIN; i++) {
		usleep(5000);
		err = python__detect(pid, pp, why, sizeof(why));
		if (err == -ENOENT)
			err = -EAGAIN; /* not exec'ed yet */
	}
	if (err && pid > 0) {
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

static int attached_in(const struct facts_uprobes *f, int from, int to)
{
	int i, n = 0;

	for (i = from; i < to && i < f->nprobes; i++)
		n += f->probes[i].offset >= 0;
	return n;
}

/* The links attached and let go so far, from index.json's "memory". */
static void links_of(struct hostmem *hm, int64_t *attached, int64_t *gone)
{
	struct json_object *o = hostmem__json(hm, 0, 1, NULL);

	*attached = num(o, "links.attached");
	*gone = num(o, "links.detached") + num(o, "links.detach_pending");
	json_object_put(o);
}

static void check_hosts(struct loader *loader, bool per_process)
{
	struct py_proc ppa, ppb;
	struct facts_uprobes fa, fb;
	struct json_object *o, *files, *w;
	int64_t att0, gone0, att, gone;
	struct hostmem *hm;
	pid_t a, b;
	int i, py_n, libc_n;

	a = start_python(&ppa);
	b = start_python(&ppb);
	CHECK(a > 0 && b > 0);
	hm = hostmem__new(loader, 321.0, per_process);
	CHECK(hm != NULL);
	if (a <= 0 || b <= 0 || !hm)
		goto out;
	links_of(hm, &att0, &gone0);
	log_set_level(-1);
	hostmem__python(hm, a, &ppa);
	log_set_level(LOG_WARN);
	hostmem__facts(hm, a, &fa);
	CHECK(fa.host);
	CHECK_EQ_INT(fa.hits, 0);
	CHECK(fa.ns_per_hit == 321.0);
	CHECK(fa.probe_links != NULL);
	CHECK_EQ_INT(fa.nprobes, MEMPROBE_PY_FNS + MEMPROBE_LIBC_FNS);
	CHECK_EQ_STR(fa.probes[0].function, "PyObject_Malloc");
	CHECK_EQ_STR(fa.probes[MEMPROBE_PY_FNS].function, "malloc");
	CHECK_EQ_STR(fa.probes[MEMPROBE_PY_FNS].module, "libc.so.6");
	py_n = attached_in(&fa, 0, MEMPROBE_PY_FNS);
	libc_n = attached_in(&fa, MEMPROBE_PY_FNS, MEMPROBE_PY_FNS + MEMPROBE_LIBC_FNS);
	CHECK(py_n >= 1 && libc_n >= 1);
	links_of(hm, &att, &gone);
	CHECK_EQ_INT(att - att0, py_n + libc_n);

	/* The second process of the same interpreter: its libc from a's
	 * sites; Python's allocator not again, unless per process. */
	hostmem__python(hm, b, &ppb);
	hostmem__facts(hm, b, &fb);
	CHECK_EQ_INT(fb.nprobes, fa.nprobes);
	for (i = 0; i < fb.nprobes && i < fa.nprobes; i++)
		CHECK_EQ_INT(fb.probes[i].offset, fa.probes[i].offset);
	links_of(hm, &att, &gone);
	CHECK_EQ_INT(att - att0, (per_process ? 2 * py_n : py_n) + 2 * libc_n);

	o = hostmem__json(hm, 1000, 2.0, NULL);
	CHECK_EQ_STR(json_object_get_string(get(o, "mode")), "uprobes");
	CHECK_EQ_INT(num(o, "hits"), 1000);
	CHECK(near(json_object_get_double(get(o, "hits_per_s")), 500));
	CHECK(near(json_object_get_double(get(o, "ns_per_hit_measured")), 321));
	CHECK(near(json_object_get_double(get(o, "estimated_cost_cpu_percent")),
		   100.0 * 500 * 321 / 1e9));
	CHECK(json_object_get_boolean(get(o, "python_per_process")) == per_process);
	files = get(o, "python_files");
	CHECK_EQ_INT(json_object_array_length(files), 1);
	CHECK_EQ_STR(json_object_get_string(get(json_object_array_get_idx(files, 0), "path")),
		     ppa.path);
	CHECK_EQ_INT(num(json_object_array_get_idx(files, 0), "processes"), 2);
	CHECK_EQ_INT(json_object_array_length(get(json_object_array_get_idx(files, 0), "probes")),
		     MEMPROBE_PY_FNS);
	CHECK_EQ_INT(num(o, "libc.processes_probed"), 2);
	CHECK_EQ_INT(num(o, "libc.processes_not_probed"), 0);
	CHECK_EQ_INT(num(o, "libc.processes_failed"), 0);
	CHECK_EQ_INT(num(o, "libc.max_processes_at_once"), HOSTMEM_MAX_LIBC);
	json_object_put(o);

	/* a ends: its own links go (libc's, and per process its Python
	 * allocator's); b's stay. */
	hostmem__ended(hm, a);
	links_of(hm, &att, &gone);
	CHECK_EQ_INT(gone - gone0, (per_process ? py_n : 0) + libc_n);
	hostmem__facts(hm, a, &fa);
	CHECK_EQ_STR(fa.probes[0].not_probed, "not probed: not seen as Python");
	hostmem__facts(hm, b, &fb);
	CHECK_EQ_INT(fb.nprobes, MEMPROBE_PY_FNS + MEMPROBE_LIBC_FNS);
	/* No process past the limit: no warning. */
	w = json_object_new_array();
	o = hostmem__json(hm, 0, 0, w);
	CHECK_EQ_INT(json_object_array_length(w), 0);
	CHECK(get(o, "hits_per_s") == NULL);
	json_object_put(o);
	json_object_put(w);
out:
	hostmem__free(hm);
	stop(a);
	stop(b);
}

static void test_every_process(void)
{
	struct loader *l;

	if (!some_python())
		SKIP_TEST("no /usr/bin/python3.11 here");
	l = loader_new();
	if (!l)
		SKIP_TEST("the BPF side cannot be loaded here (not root, or no BPF)");
	check_hosts(l, false);
	loader__free(l);
}

static void test_per_process(void)
{
	struct loader *l;

	if (!some_python())
		SKIP_TEST("no /usr/bin/python3.11 here");
	l = loader_new();
	if (!l)
		SKIP_TEST("the BPF side cannot be loaded here (not root, or no BPF)");
	check_hosts(l, true);
	loader__free(l);
}

int main(void)
{
	int rc;

	RUN_TEST(test_unknown_process);
	RUN_TEST(test_gone_process);
	RUN_TEST(test_report);
	RUN_TEST(test_every_process);
	RUN_TEST(test_per_process);
	rc = test_summary("hostmem");
	return rc;
}
