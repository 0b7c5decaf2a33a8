// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/creds.h"
#include "base/log.h"

static int parse_id(const char *s, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 10);
	return errno || end == s || *end || *out > 0x7fffffff ? -EINVAL : 0;
}

int creds_from_env(struct user_creds *c)
{
	const char *su = getenv("SUDO_UID"), *sg = getenv("SUDO_GID");
	const char *name = getenv("SUDO_USER");
	unsigned long uid, gid;
	struct passwd *pw;
	int n;

	memset(c, 0, sizeof(*c));
	if (geteuid() != 0 || !su)
		return 0;
	if (parse_id(su, &uid) || (sg && parse_id(sg, &gid))) {
		pr_warn("SUDO_UID/SUDO_GID are not numbers; unset them or run through sudo\n");
		return -EINVAL;
	}
	/* sudo from root to root: nothing to drop. */
	if (uid == 0)
		return 0;
	pw = getpwuid(uid);
	c->drop = true;
	c->uid = uid;
	c->gid = sg ? (gid_t)gid : (pw ? pw->pw_gid : (gid_t)uid);
	snprintf(c->name, sizeof(c->name), "%s", name ? name : (pw ? pw->pw_name : ""));
	snprintf(c->home, sizeof(c->home), "%s", pw ? pw->pw_dir : "/");
	n = sizeof(c->groups) / sizeof(c->groups[0]);
	if (c->name[0] && getgrouplist(c->name, c->gid, c->groups, &n) >= 0) {
		c->ngroups = n;
	} else {
		c->groups[0] = c->gid;
		c->ngroups = 1;
	}
	return 0;
}

int creds_become_user(const struct user_creds *c)
{
	if (!c->drop)
		return 0;
	if (setgroups(c->ngroups, c->groups) || setresgid(c->gid, c->gid, c->gid) ||
	    setresuid(c->uid, c->uid, c->uid))
		return -errno;
	/* The program sees the user's environment, as under a plain run. */
	setenv("HOME", c->home, 1);
	if (c->name[0]) {
		setenv("USER", c->name, 1);
		setenv("LOGNAME", c->name, 1);
	}
	return 0;
}

void creds_fs_user(const struct user_creds *c, struct fs_creds *saved)
{
	saved->uid = setfsuid(-1);
	saved->gid = setfsgid(-1);
	if (c && c->drop) {
		setfsgid(c->gid);
		setfsuid(c->uid);
	}
}

void creds_fs_self(const struct fs_creds *saved)
{
	setfsuid(saved->uid);
	setfsgid(saved->gid);
}

int creds_missing_caps(char *buf, size_t n)
{
	/* CAP_SYS_ADMIN grants what CAP_BPF and CAP_PERFMON grant (the
	 * kernel's bpf_capable() and perfmon_capable() take either). */
	static const struct {
		int cap, or_cap;
		const char *name;
	} need[] = { { CAP_BPF, CAP_SYS_ADMIN, "CAP_BPF" },
		     { CAP_PERFMON, CAP_SYS_ADMIN, "CAP_PERFMON" },
		     { CAP_SYS_PTRACE, -1, "CAP_SYS_PTRACE" } };
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	size_t i, len = 0;
	int missing = 0;

#define HAS(c) ((c) >= 0 && (d[(c) / 32].effective & (1u << ((c) % 32))))
	buf[0] = '\0';
	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d))
		memset(d, 0, sizeof(d));
	for (i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		if (HAS(need[i].cap) || HAS(need[i].or_cap))
			continue;
		missing++;
		if (len < n)
			len += snprintf(buf + len, n - len, "%s%s", len ? ", " : "", need[i].name);
	}
#undef HAS
	return missing;
}

int creds_of_process(int pid, struct proc_ids *ids)
{
	char path[64], line[256];
	unsigned int real, eff, saved, fs;
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Uid: %u %u %u %u", &real, &eff, &saved, &fs) == 4) {
			ids->uid = real;
			ids->fsuid = fs;
			found |= 1;
		} else if (sscanf(line, "Gid: %u %u %u %u", &real, &eff, &saved, &fs) == 4) {
			ids->gid = real;
			ids->fsgid = fs;
			found |= 2;
		}
	}
	fclose(f);
	return found == 3 ? 0 : -EINVAL;
}
