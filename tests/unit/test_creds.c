/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * user/base/creds.c: the user who asked, under sudo.  SUDO_UID/SUDO_GID/
 * SUDO_USER read (malformed ones refused, root to root and a plain run
 * dropping nothing), the user's identity filled from the password file or
 * without it; a child becoming the user for good (ids, groups, HOME, USER);
 * file-system credentials switched for one thread and restored.  As root the
 * user is `nobody`; what needs root skips otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"
#include "base/creds.h"
#include "base/log.h"

/* No entry in the password file has it (checked in main). */
#define UNKNOWN_UID 54321

static char tmpdir[] = "/tmp/creds-test-XXXXXX";
static uid_t nobody_uid;
static gid_t nobody_gid;
static bool have_nobody;

/* The sudo variables as given (NULL: unset). */
static void sudo_env(const char *uid, const char *gid, const char *user)
{
	if (uid)
		setenv("SUDO_UID", uid, 1);
	else
		unsetenv("SUDO_UID");
	if (gid)
		setenv("SUDO_GID", gid, 1);
	else
		unsetenv("SUDO_GID");
	if (user)
		setenv("SUDO_USER", user, 1);
	else
		unsetenv("SUDO_USER");
}

/* Runs fn in a child process (it may change its ids for good); the checks
 * that fail there fail here. */
static void in_child(void (*fn)(void))
{
	int st = 0;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		t_checks_failed = 0;
		fn();
		fflush(NULL);
		_exit(t_checks_failed ? 1 : 0);
	}
	CHECK(pid > 0);
	if (pid < 0)
		return;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static char nobody_str[16], nogroup_str[16];

/* ------------------------------------------------------ creds_from_env */

/* Malformed ids are refused, whoever runs; never a drop. */
static void test_malformed_refused(void)
{
	static const char *const bad[] = {
		"abc", "12x", "", " ", "-1", "4294967296", "2147483648"
	};
	struct user_creds c;
	size_t i;

	if (geteuid() != 0)
		SKIP_TEST("not root: SUDO_UID is not read at all");
	log_set_level(-1); /* each refusal says why: not here */
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sudo_env(bad[i], NULL, NULL);
		memset(&c, 0xa5, sizeof(c));
		CHECK_EQ_INT(creds_from_env(&c), -EINVAL);
		CHECK(!c.drop);
		/* The same in SUDO_GID, with a good SUDO_UID. */
		sudo_env(nobody_str, bad[i], NULL);
		CHECK_EQ_INT(creds_from_env(&c), -EINVAL);
		CHECK(!c.drop);
	}
	log_set_level(LOG_WARN);
	/* The largest id it takes. */
	sudo_env("2147483647", "2147483647", "someone");
	CHECK_EQ_INT(creds_from_env(&c), 0);
	CHECK(c.drop && c.uid == 2147483647 && c.gid == 2147483647);
	sudo_env(NULL, NULL, NULL);
}

/* Nothing to drop: no SUDO_UID, or sudo from root to root. */
static void test_nothing_to_drop(void)
{
	struct user_creds c;

	sudo_env(NULL, "100", "someone");
	memset(&c, 0xa5, sizeof(c));
	CHECK_EQ_INT(creds_from_env(&c), 0);
	CHECK(!c.drop);
	CHECK_EQ_INT(c.ngroups, 0);
	sudo_env("0", "0", "root");
	CHECK_EQ_INT(creds_from_env(&c), 0);
	CHECK(!c.drop);
	sudo_env(NULL, NULL, NULL);
}

/* A process that is not root reads nothing, whatever the variables say
 * (checked as nobody when root). */
static void not_root_body(void)
{
	struct user_creds c;

	sudo_env("1000", "1000", "someone");
	memset(&c, 0xa5, sizeof(c));
	CHECK_EQ_INT(creds_from_env(&c), 0);
	CHECK(!c.drop);
	/* Even malformed: not looked at. */
	sudo_env("junk", NULL, NULL);
	CHECK_EQ_INT(creds_from_env(&c), 0);
	CHECK(!c.drop);
}

static void drop_to_nobody_then_not_root(void)
{
	CHECK(!setgroups(0, NULL) && !setresgid(nobody_gid, nobody_gid, nobody_gid) &&
	      !setresuid(nobody_uid, nobody_uid, nobody_uid));
	not_root_body();
}

static void test_not_root_reads_nothing(void)
{
	if (geteuid() != 0) {
		not_root_body();
		sudo_env(NULL, NULL, NULL);
		return;
	}
	if (!have_nobody)
		SKIP_TEST("no user nobody here");
	in_child(drop_to_nobody_then_not_root);
}

/* A user the password file knows: gid from SUDO_GID or the file, the name
 * from SUDO_USER or the file, home and groups from the file. */
static void test_known_user(void)
{
	struct user_creds c;
	struct passwd *pw;
	bool in;
	int i;

	if (geteuid() != 0)
		SKIP_TEST("not root: SUDO_UID is not read");
	if (!have_nobody)
		SKIP_TEST("no user nobody here");
	pw = getpwuid(nobody_uid);
	CHECK(pw != NULL);
	if (!pw)
		return;
	sudo_env(nobody_str, NULL, NULL);
	CHECK_EQ_INT(creds_from_env(&c), 0);
	CHECK(c.drop);
	CHECK_EQ_INT(c.uid, nobody_uid);
	CHECK_EQ_INT(c.gid, nobody_gid); /* the file's, no SUDO_GID */
	CHECK_EQ_STR(c.name, "nobody");
	CHECK_EQ_STR(c.home, pw->pw_dir);
	CHECK(c.ngroups >= 1);
	for (i = 0, in = false; i < c.ngroups; i++)
		in |= c.groups[i] == nobody_gid;
	CHECK(in);
	/* Never root's group 0, which nobody is not in. */
	for (i = 0; i < c.ngroups; i++)
		CHECK(c.groups[i] != 0);

	/* The file's group, not the uid taken for one: a user whose group
	 * number is not its uid. */
	setpwent();
	while ((pw = getpwent()) && (pw->pw_uid == 0 || pw->pw_uid == pw->pw_gid))
		;
	if (pw) {
		char uid[16];
		uid_t want_uid = pw->pw_uid;
		gid_t want_gid = pw->pw_gid;
		char want_name[64];

		snprintf(want_name, sizeof(want_name), "%s", pw->pw_name);
		snprintf(uid, sizeof(uid), "%u", (unsigned)want_uid);
		sudo_env(uid, NULL, NULL);
		CHECK_EQ_INT(creds_from_env(&c), 0);
		CHECK_EQ_INT(c.uid, want_uid);
		CHECK_EQ_INT(c.gid, want_gid);
		CHECK_EQ_STR(c.name, want_name);
	}
	endpwent();

	/* SUDO_GID and SUDO_USER win over the file. */
	sudo_env(nobody_str, "4242", "alias");
	CHECK_EQ_INT(creds_from_env(&c), 0);
	CHECK(c.drop);
	CHECK_EQ_INT(c.uid, nobody_uid);
	CHECK_EQ_INT(c.gid, 4242);
	CHECK_EQ_STR(c.name, "alias");
	sudo_env(NULL, NULL, NULL);
}

/* A uid with no password entry: its gid is its uid, no name, home "/",
 * its only group its gid. */
static void test_unknown_user(void)
{
	struct user_creds c;
	char uid[16];

	if (geteuid() != 0)
		SKIP_TEST("not root: SUDO_UID is not read");
	if (getpwuid(UNKNOWN_UID))
		SKIP_TEST("uid %d has an entry here", UNKNOWN_UID);
	snprintf(uid, sizeof(uid), "%d", UNKNOWN_UID);
	sudo_env(uid, NULL, NULL);
	CHECK_EQ_INT(creds_from_env(&c), 0);
	CHECK(c.drop);
	CHECK_EQ_INT(c.uid, UNKNOWN_UID);
	CHECK_EQ_INT(c.gid, UNKNOWN_UID);
	CHECK_EQ_STR(c.name, "");
	CHECK_EQ_STR(c.home, "/");
	CHECK_EQ_INT(c.ngroups, 1);
	CHECK_EQ_INT(c.groups[0], UNKNOWN_UID);
	sudo_env(NULL, NULL, NULL);
}

/* ------------------------------------------------- creds_become_user */

static struct user_creds child_creds;

static void become_body(void)
{
	uid_t r, e, s;
	gid_t rg, eg, sg, groups[64];
	int n, i;

	setenv("HOME", "/root", 1);
	setenv("USER", "root", 1);
	CHECK_EQ_INT(creds_become_user(&child_creds), 0);
	CHECK(!getresuid(&r, &e, &s) && r == nobody_uid && e == nobody_uid && s == nobody_uid);
	CHECK(!getresgid(&rg, &eg, &sg) && rg == nobody_gid && eg == nobody_gid &&
	      sg == nobody_gid);
	/* Root's groups are gone: only the user's. */
	n = getgroups(64, groups);
	CHECK_EQ_INT(n, child_creds.ngroups);
	for (i = 0; i < n; i++)
		CHECK(groups[i] != 0);
	CHECK_EQ_STR(getenv("HOME"), child_creds.home);
	CHECK_EQ_STR(getenv("USER"), "nobody");
	CHECK_EQ_STR(getenv("LOGNAME"), "nobody");
	/* For good: root cannot be had back. */
	CHECK(setuid(0) < 0 && errno == EPERM);
	CHECK(geteuid() == nobody_uid);
}

static void test_become_user(void)
{
	if (geteuid() != 0)
		SKIP_TEST("not root: nobody to become");
	if (!have_nobody)
		SKIP_TEST("no user nobody here");
	sudo_env(nobody_str, NULL, NULL);
	CHECK_EQ_INT(creds_from_env(&child_creds), 0);
	sudo_env(NULL, NULL, NULL);
	CHECK(child_creds.drop);
	in_child(become_body);
}

/* Without a drop: nothing changes, not even the environment. */
static void no_drop_body(void)
{
	struct user_creds c = { .drop = false, .uid = 1234, .gid = 1234 };
	uid_t before = geteuid();

	setenv("HOME", "/somewhere", 1);
	CHECK_EQ_INT(creds_become_user(&c), 0);
	CHECK(geteuid() == before);
	CHECK_EQ_STR(getenv("HOME"), "/somewhere");
}

static void test_become_no_drop(void)
{
	in_child(no_drop_body);
}

/* A process that may not switch ids gets the error, not a half-done
 * switch that it takes for done. */
static void refused_body(void)
{
	struct user_creds c = { .drop = true, .uid = 1234, .gid = 1234, .ngroups = 1 };
	uid_t before = geteuid();

	c.groups[0] = 1234;
	if (before == 0)
		CHECK(!setgroups(0, NULL) && !setresgid(nobody_gid, nobody_gid, nobody_gid) &&
		      !setresuid(nobody_uid, nobody_uid, nobody_uid));
	before = geteuid();
	CHECK_EQ_INT(creds_become_user(&c), -EPERM);
	CHECK(geteuid() == before);
}

static void test_become_refused(void)
{
	if (geteuid() == 0 && !have_nobody)
		SKIP_TEST("no user nobody here");
	in_child(refused_body);
}

/* ------------------------------------------- file-system credentials */

/* Creates tmpdir/name; its owner in *uid, *gid. */
static int make_file(const char *name, uid_t *uid, gid_t *gid)
{
	char path[PATH_MAX];
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	close(fd);
	if (stat(path, &st))
		return -errno;
	*uid = st.st_uid;
	*gid = st.st_gid;
	return 0;
}

/* Files opened as the user are the user's, and what only root may open
 * is refused, until the thread is itself again. */
static void test_fs_user(void)
{
	struct user_creds c;
	struct fs_creds saved;
	char secret[PATH_MAX];
	uid_t u;
	gid_t g;
	int fd;

	if (geteuid() != 0)
		SKIP_TEST("not root: no other user's credentials to take");
	if (!have_nobody)
		SKIP_TEST("no user nobody here");
	sudo_env(nobody_str, nogroup_str, NULL);
	CHECK_EQ_INT(creds_from_env(&c), 0);
	sudo_env(NULL, NULL, NULL);
	snprintf(secret, sizeof(secret), "%s/secret", tmpdir);
	fd = open(secret, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);

	creds_fs_user(&c, &saved);
	CHECK_EQ_INT(saved.uid, 0);
	CHECK_EQ_INT(saved.gid, getegid());
	CHECK_EQ_INT(make_file("as-user", &u, &g), 0);
	CHECK_EQ_INT(u, nobody_uid);
	CHECK_EQ_INT(g, nobody_gid);
	fd = open(secret, O_RDONLY | O_CLOEXEC);
	CHECK(fd < 0 && errno == EACCES);
	if (fd >= 0)
		close(fd);
	/* Only the file-system ids changed: the thread is root otherwise. */
	CHECK(geteuid() == 0);
	creds_fs_self(&saved);

	CHECK_EQ_INT(make_file("as-self", &u, &g), 0);
	CHECK_EQ_INT(u, 0);
	fd = open(secret, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);

	/* NULL, or creds without a drop: nothing changes. */
	creds_fs_user(NULL, &saved);
	CHECK_EQ_INT(make_file("null-creds", &u, &g), 0);
	CHECK_EQ_INT(u, 0);
	creds_fs_self(&saved);
	c.drop = false;
	creds_fs_user(&c, &saved);
	CHECK_EQ_INT(make_file("no-drop", &u, &g), 0);
	CHECK_EQ_INT(u, 0);
	creds_fs_self(&saved);
}

/* Not root: NULL or no drop keeps the caller's own ids. */
static void test_fs_user_plain(void)
{
	struct fs_creds saved;
	uid_t u;
	gid_t g;

	creds_fs_user(NULL, &saved);
	CHECK_EQ_INT(saved.uid, geteuid());
	CHECK_EQ_INT(make_file("plain", &u, &g), 0);
	CHECK_EQ_INT(u, geteuid());
	creds_fs_self(&saved);
	CHECK_EQ_INT(setfsuid(-1), geteuid());
}

/* Another process's ids: this one's, as the kernel has them; a process
 * that is not there is an error. */
static void test_of_process(void)
{
	struct proc_ids ids = { 0 };

	CHECK_EQ_INT(creds_of_process(getpid(), &ids), 0);
	CHECK_EQ_INT(ids.uid, getuid());
	CHECK_EQ_INT(ids.gid, getgid());
	CHECK_EQ_INT(ids.fsuid, geteuid());
	CHECK_EQ_INT(ids.fsgid, getegid());
	CHECK_EQ_INT(creds_of_process(-1, &ids), -ENOENT);
}

int main(void)
{
	char cmd[PATH_MAX + 16];
	struct passwd *pw = getpwnam("nobody");
	int rc;

	if (pw) {
		have_nobody = true;
		nobody_uid = pw->pw_uid;
		nobody_gid = pw->pw_gid;
		snprintf(nobody_str, sizeof(nobody_str), "%u", (unsigned)nobody_uid);
		snprintf(nogroup_str, sizeof(nogroup_str), "%u", (unsigned)nobody_gid);
	}
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	/* Anyone may make files in it (nobody, in test_fs_user). */
	chmod(tmpdir, 0777);
	RUN_TEST(test_malformed_refused);
	RUN_TEST(test_nothing_to_drop);
	RUN_TEST(test_not_root_reads_nothing);
	RUN_TEST(test_known_user);
	RUN_TEST(test_unknown_user);
	RUN_TEST(test_become_user);
	RUN_TEST(test_become_no_drop);
	RUN_TEST(test_become_refused);
	RUN_TEST(test_fs_user);
	RUN_TEST(test_of_process);
	RUN_TEST(test_fs_user_plain);
	rc = test_summary("creds");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return rc;
}
