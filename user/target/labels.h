/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Where a process runs, as a fleet's backends label it: its cgroup, the
 * container that cgroup is (the runtimes name it by a 64-hex-digit id), and,
 * in a Kubernetes pod, the pod's UID (from the cgroup too), namespace and
 * name (from inside the pod's own root).  Read from the node alone: no API
 * server is asked.
 */
#ifndef TARGET_LABELS_H
#define TARGET_LABELS_H

struct proc_labels {
	char cgroup[512];	/* cgroup v2's path, or v1's of the cpu or systemd hierarchy */
	char container_id[65];	/* "" when none is named */
	char pod_uid[37];	/* "" outside Kubernetes */
	char k8s_namespace[64]; /* its service account's namespace, where mounted */
	char k8s_pod_name[254]; /* the pod's host name: its name, unless the pod sets another */
};

/* The container id and the pod UID that a cgroup path names (the rest of l
 * is left as it is). */
void labels_from_cgroup(const char *cgroup, struct proc_labels *l);
/* Reads pid's labels (proc: the proc file system's mount, "/proc"); 0, or
 * -errno when its cgroup cannot be read (the process is gone). */
int labels_read(const char *proc, int pid, struct proc_labels *l);

#endif /* TARGET_LABELS_H */
