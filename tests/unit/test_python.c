// SPDX-License-Identifier: BSD-2-Clause
/*
 * Recognising CPython processes: names, versions, the pre-launch check and
 * python__detect() on live interpreters started here (process_vm_readv on
 * our own children needs no privileges).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cpython.h"
#include "base/elfcache.h"
#include "base/memread.h"
#include "target/python.h"
#include "symbolize/usyms.h"
#include "testlib.h"
#include "testpython.h"

static void test_minor_from_name(void)
{
	CHECK_EQ_INT(python__minor_from_name("python3.12"), 12);
	CHECK_EQ_INT(python__minor_from_name("libpython3.9.so.1.0"), 9);
	CHECK_EQ_INT(python__minor_from_name("libpython3.13t.so.1.0"), 13);
	CHECK_EQ_INT(python__minor_from_name("python3.11-dbg"), 11);
	CHECK_EQ_INT(python__minor_from_name("python3"), -1);
	CHECK_EQ_INT(python__minor_from_name("python3.x"), -1);
	CHECK_EQ_INT(python__minor_from_name("bash"), -1);
	CHECK_EQ_INT(python__minor_from_name(""), -1);
}

static void test_version_string(void)
{
	char buf[32];

	python__version_string(0x030c01f0, buf, sizeof(buf));
	CHECK_EQ_STR(buf, "3.12.1");
	python__version_string(0x030d00f0, buf, sizeof(buf));
	CHECK_EQ_STR(buf, "3.13.0");
}

static void test_check_binary(void)
{
	char py[512], why[512];

	CHECK_EQ_INT(python__check_binary("/bin/sh", why, sizeof(why)), 0);
	CHECK_EQ_INT(python__check_binary("/nonexistent/python3.12", why, sizeof(why)), 0);
	if (!test_pyenv_python("3.12.1", py, sizeof(py)))
		CHECK_EQ_INT(python__check_binary(py, why, sizeof(why)), 0);
	else
		SKIP_PART("pyenv 3.12.1 not found (pyenv install 3.12.1)");
	if (!test_pyenv_python("3.8.18", py, sizeof(py))) {
		CHECK_EQ_INT(python__check_binary(py, why, sizeof(why)), -ENOTSUP);
		CHECK(strstr(why, "3.8") != NULL);
		CHECK(strstr(why, PY_SUPPORTED) != NULL);
	}
	if (!access("/usr/bin/python3.11", X_OK))
		CHECK_EQ_INT(python__check_binary("/usr/bin/python3.11", why, sizeof(why)), 0);
}

/* Starts `python -c 'import time; time.sleep(30)'` and waits until it is
 * recognised (or 10 s pass). */
static int detect_child(const char *python, struct py_proc *pp, pid_t *pid, char *why, size_t n)
{
	struct timespec ts = { 0, 20 * 1000000 };
	int i, err = -EAGAIN;

	*pid = fork();
	if (*pid == 0) {
		execl(python, python, "-c", "import time; time.sleep(30)", (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 500 && (err == -EAGAIN || err == -ENOENT); i++) {
		nanosleep(&ts, NULL);
		err = python__detect(*pid, pp, why, n);
	}
	return err;
}

/* With an ELF cache: the first detection keeps the interpreter's file, the
 * second finds it there, and both find what the uncached one found. */
static void check_cached(pid_t pid, const struct py_proc *want)
{
	struct elf_cache *c = elf_cache__new(NULL);
	struct py_proc pp;
	char why[512];
	int k;

	CHECK(c != NULL);
	if (!c)
		return;
	for (k = 0; k < 2; k++) {
		CHECK_EQ_INT(python__detect_cached(pid, &pp, c, why, sizeof(why)), 0);
		CHECK_EQ_INT(elf_cache__count(c), 1);
		CHECK_EQ_INT(elf_cache__hits(c), k);
		CHECK(pp.runtime == want->runtime && pp.version_hex == want->version_hex);
		CHECK(!memcmp(&pp.cfg, &want->cfg, sizeof(pp.cfg)));
		CHECK_EQ_INT(pp.ntext, want->ntext);
	}
	elf_cache__free(c);
}

/*
 * 3.13+: the live interpreter's _Py_DebugOffsets agree with its table; and
 * against a table with fields moved (as a patch release might move them),
 * the interpreter's own values are taken, each move named, and the table
 * made is the live one's, kept once.  Values that cannot be a layout are
 * refused.
 */
static void check_adopted_layout(const struct py_proc *pp)
{
	const struct py_offsets *out, *again;
	struct py_offsets moved;
	uint8_t buf[2048], bad[2048];
	char note[256], why[256];
	uint64_t v;

	CHECK_EQ_STR(pp->layout_note, "");
	if (pp->off->dbg_version == PYOFF_NONE)
		return;
	CHECK_EQ_INT(mem_read(pp->pid, pp->runtime, buf, sizeof(buf)), 0);
	CHECK_EQ_INT(python__adopt_debug_offsets(pp->off, buf, sizeof(buf), &out, note,
						 sizeof(note), why, sizeof(why)),
		     0);
	CHECK(out == pp->off);
	CHECK_EQ_STR(note, "");

	moved = *pp->off;
	moved.frame_previous += 8;
	moved.tstate_next += 16;
	moved.object_type += 8;
	CHECK_EQ_INT(python__adopt_debug_offsets(&moved, buf, sizeof(buf), &out, note, sizeof(note),
						 why, sizeof(why)),
		     0);
	CHECK(out != pp->off && out != &moved);
	CHECK(!memcmp(out, pp->off, sizeof(*out)));
	CHECK(strstr(note, "frame.previous at ") != NULL);
	CHECK(strstr(note, "tstate.next at ") != NULL);
	CHECK(strstr(note, "object.ob_type at ") != NULL);
	CHECK(strstr(note, "code.") == NULL);
	CHECK_EQ_INT(python__adopt_debug_offsets(&moved, buf, sizeof(buf), &again, note,
						 sizeof(note), why, sizeof(why)),
		     0);
	CHECK(again == out);

	/* A field beyond what an offset can be; a frame too small for its
	 * fields. */
	memcpy(bad, buf, sizeof(bad));
	v = 1ull << 40;
	memcpy(bad + pp->off->dbg_code_filename, &v, sizeof(v));
	CHECK_EQ_INT(python__adopt_debug_offsets(pp->off, bad, sizeof(bad), &out, note,
						 sizeof(note), why, sizeof(why)),
		     -EPROTO);
	CHECK(strstr(why, "code.co_filename") != NULL);
	memcpy(bad, buf, sizeof(bad));
	v = 8;
	memcpy(bad + pp->off->dbg_frame_size, &v, sizeof(v));
	CHECK_EQ_INT(python__adopt_debug_offsets(pp->off, bad, sizeof(bad), &out, note,
						 sizeof(note), why, sizeof(why)),
		     -EPROTO);
	CHECK(strstr(why, "sizeof(frame) at 8") != NULL);
}

static void check_live(const char *python, int minor, bool static_build, const char *version)
{
	struct py_proc pp;
	char why[512];
	pid_t pid;
	int err;

	err = detect_child(python, &pp, &pid, why, sizeof(why));
	if (err)
		fprintf(stderr, "%s: %s\n", python, why);
	CHECK_EQ_INT(err, 0);
	if (!err) {
		CHECK_EQ_INT(pp.minor, minor);
		if (version) {
			char v[32];

			/* The full version, micro included, on every minor. */
			python__version_string(pp.version_hex, v, sizeof(v));
			CHECK_EQ_STR(v, version);
		}
		CHECK_EQ_INT((pp.version_hex >> 16) & 0xff, minor);
		CHECK(pp.off && pp.off->minor == minor);
		CHECK(pp.runtime != 0);
		CHECK(pp.main_thread != 0);
		if (pp.off->runtime_autotss_key != PYOFF_NONE) {
			CHECK(pp.cfg.tss_key_addr == pp.runtime + pp.off->runtime_autotss_key + 4);
			CHECK_EQ_INT(pp.cfg.tls_off, 0);
		} else {
			/* 3.15: a thread-local in the static TLS block, below
			 * the thread pointer; detect checked it holds the main
			 * thread's state. */
			CHECK_EQ_INT(pp.cfg.tss_key_addr, 0);
			CHECK(pp.cfg.tls_off < 0 && pp.cfg.tls_off > -(1 << 20));
		}
		CHECK_EQ_INT(pp.cfg.minor, minor);
		CHECK(pp.ntext >= 1);
		CHECK_EQ_INT(pp.static_build, static_build);
		/* 3.12+ marks shim frames with owner; 3.11 has owner but no shims. */
		CHECK_EQ_INT(pp.cfg.f_owner != PYOFF_NONE, minor >= 12);
		CHECK_EQ_INT(pp.cfg.cframe_current != PYOFF_NONE, minor == 11 || minor == 12);
		check_cached(pid, &pp);
		check_adopted_layout(&pp);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void test_detect_live(void)
{
	char py[512];
	size_t i;
	int tested = 0;

	for (i = 0; i < N_TEST_PYTHONS; i++) {
		const struct test_python *tp = &test_pythons[i];

		if (test_python_find(tp, py, sizeof(py))) {
			SKIP_PART("%s not found (%s)", tp->name, tp->install);
			continue;
		}
		/* pyenv's are named by their full version, micro included. */
		check_live(py, tp->minor, tp->is_static, tp->pyenv);
		tested++;
	}
	if (!tested)
		t_skip_current = 1;
}

/*
 * Start-up, one system call at a time: the child is stopped as each of its
 * system calls from the exec on returns (the dynamic loader mapping libpython
 * segment by segment, then the interpreter initialising), and detection runs
 * at every such stop.  Until it succeeds it may only ask to be retried: a
 * final refusal there (a TSD key or a layout read from a half-mapped library)
 * would leave the process unprofiled for good.
 */
static void check_startup(const char *python)
{
	struct py_proc pp, fp, xp;
	char why[512], real[PATH_MAX];
	int status, sig = 0, calls = 0, err = -EAGAIN, again = 0, files_err, exe_err = -ENOENT;
	bool in_call = false;
	pid_t pid;

	/* Before it runs at all (run, before its exec): from the file named. */
	if (realpath(python, real))
		exe_err = python__code_dealloc_in_files(getpid(), real, &xp);
	CHECK_EQ_INT(exe_err, 0);
	pid = fork();

	if (pid == 0) {
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execl(python, python, "-c", "import time; time.sleep(30)", (char *)NULL);
		_exit(127);
	}
	/* The first stop: the exec's SIGTRAP. */
	if (waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status)) {
		CHECK(0);
		return;
	}
	ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)PTRACE_O_TRACESYSGOOD);
	/* Just exec'ed, nothing but the executable and the dynamic loader
	 * mapped: the code deallocator's place from the files alone. */
	files_err = python__code_dealloc_in_files(pid, NULL, &fp);
	if (files_err)
		fprintf(stderr, "%s: the code deallocator from its files: %s\n", python,
			strerror(-files_err));
	CHECK_EQ_INT(files_err, 0);
	while (calls < 10000) {
		if (ptrace(PTRACE_SYSCALL, pid, NULL, (void *)(long)sig) ||
		    waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status))
			break;
		/* A signal for the child: passed on at the next resume. */
		sig = WSTOPSIG(status) == (SIGTRAP | 0x80) ? 0 : WSTOPSIG(status);
		if (sig)
			continue;
		/* Entry and exit stops alternate; the exits show the calls'
		 * effects (a new mapping). */
		in_call = !in_call;
		if (in_call)
			continue;
		calls++;
		err = python__detect(pid, &pp, why, sizeof(why));
		if (err != -EAGAIN)
			break;
		again++;
	}
	if (err)
		fprintf(stderr, "%s, after system call %d: %s\n", python, calls, why);
	CHECK_EQ_INT(err, 0);
	/* The loaded library was seen before it could be read. */
	CHECK(again > 0);
	/* The files said what the running interpreter says: the same file
	 * and offset, where the probe is placed before the file is mapped. */
	if (!err && !files_err) {
		CHECK(pp.code_dealloc_off != 0);
		CHECK_EQ_INT(fp.code_dealloc_off, pp.code_dealloc_off);
		CHECK_EQ_INT(fp.file_inode, pp.file_inode);
		CHECK_EQ_INT(fp.file_dev_major, pp.file_dev_major);
		CHECK_EQ_INT(fp.file_dev_minor, pp.file_dev_minor);
		CHECK_EQ_STR(fp.path, pp.path);
	}
	if (!err && !exe_err) {
		CHECK_EQ_INT(xp.code_dealloc_off, pp.code_dealloc_off);
		CHECK_EQ_INT(xp.file_inode, pp.file_inode);
		CHECK_EQ_STR(xp.path, pp.path);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void test_detect_during_startup(void)
{
	char py[512];
	size_t i;
	int tested = 0;

	for (i = 0; i < N_TEST_PYTHONS; i++) {
		const struct test_python *tp = &test_pythons[i];

		if (test_python_find(tp, py, sizeof(py))) {
			SKIP_PART("%s not found (%s)", tp->name, tp->install);
			continue;
		}
		check_startup(py);
		tested++;
	}
	if (!tested)
		t_skip_current = 1;
}

static void test_detect_not_python(void)
{
	struct py_proc pp;
	char why[512];
	pid_t pid = fork();
	int err;

	if (pid == 0) {
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	usleep(100 * 1000);
	err = python__detect(pid, &pp, why, sizeof(why));
	CHECK_EQ_INT(err, -ENOENT);
	CHECK(strstr(why, "not a Python interpreter") != NULL);
	/* A program that is not Python is not kept in the cache. */
	struct elf_cache *c = elf_cache__new(NULL);

	CHECK(c != NULL);
	if (c) {
		CHECK_EQ_INT(python__detect_cached(pid, &pp, c, why, sizeof(why)), -ENOENT);
		CHECK_EQ_INT(elf_cache__count(c), 0);
		elf_cache__free(c);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	err = python__detect(pid, &pp, why, sizeof(why));
	CHECK_EQ_INT(err, -ESRCH);
}

int main(void)
{
	RUN_TEST(test_minor_from_name);
	RUN_TEST(test_version_string);
	RUN_TEST(test_check_binary);
	RUN_TEST(test_detect_live);
	RUN_TEST(test_detect_during_startup);
	RUN_TEST(test_detect_not_python);
	return test_summary("python");
}
