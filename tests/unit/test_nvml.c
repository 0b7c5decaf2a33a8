// SPDX-License-Identifier: BSD-2-Clause
/* user/collect/nvml.c against the fake libnvidia-ml.so.1 (tests/gpu/fake_nvml.c),
 * whose answers come from a state file written here. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect/nvml.h"
#include "testlib.h"

static char state[64];

static void write_state(const char *text)
{
	char tmp[80];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", state);
	f = fopen(tmp, "w");
	if (!f)
		return;
	fputs(text, f);
	fclose(f);
	rename(tmp, state);
}

static bool near(double a, double b)
{
	return fabs(a - b) < 1e-9;
}

static void test_no_library(void)
{
	char why[256] = "";
	struct nvml *nv;

	setenv(NVML_ENV_LIB, "/nonexistent/libnvidia-ml.so.1", 1);
	nv = nvml__open(why, sizeof(why));
	CHECK(!nv);
	CHECK(strstr(why, "/nonexistent/libnvidia-ml.so.1 could not be loaded") != NULL);
	setenv(NVML_ENV_LIB, FAKE_NVML_PATH, 1);
}

static void test_init_fails(void)
{
	char why[256] = "";
	struct nvml *nv;

	write_state("init 9\n");
	nv = nvml__open(why, sizeof(why));
	CHECK(!nv);
	CHECK_EQ_STR(why, "nvmlInit_v2 failed: Driver Not Loaded");
	write_state("devices 0\n");
	nv = nvml__open(why, sizeof(why));
	CHECK(!nv);
	CHECK_EQ_STR(why, "NVML sees no GPU");
}

static void test_per_process(void)
{
	char why[256] = "", text[256];
	struct nvml_reading r;
	struct nvml_facts f;
	struct nvml *nv;
	int me = getpid();

	/* Two GPUs: the process runs 80 % of the first's SMs and holds
	 * memory on both; another process's samples do not count. */
	snprintf(text, sizeof(text),
		 "devices 2\nname 0 Fake A100\nutil 0 95\nproc 0 %d 80 1048576\n"
		 "proc 0 %d 100 4096\nproc 1 %d 0 2097152\n",
		 me, me + 1, me);
	write_state(text);
	nv = nvml__open(why, sizeof(why));
	CHECK(nv != NULL);
	if (!nv)
		return;
	CHECK_EQ_INT(nvml__poll(nv, me, &r), 0);
	/* (80 + 0) / 2 GPUs, as Scalene averages over the machine's GPUs. */
	CHECK(near(r.busy, 0.40));
	CHECK(near(r.mem_bytes, 3 << 20));
	nvml__facts(nv, &f);
	CHECK_EQ_INT(f.ndevices, 2);
	CHECK_EQ_STR(f.names[0], "Fake A100");
	CHECK_EQ_STR(f.names[1], "Fake GPU 1");
	CHECK_EQ_INT(f.per_process, 2);
	CHECK(f.memory);
	CHECK_EQ_INT(f.polls, 1);
	CHECK_EQ_INT(f.failures, 0);
	/* Gone from the GPUs: nothing of it. */
	write_state("devices 2\nutil 0 95\n");
	CHECK_EQ_INT(nvml__poll(nv, me, &r), 0);
	CHECK(near(r.busy, 0));
	CHECK(near(r.mem_bytes, 0));
	nvml__free(nv);
}

static void test_device_wide(void)
{
	char why[256] = "", text[256];
	struct nvml_reading r;
	struct nvml_facts f;
	struct nvml *nv;
	int me = getpid();

	/* The second GPU gives no per-process utilisation: its whole use is
	 * taken instead, and the facts say the mix. */
	snprintf(text, sizeof(text),
		 "devices 2\nper_process 1 0\nutil 1 60\nproc 0 %d 20 0\nproc 1 %d 5 512\n", me,
		 me);
	write_state(text);
	nv = nvml__open(why, sizeof(why));
	CHECK(nv != NULL);
	if (!nv)
		return;
	CHECK_EQ_INT(nvml__poll(nv, me, &r), 0);
	CHECK(near(r.busy, (20 + 60) / 2 / 100.0));
	CHECK(near(r.mem_bytes, 512));
	nvml__facts(nv, &f);
	CHECK_EQ_INT(f.per_process, 1);
	nvml__free(nv);
}

/* NVML_VALUE_NOT_AVAILABLE for the process's memory: the utilisation still
 * counts, the memory is unknown and said to be. */
static void test_memory_not_available(void)
{
	char why[256] = "", text[256];
	struct nvml_reading r;
	struct nvml_facts f;
	struct nvml *nv;
	int me = getpid();

	snprintf(text, sizeof(text), "proc 0 %d 50 %llu\n", me, ~0ULL);
	write_state(text);
	nv = nvml__open(why, sizeof(why));
	CHECK(nv != NULL);
	if (!nv)
		return;
	CHECK_EQ_INT(nvml__poll(nv, me, &r), 0);
	CHECK(near(r.busy, 0.5));
	CHECK(r.mem_bytes < 0);
	nvml__facts(nv, &f);
	CHECK_EQ_INT(f.memory_unread, 1);
	CHECK_EQ_INT(f.failures, 0);
	CHECK(strstr(f.last_error, "does not give the process's memory") != NULL);
	nvml__free(nv);
}

int main(void)
{
	snprintf(state, sizeof(state), "/tmp/test_nvml_%d.state", (int)getpid());
	setenv("FAKE_NVML_STATE", state, 1);
	setenv(NVML_ENV_LIB, FAKE_NVML_PATH, 1);
	RUN_TEST(test_no_library);
	RUN_TEST(test_init_fails);
	RUN_TEST(test_per_process);
	RUN_TEST(test_device_wide);
	RUN_TEST(test_memory_not_available);
	unlink(state);
	return test_summary("nvml");
}
