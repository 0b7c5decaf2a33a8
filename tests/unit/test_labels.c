/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * user/target/labels.c: the container id and pod UID in the cgroup paths
 * Docker, containerd, CRI-O and Podman make, with the systemd and the
 * cgroupfs drivers; a host process with neither; and, from a proc tree made
 * here, the cgroup line chosen and the pod's namespace and name read inside
 * its root, where /var/run is an absolute link (/run) that must resolve in
 * that root, not in ours.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testlib.h"
#include "target/labels.h"

#define ID "4a8c2b0d9e1f3a5b7c9d0e2f4a6b8c0d1e3f5a7b9c0d2e4f6a8b0c1d3e5f7a9b"
#define ID63 "a8c2b0d9e1f3a5b7c9d0e2f4a6b8c0d1e3f5a7b9c0d2e4f6a8b0c1d3e5f7a9b"
#define UID "1f0e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"
#define UID_ "1f0e2d3c_4b5a_6978_8a9b_0c1d2e3f4a5b"

static void test_cgroup_paths(void)
{
	static const struct {
		const char *path, *id, *uid;
	} cases[] = {
		{ "/system.slice/docker-" ID ".scope", ID, "" },
		{ "/docker/" ID, ID, "" },
		{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
		  ".slice/cri-containerd-" ID ".scope",
		  ID, UID },
		{ "/kubepods/burstable/pod" UID "/" ID, ID, UID },
		{ "/kubepods.slice/kubepods-pod" UID_ ".slice/crio-" ID ".scope", ID, UID },
		{ "/machine.slice/libpod-" ID ".scope/container", ID, "" },
		/* The pod's own cgroup (its pause process): a pod, no container. */
		{ "/kubepods/besteffort/pod" UID, "", UID },
		{ "/user.slice/user-1000.slice/session-3.scope", "", "" },
		{ "/", "", "" },
		{ "", "", "" },
		/* 63 and 65 hex digits are not an id. */
		{ "/docker/" ID "0", "", "" },
		{ "/docker/" ID63, "", "" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct proc_labels l;

		memset(&l, 'x', sizeof(l));
		labels_from_cgroup(cases[i].path, &l);
		CHECK_EQ_STR(l.container_id, cases[i].id);
		CHECK_EQ_STR(l.pod_uid, cases[i].uid);
	}
}

static char tmp[] = "/tmp/labels-test-XXXXXX";

static void put(const char *rel, const char *text)
{
	char path[PATH_MAX], dir[PATH_MAX], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmp, rel);
	snprintf(dir, sizeof(dir), "%s", path);
	for (slash = strchr(dir + strlen(tmp) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(dir, 0755);
		*slash = '/';
	}
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void test_read(void)
{
	char link[PATH_MAX];
	struct proc_labels l;

	if (!mkdtemp(tmp)) {
		CHECK(false);
		return;
	}
	/* A pod's container on a hybrid host: v2 names the root, v1's cpu
	 * hierarchy the container. */
	put("10/cgroup", "12:cpuset:/\n"
			 "4:cpu,cpuacct:/kubepods/burstable/pod" UID "/" ID "\n"
			 "1:name=systemd:/kubepods/burstable/pod" UID "/" ID "\n"
			 "0::/\n");
	put("10/root/run/secrets/kubernetes.io/serviceaccount/namespace", "payments\n");
	put("10/root/etc/hostname", "api-7d9f\n");
	snprintf(link, sizeof(link), "%s/10/root/var", tmp);
	mkdir(link, 0755);
	snprintf(link, sizeof(link), "%s/10/root/var/run", tmp);
	CHECK_EQ_INT(symlink("/run", link), 0);
	CHECK_EQ_INT(labels_read(tmp, 10, &l), 0);
	CHECK_EQ_STR(l.cgroup, "/kubepods/burstable/pod" UID "/" ID);
	CHECK_EQ_STR(l.container_id, ID);
	CHECK_EQ_STR(l.pod_uid, UID);
	CHECK_EQ_STR(l.k8s_namespace, "payments");
	CHECK_EQ_STR(l.k8s_pod_name, "api-7d9f");

	/* Cgroup v2 only, a Docker container: no pod, so nothing is read in
	 * its root (its hostname is not a pod's name). */
	put("11/cgroup", "0::/system.slice/docker-" ID ".scope\n");
	put("11/root/etc/hostname", "a1b2c3\n");
	CHECK_EQ_INT(labels_read(tmp, 11, &l), 0);
	CHECK_EQ_STR(l.cgroup, "/system.slice/docker-" ID ".scope");
	CHECK_EQ_STR(l.container_id, ID);
	CHECK_EQ_STR(l.pod_uid, "");
	CHECK_EQ_STR(l.k8s_pod_name, "");

	/* A process on the host, and one gone. */
	put("12/cgroup", "0::/user.slice/user-1000.slice/session-3.scope\n");
	CHECK_EQ_INT(labels_read(tmp, 12, &l), 0);
	CHECK_EQ_STR(l.cgroup, "/user.slice/user-1000.slice/session-3.scope");
	CHECK_EQ_STR(l.container_id, "");
	CHECK_EQ_INT(labels_read(tmp, 13, &l), -ENOENT);
}

/* This process, through the real /proc. */
static void test_self(void)
{
	struct proc_labels l;

	CHECK_EQ_INT(labels_read("/proc", getpid(), &l), 0);
	CHECK(l.cgroup[0] == '/');
}

int main(void)
{
	char cmd[PATH_MAX + 16];

	RUN_TEST(test_cgroup_paths);
	RUN_TEST(test_read);
	RUN_TEST(test_self);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", tmp);
	return test_summary("labels");
}
