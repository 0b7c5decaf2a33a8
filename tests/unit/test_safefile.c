/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * user/base/safefile.c: files written for the user who asked.  The content
 * lands whole, mode 0644 whatever the umask, by a rename that replaces
 * whatever is at the path (a symlink, a hard link, an old file) without
 * writing through it; a failure leaves the old file and no temporary one.
 * As root with the creds of `nobody` (as under sudo): the file is the
 * user's, the writer's content callback runs as root, and what the user may
 * not do is refused (a folder of root's, another user's file in a sticky
 * folder).  What needs root skips otherwise.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testlib.h"
#include "base/creds.h"
#include "base/safefile.h"

static char tmpdir[] = "/tmp/safefile-test-XXXXXX";
static struct user_creds nobody; /* drop: as root under sudo -u nobody */
static bool have_nobody;

static void path_of(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", tmpdir, name);
}

/* The whole file at path (NUL-terminated, malloc'd), or NULL. */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf;
	size_t n;

	if (!f)
		return NULL;
	buf = calloc(1, 65536);
	n = buf ? fread(buf, 1, 65535, f) : 0;
	fclose(f);
	if (buf)
		buf[n] = '\0';
	return buf;
}

static bool has_content(const char *path, const char *want)
{
	char *s = slurp(path);
	bool ok = s && !strcmp(s, want);

	if (!ok)
		fprintf(stderr, "  %s holds \"%s\", expected \"%s\"\n", path, s ? s : "(none)",
			want);
	free(s);
	return ok;
}

static void put(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
	chmod(path, mode);
}

/* Temporary files the writer left in dir. */
static int leftovers(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += !strncmp(de->d_name, ".scalene-bpf-", 13);
	closedir(d);
	return n;
}

static int write_str(const char *path, const char *text, const struct user_creds *c)
{
	return outfile_write(path, text, strlen(text), c);
}

/* ------------------------------------------------------ any user */

/* A new file: its bytes, 0644 under a umask that would hide it, nothing
 * else left in the folder; writing again replaces it whole. */
static void test_write_new_and_replace(void)
{
	char path[PATH_MAX], big[40000];
	struct stat st;
	mode_t old = umask(077);

	path_of(path, sizeof(path), "out.json");
	CHECK_EQ_INT(write_str(path, "{\"a\": 1}\n", NULL), 0);
	umask(old);
	CHECK(has_content(path, "{\"a\": 1}\n"));
	CHECK(!lstat(path, &st) && S_ISREG(st.st_mode));
	CHECK_EQ_INT(st.st_mode & 07777, 0644);
	CHECK_EQ_INT(st.st_uid, geteuid());
	CHECK_EQ_INT(leftovers(tmpdir), 0);

	/* Shorter content: no tail of the old one stays. */
	CHECK_EQ_INT(write_str(path, "{}", NULL), 0);
	CHECK(has_content(path, "{}"));
	/* Larger than one write may take. */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK_EQ_INT(write_str(path, big, NULL), 0);
	CHECK(has_content(path, big));
	/* Empty. */
	CHECK_EQ_INT(outfile_write(path, "", 0, NULL), 0);
	CHECK(!stat(path, &st) && st.st_size == 0);
	CHECK_EQ_INT(leftovers(tmpdir), 0);
	unlink(path);
}

/* A symlink planted at the path is replaced, never written through: the
 * file it points to keeps its content. */
static void test_symlink_replaced(void)
{
	char path[PATH_MAX], victim[PATH_MAX];
	struct stat st;

	path_of(path, sizeof(path), "link.json");
	path_of(victim, sizeof(victim), "victim");
	put(victim, "precious", 0644);
	CHECK_EQ_INT(symlink(victim, path), 0);
	CHECK_EQ_INT(write_str(path, "profile", NULL), 0);
	CHECK(!lstat(path, &st) && S_ISREG(st.st_mode));
	CHECK(has_content(path, "profile"));
	CHECK(has_content(victim, "precious"));
	/* A dangling one too: nothing is made where it points. */
	unlink(path);
	CHECK_EQ_INT(symlink("/nonexistent-dir/x", path), 0);
	CHECK_EQ_INT(write_str(path, "again", NULL), 0);
	CHECK(!lstat(path, &st) && S_ISREG(st.st_mode));
	CHECK(has_content(path, "again"));
	unlink(path);
	unlink(victim);
}

/* A hard link at the path: the other name keeps the old content (the file
 * is not written in place). */
static void test_hard_link_not_written(void)
{
	char path[PATH_MAX], other[PATH_MAX];
	struct stat a, b;

	path_of(path, sizeof(path), "hard.json");
	path_of(other, sizeof(other), "other-name");
	put(other, "old", 0644);
	CHECK_EQ_INT(link(other, path), 0);
	CHECK_EQ_INT(write_str(path, "new", NULL), 0);
	CHECK(has_content(path, "new"));
	CHECK(has_content(other, "old"));
	CHECK(!stat(path, &a) && !stat(other, &b) && a.st_ino != b.st_ino);
	CHECK_EQ_INT(b.st_nlink, 1);
	unlink(path);
	unlink(other);
}

/* A folder at the path, or no folder for it: refused by the check and by
 * the write, which leaves nothing behind. */
static void test_refused_paths(void)
{
	char path[PATH_MAX], missing[PATH_MAX], longp[PATH_MAX + 100];
	struct stat st;

	path_of(path, sizeof(path), "a-dir");
	CHECK_EQ_INT(mkdir(path, 0755), 0);
	CHECK_EQ_INT(outfile_check(path, NULL), -EISDIR);
	CHECK(write_str(path, "x", NULL) < 0);
	CHECK(!lstat(path, &st) && S_ISDIR(st.st_mode));
	CHECK_EQ_INT(leftovers(tmpdir), 0);
	rmdir(path);

	path_of(missing, sizeof(missing), "no-such-dir/out.json");
	CHECK_EQ_INT(outfile_check(missing, NULL), -ENOENT);
	CHECK_EQ_INT(write_str(missing, "x", NULL), -ENOENT);

	/* No room for the temporary file's name next to it (checked before
	 * anything is made). */
	memset(longp, 'd', sizeof(longp) - 1);
	longp[0] = '/';
	longp[PATH_MAX - 10] = '/';
	longp[PATH_MAX - 9] = 'f';
	longp[PATH_MAX - 8] = '\0';
	CHECK_EQ_INT(write_str(longp, "x", NULL), -ENAMETOOLONG);
}

/* The check makes nothing: no file at the path, no temporary one. */
static void test_check_leaves_nothing(void)
{
	char path[PATH_MAX];

	path_of(path, sizeof(path), "checked.json");
	CHECK_EQ_INT(outfile_check(path, NULL), 0);
	CHECK(access(path, F_OK) < 0 && errno == ENOENT);
	CHECK_EQ_INT(leftovers(tmpdir), 0);
	/* An existing file may be replaced: fine, and kept as it is. */
	put(path, "kept", 0600);
	CHECK_EQ_INT(outfile_check(path, NULL), 0);
	CHECK(has_content(path, "kept"));
	unlink(path);
}

struct emit_ctx {
	const char *text;
	int fail; /* returned after the text is written */
	int calls;
	uid_t fsuid_seen;   /* the file-system uid emit ran with */
	bool fd_is_temp;    /* the fd is not the path's file */
	const char *target; /* the path being written */
};

static int emit(int fd, void *ctx)
{
	struct emit_ctx *e = ctx;
	struct stat fst, pst;

	e->calls++;
	e->fsuid_seen = setfsuid(-1);
	e->fd_is_temp = !fstat(fd, &fst) && (stat(e->target, &pst) || fst.st_ino != pst.st_ino);
	if (write(fd, e->text, strlen(e->text)) != (ssize_t)strlen(e->text))
		return -EIO;
	return e->fail;
}

/* The content callback writes a new file, not the one at the path; its
 * error is returned and the old file stays as it was. */
static void test_stream(void)
{
	char path[PATH_MAX];
	struct emit_ctx e = { .text = "streamed" };

	path_of(path, sizeof(path), "stream.json");
	e.target = path;
	put(path, "old profile", 0644);
	CHECK_EQ_INT(outfile_stream(path, emit, &e, NULL), 0);
	CHECK_EQ_INT(e.calls, 1);
	CHECK(e.fd_is_temp);
	CHECK(has_content(path, "streamed"));

	e = (struct emit_ctx){ .text = "half a profile", .fail = -ENOSPC, .target = path };
	CHECK_EQ_INT(outfile_stream(path, emit, &e, NULL), -ENOSPC);
	CHECK_EQ_INT(e.calls, 1);
	CHECK(has_content(path, "streamed"));
	CHECK_EQ_INT(leftovers(tmpdir), 0);
	unlink(path);
}

/* ------------------------------------------------ as the sudo user */

/* A folder of the test's with the given mode (root's), made afresh. */
static void make_dir(char *buf, size_t n, const char *name, mode_t mode)
{
	path_of(buf, n, name);
	CHECK_EQ_INT(mkdir(buf, 0700), 0);
	CHECK_EQ_INT(chmod(buf, mode), 0);
}

/* The file is the user's, mode 0644; the content callback runs with the
 * caller's own file-system ids, which are its own again afterwards. */
static void test_owner_is_user(void)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	struct emit_ctx e = { .text = "theirs" };
	struct stat st;

	if (geteuid() != 0)
		SKIP_TEST("not root: no other user to write for");
	if (!have_nobody)
		SKIP_TEST("no user nobody here");
	make_dir(dir, sizeof(dir), "open", 0777);
	snprintf(path, sizeof(path), "%s/p.json", dir);
	e.target = path;
	CHECK_EQ_INT(outfile_check(path, &nobody), 0);
	CHECK_EQ_INT(outfile_stream(path, emit, &e, &nobody), 0);
	CHECK(!stat(path, &st));
	CHECK_EQ_INT(st.st_uid, nobody.uid);
	CHECK_EQ_INT(st.st_gid, nobody.gid);
	CHECK_EQ_INT(st.st_mode & 07777, 0644);
	CHECK(has_content(path, "theirs"));
	CHECK_EQ_INT(e.fsuid_seen, 0);
	CHECK_EQ_INT(setfsuid(-1), 0);
	CHECK_EQ_INT(setfsgid(-1), getegid());
	/* Replaced by the user too. */
	CHECK_EQ_INT(write_str(path, "again", &nobody), 0);
	CHECK(!stat(path, &st) && st.st_uid == nobody.uid);
	CHECK(has_content(path, "again"));
	CHECK_EQ_INT(leftovers(dir), 0);
}

/* A folder the user may not write: refused before the run (the check) and
 * at the write, nothing made there, the ids restored after each. */
static void test_root_folder_refused(void)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], shut[PATH_MAX], inner[PATH_MAX + 16];

	if (geteuid() != 0)
		SKIP_TEST("not root: no other user to write for");
	if (!have_nobody)
		SKIP_TEST("no user nobody here");
	make_dir(dir, sizeof(dir), "roots", 0755);
	snprintf(path, sizeof(path), "%s/p.json", dir);
	CHECK_EQ_INT(outfile_check(path, &nobody), -EACCES);
	CHECK_EQ_INT(write_str(path, "x", &nobody), -EACCES);
	CHECK(access(path, F_OK) < 0);
	CHECK_EQ_INT(leftovers(dir), 0);
	CHECK_EQ_INT(setfsuid(-1), 0);
	/* Root itself may: the refusal is the user's. */
	CHECK_EQ_INT(outfile_check(path, NULL), 0);

	/* A folder the user cannot even enter. */
	make_dir(shut, sizeof(shut), "shut", 0700);
	snprintf(inner, sizeof(inner), "%s/p.json", shut);
	CHECK_EQ_INT(outfile_check(inner, &nobody), -EACCES);
	CHECK_EQ_INT(write_str(inner, "x", &nobody), -EACCES);
	CHECK_EQ_INT(setfsuid(-1), 0);
}

/* In a sticky folder (/tmp's kind) a file of root's at the path is
 * another user's: not replaced, not written, no temporary file left. */
static void test_others_file_refused(void)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	struct stat before, after;

	if (geteuid() != 0)
		SKIP_TEST("not root: no other user to write for");
	if (!have_nobody)
		SKIP_TEST("no user nobody here");
	make_dir(dir, sizeof(dir), "sticky", 01777);
	snprintf(path, sizeof(path), "%s/p.json", dir);
	put(path, "root's", 0644);
	CHECK(!stat(path, &before));
	CHECK_EQ_INT(write_str(path, "user's", &nobody), -EPERM);
	CHECK(has_content(path, "root's"));
	CHECK(!stat(path, &after) && after.st_ino == before.st_ino && after.st_uid == 0);
	CHECK_EQ_INT(leftovers(dir), 0);
	CHECK_EQ_INT(setfsuid(-1), 0);
}

/* A symlink to root's file planted where the user writes: the link is
 * replaced by the user's file, root's file is untouched. */
static void test_symlink_to_roots_file(void)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], victim[PATH_MAX];
	struct stat st;

	if (geteuid() != 0)
		SKIP_TEST("not root: no other user to write for");
	if (!have_nobody)
		SKIP_TEST("no user nobody here");
	make_dir(dir, sizeof(dir), "planted", 0777);
	path_of(victim, sizeof(victim), "roots-victim");
	put(victim, "root's own", 0666); /* even one anyone may write */
	snprintf(path, sizeof(path), "%s/p.json", dir);
	CHECK_EQ_INT(symlink(victim, path), 0);
	CHECK_EQ_INT(write_str(path, "profile", &nobody), 0);
	CHECK(has_content(victim, "root's own"));
	CHECK(!stat(victim, &st) && st.st_uid == 0);
	CHECK(!lstat(path, &st) && S_ISREG(st.st_mode) && st.st_uid == nobody.uid);
	CHECK(has_content(path, "profile"));
}

int main(void)
{
	char cmd[PATH_MAX + 16];
	struct passwd *pw = getpwnam("nobody");
	int rc;

	if (pw) {
		have_nobody = true;
		nobody.drop = true;
		nobody.uid = pw->pw_uid;
		nobody.gid = pw->pw_gid;
		nobody.groups[0] = pw->pw_gid;
		nobody.ngroups = 1;
		snprintf(nobody.name, sizeof(nobody.name), "nobody");
	}
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	chmod(tmpdir, 0755);
	RUN_TEST(test_write_new_and_replace);
	RUN_TEST(test_symlink_replaced);
	RUN_TEST(test_hard_link_not_written);
	RUN_TEST(test_refused_paths);
	RUN_TEST(test_check_leaves_nothing);
	RUN_TEST(test_stream);
	RUN_TEST(test_owner_is_user);
	RUN_TEST(test_root_folder_refused);
	RUN_TEST(test_others_file_refused);
	RUN_TEST(test_symlink_to_roots_file);
	rc = test_summary("safefile");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return rc;
}
