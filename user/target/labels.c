// SPDX-License-Identifier: BSD-2-Clause
/*
 * A process's labels (labels.h).  The cgroup paths the runtimes make:
 *
 *   /system.slice/docker-ID.scope                 Docker (systemd driver)
 *   /docker/ID                                    Docker (cgroupfs driver)
 *   /kubepods.slice/kubepods-burstable.slice/
 *     kubepods-burstable-podUID_WITH_UNDERSCORES.slice/cri-containerd-ID.scope
 *   /kubepods/burstable/podUID/ID                 Kubernetes (cgroupfs driver)
 *   .../crio-ID.scope, .../libpod-ID.scope        CRI-O, Podman
 *
 * The container's id is the last component's run of 64 hex digits; the pod's
 * UID follows "pod" in a component (with '_' for '-' under systemd).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "target/labels.h"

#define ID_LEN 64
#define UID_LEN 36

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* A run of exactly 64 hex digits in [s, end), or NULL. */
static const char *hex_id(const char *s, const char *end)
{
	const char *p = s;

	while (p < end) {
		const char *q = p;

		while (q < end && is_hex(*q))
			q++;
		if (q - p == ID_LEN)
			return p;
		p = q < end ? q + 1 : q;
	}
	return NULL;
}

/* A pod UID after "pod" in [s, end): 8-4-4-4-12 hex digits, with '-' or
 * '_'; written with '-'. */
static bool pod_uid(const char *s, const char *end, char *out)
{
	static const int dash[] = { 8, 13, 18, 23 };
	const char *p;
	int i, d;

	for (p = s; p + 3 + UID_LEN <= end; p++) {
		if (strncmp(p, "pod", 3))
			continue;
		for (i = 0, d = 0; i < UID_LEN; i++) {
			char c = p[3 + i];

			if (d < 4 && i == dash[d]) {
				if (c != '-' && c != '_')
					break;
				out[i] = '-';
				d++;
			} else if (is_hex(c)) {
				out[i] = c;
			} else {
				break;
			}
		}
		if (i == UID_LEN && (p + 3 + UID_LEN == end || !is_hex(p[3 + UID_LEN]))) {
			out[UID_LEN] = '\0';
			return true;
		}
	}
	return false;
}

void labels_from_cgroup(const char *cgroup, struct proc_labels *l)
{
	const char *end = cgroup + strlen(cgroup), *comp_end = end;

	l->container_id[0] = l->pod_uid[0] = '\0';
	while (comp_end > cgroup) {
		const char *comp = comp_end;
		const char *id;

		while (comp > cgroup && comp[-1] != '/')
			comp--;
		if (!l->container_id[0] && (id = hex_id(comp, comp_end))) {
			memcpy(l->container_id, id, ID_LEN);
			l->container_id[ID_LEN] = '\0';
		}
		if (!l->pod_uid[0])
			pod_uid(comp, comp_end, l->pod_uid);
		comp_end = comp > cgroup ? comp - 1 : cgroup;
	}
}

/* The first line of a file under the process's root, resolved inside that
 * root (its absolute links too: a container's /var/run is a link to /run). */
static void read_in_root(int root, const char *path, char *out, size_t n)
{
	struct open_how how = { .flags = O_RDONLY | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT };
	int fd = (int)syscall(SYS_openat2, root, path, &how, sizeof(how));
	ssize_t len;

	out[0] = '\0';
	if (fd < 0)
		return;
	len = read(fd, out, n - 1);
	close(fd);
	if (len <= 0) {
		out[0] = '\0';
		return;
	}
	out[len] = '\0';
	out[strcspn(out, "\r\n")] = '\0';
	/* Printable only: it goes into JSON and headers of requests. */
	for (char *p = out; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

/* Whether a v1 hierarchy's controller list ("cpu,cpuacct") has name. */
static bool has_ctrl(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return true;
	return false;
}

int labels_read(const char *proc, int pid, struct proc_labels *l)
{
	char path[128], line[1024];
	int best = 0;
	FILE *f;
	int root;

	memset(l, 0, sizeof(*l));
	snprintf(path, sizeof(path), "%s/%d/cgroup", proc, pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	/* Cgroup v2's path ("0::PATH"), unless it is the root of a hybrid
	 * setup whose v1 hierarchies say more: then v1's cpu, else its
	 * name=systemd. */
	while (fgets(line, sizeof(line), f)) {
		char *ctrl = strchr(line, ':'), *cg = ctrl ? strchr(ctrl + 1, ':') : NULL;
		int rank;

		if (!cg)
			continue;
		*cg++ = '\0';
		cg[strcspn(cg, "\n")] = '\0';
		ctrl++;
		rank = !*ctrl			       ? (strcmp(cg, "/") ? 4 : 1)
		       : has_ctrl(ctrl, "cpu")	       ? 3
		       : !strcmp(ctrl, "name=systemd") ? 2
						       : 0;
		if (rank > best) {
			best = rank;
			snprintf(l->cgroup, sizeof(l->cgroup), "%s", cg);
		}
	}
	fclose(f);
	labels_from_cgroup(l->cgroup, l);
	if (!l->pod_uid[0])
		return 0;
	snprintf(path, sizeof(path), "%s/%d/root", proc, pid);
	root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return 0;
	read_in_root(root, "/var/run/secrets/kubernetes.io/serviceaccount/namespace",
		     l->k8s_namespace, sizeof(l->k8s_namespace));
	read_in_root(root, "/etc/hostname", l->k8s_pod_name, sizeof(l->k8s_pod_name));
	close(root);
	return 0;
}
