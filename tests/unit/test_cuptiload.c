// SPDX-License-Identifier: BSD-2-Clause
/*
 * Where the injection library finds CUPTI (user/gpu/cuptiload.c), without a
 * GPU: fake CUDA runtimes and a fake CUPTI (tests/gpu/) laid out as the
 * toolkit and the nvidia-* pip packages lay them out, each case in a child
 * process of its own (a loaded library stays loaded).  Each checks which
 * file was opened, where it was said to come from, and that the functions
 * are the fake's.
 */
#include "testlib.h"

#ifdef GPU_SKIP_REASON

static void test_cuptiload(void)
{
	SKIP_TEST("%s", GPU_SKIP_REASON);
}

int main(void)
{
	RUN_TEST(test_cuptiload);
	return test_summary("cuptiload");
}

#else

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuptiload.h"

/* LAYOUT_DIR (the Makefile's): the fakes, laid out as
 *   pip12/nvidia/cuda_runtime/lib/libcudart.so.12
 *   pip12/nvidia/cuda_cupti/lib/libcupti.so.12      (CUDA 12's pip packages)
 *   pip13/nvidia/cu13/lib/libcudart.so.13, libcupti.so.13  (CUDA 13's)
 *   toolkit/lib64/libcudart.so.13
 *   toolkit/extras/CUPTI/lib64/libcupti.so, libcupti.so.13 (the toolkit)
 */
static char layout[PATH_MAX / 2];

/* Runs fn in a child; its exit status is the number of failed checks. */
static void in_child(void (*fn)(void))
{
	int status = 0;
	pid_t pid = fork();

	if (pid == 0) {
		fn();
		_exit(t_checks_failed ? 1 : 0);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void check_found(const char *runtime, const char *want, enum gpu_cupti_from want_from)
{
	char p[PATH_MAX], path[PATH_MAX], why[2048], real[PATH_MAX];
	struct cupti_api api;
	enum gpu_cupti_from from = GPU_CUPTI_UNKNOWN;
	uint32_t v = 0;

	if (runtime) {
		snprintf(p, sizeof(p), "%s/%s", layout, runtime);
		if (!dlopen(p, RTLD_NOW | RTLD_GLOBAL)) {
			fprintf(stderr, "cannot load %s: %s\n", p, dlerror());
			CHECK(0);
			return;
		}
	}
	CHECK_EQ_INT(cupti_load(&api, &from, path, sizeof(path), why, sizeof(why)), 0);
	CHECK_EQ_INT(from, want_from);
	snprintf(p, sizeof(p), "%s/%s", layout, want);
	CHECK(realpath(p, real) != NULL);
	if (strcmp(path, real))
		fprintf(stderr, "opened %s, expected %s (%s)\n", path, real, why);
	CHECK_EQ_STR(path, real);
	CHECK(api.GetVersion && api.GetVersion(&v) == CUPTI_SUCCESS);
	CHECK_EQ_INT(v, CUPTI_API_VERSION);
	CHECK(api.ActivityGetNextRecord && api.Subscribe);
}

/* CUDA 12's pip packages: the runtime and CUPTI in sibling packages. */
static void pip12(void)
{
	check_found("pip12/nvidia/cuda_runtime/lib/libcudart.so.12",
		    "pip12/nvidia/cuda_cupti/lib/libcupti.so.12", GPU_CUPTI_BY_RUNTIME);
}

/* CUDA 13's: one folder. */
static void pip13(void)
{
	check_found("pip13/nvidia/cu13/lib/libcudart.so.13", "pip13/nvidia/cu13/lib/libcupti.so.13",
		    GPU_CUPTI_BY_RUNTIME);
}

/* The toolkit: the runtime in lib64, CUPTI in extras/CUPTI/lib64. */
static void toolkit(void)
{
	check_found("toolkit/lib64/libcudart.so.13", "toolkit/extras/CUPTI/lib64/libcupti.so.13",
		    GPU_CUPTI_BY_RUNTIME);
}

/* A CUPTI the program loaded itself wins over the one by its runtime. */
static void loaded_first(void)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/pip13/nvidia/cu13/lib/libcupti.so.13", layout);
	CHECK(dlopen(p, RTLD_NOW | RTLD_LOCAL) != NULL);
	check_found("pip12/nvidia/cuda_runtime/lib/libcudart.so.12",
		    "pip13/nvidia/cu13/lib/libcupti.so.13", GPU_CUPTI_LOADED);
}

/* No runtime loaded: $CUDA_HOME's toolkit, where the dynamic linker's
 * search finds no libcupti by name (on a machine whose linker does, that
 * is what is found, and this case is skipped). */
static void cuda_home(void)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/toolkit", layout);
	setenv("CUDA_HOME", p, 1);
	check_found(NULL, "toolkit/extras/CUPTI/lib64/libcupti.so", GPU_CUPTI_TOOLKIT);
}

static int by_name_finds_one(void)
{
	static const char *const names[] = { "libcupti.so.13", "libcupti.so.12", "libcupti.so.11",
					     "libcupti.so" };
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);

		if (h) {
			dlclose(h);
			return 1;
		}
	}
	return 0;
}

/* Nothing anywhere: the reason names what was tried. */
static void none(void)
{
	char path[PATH_MAX], why[4096];
	struct cupti_api api;
	enum gpu_cupti_from from = GPU_CUPTI_UNKNOWN;

	setenv("CUDA_HOME", "/nonexistent-cuda", 1);
	CHECK_EQ_INT(cupti_load(&api, &from, path, sizeof(path), why, sizeof(why)), -ENOENT);
	CHECK(strstr(why, "no CUPTI found (tried ") == why);
	CHECK(strstr(why, "libcupti.so.13") != NULL);
	CHECK(strstr(why, "/nonexistent-cuda/extras/CUPTI/lib64/libcupti.so") != NULL);
}

static void test_layouts(void)
{
	in_child(pip12);
	in_child(pip13);
	in_child(toolkit);
	in_child(loaded_first);
}

/* No runtime loaded, and the dynamic linker knows a libcupti by name (this
 * machine's linker cache has the toolkit's): that one. */
static void by_name(void)
{
	char path[PATH_MAX], why[2048];
	struct cupti_api api;
	enum gpu_cupti_from from = GPU_CUPTI_UNKNOWN;

	CHECK_EQ_INT(cupti_load(&api, &from, path, sizeof(path), why, sizeof(why)), 0);
	CHECK_EQ_INT(from, GPU_CUPTI_BY_NAME);
	CHECK(strncmp(path, "libcupti.so", 11) == 0);
	CHECK(api.GetVersion != NULL);
}

static void test_no_runtime(void)
{
	struct stat sb;

	if (by_name_finds_one()) {
		in_child(by_name);
		return;
	}
	in_child(cuda_home);
	if (!stat("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so", &sb) ||
	    !stat("/usr/local/cuda/lib64/libcupti.so", &sb) ||
	    !stat("/usr/local/cuda/lib/libcupti.so", &sb)) {
		SKIP_PART("/usr/local/cuda has a libcupti, which is found when nothing else is");
		return;
	}
	in_child(none);
}

int main(void)
{
	snprintf(layout, sizeof(layout), "%s", LAYOUT_DIR);
	RUN_TEST(test_layouts);
	RUN_TEST(test_no_runtime);
	return test_summary("cuptiload");
}

#endif
