// SPDX-License-Identifier: BSD-2-Clause
/*
 * usyms on this very process: libc's malloc, a function of this test, files
 * mapped by hand (one of them deleted), a library loaded after the first
 * maps were read, and the shared, bounded ELF cache.  Run from the
 * repository root, or set FIXTURES.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/elfcache.h"
#include "testlib.h"
#include "symbolize/usyms.h"

static const char *fixture(const char *name)
{
	static char path[4096];
	const char *dir = getenv("FIXTURES");

	snprintf(path, sizeof(path), "%s/%s", dir ? dir : "tests/fixtures", name);
	return path;
}

static __attribute__((noinline)) int local_marker(int x)
{
	return x * 3 + 1;
}

static uint64_t addr_of(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

/* The real libc's symbol, not a sanitizer's interceptor of the same name. */
static void *libc_sym(const char *name)
{
	void *h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD), *p;

	if (!h) {
		fprintf(stderr, "libc.so.6 is not loaded: %s\n", dlerror());
		return NULL;
	}
	p = dlsym(h, name);
	dlclose(h);
	if (!p)
		fprintf(stderr, "no %s in libc.so.6\n", name);
	return p;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

static void test_libc(void)
{
	void *malloc_addr = libc_sym("malloc"), *getpid_addr = libc_sym("getpid");
	struct usym s = { 0 };
	struct usyms *u;

	CHECK(malloc_addr && getpid_addr);
	u = usyms__new(0, NULL);
	CHECK(u);
	if (!u || !malloc_addr || !getpid_addr)
		goto out;
	CHECK_EQ_INT(usyms__resolve(u, addr_of(malloc_addr), &s), 0);
	CHECK(s.module && strstr(s.module, "libc"));
	/* glibc also calls it __libc_malloc; the plain name wins. */
	CHECK_EQ_STR(s.name, "malloc");
	CHECK_EQ_INT(s.offset, 0);
	CHECK_EQ_INT(usyms__resolve(u, addr_of(malloc_addr) + 5, &s), 0);
	CHECK_EQ_STR(s.name, "malloc");
	CHECK_EQ_INT(s.offset, 5);
	CHECK_EQ_INT(usyms__resolve(u, addr_of(getpid_addr) + 1, &s), 0);
	CHECK(s.name && strstr(s.name, "getpid"));
	CHECK_EQ_INT(s.offset, 1);
out:
	usyms__free(u);
}

static void test_own_function(void)
{
	char exe[4096];
	struct usym s = { 0 };
	struct usyms *u;
	ssize_t n;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	CHECK(n > 0);
	exe[n > 0 ? n : 0] = '\0';
	u = usyms__new(0, NULL);
	CHECK(u);
	if (!u)
		return;
	CHECK_EQ_INT(local_marker(1), 4);
	CHECK_EQ_INT(usyms__resolve(u, addr_of(&local_marker) + 2, &s), 0);
	CHECK_EQ_STR(s.module, exe);
	CHECK_EQ_STR(s.name, "local_marker");
	CHECK_EQ_INT(s.offset, 2);
	usyms__free(u);
}

static void test_unmapped_and_anonymous(void)
{
	struct usym s = { 0 };
	struct usyms *u;
	char *anon;

	anon = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(anon != MAP_FAILED);
	u = usyms__new(0, NULL);
	CHECK(u);
	if (!u || anon == MAP_FAILED)
		goto out;
	CHECK_EQ_INT(usyms__resolve(u, 0, &s), -ENOENT);
	CHECK_EQ_INT(usyms__resolve(u, 4096, &s), -ENOENT);
	CHECK_EQ_INT(usyms__resolve(u, addr_of(anon) + 10, &s), 0);
	CHECK_EQ_STR(s.module, "");
	CHECK(!s.name);
	CHECK_EQ_INT(s.offset, 10);
	CHECK_EQ_INT(usyms__resolve(u, addr_of(&s), &s), 0);
	CHECK_EQ_STR(s.module, "[stack]");
	CHECK(!s.name);
out:
	usyms__free(u);
	if (anon != MAP_FAILED)
		munmap(anon, 4096);
}

/* Maps the page of path at file offset 0x1000: tiny.elf's .text. */
static char *map_text_page(const char *path)
{
	char *p;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "failed to open %s: %s\n", path, strerror(errno));
		return NULL;
	}
	p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0x1000);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

static void test_mapped_file(void)
{
	struct usym s = { 0 };
	struct usyms *u;
	char *text;

	text = map_text_page(fixture("elf/tiny.elf"));
	CHECK(text);
	u = usyms__new(0, NULL);
	CHECK(u);
	if (!u || !text)
		goto out;
	CHECK_EQ_INT(usyms__resolve(u, addr_of(text) + 3, &s), 0);
	CHECK(s.module && ends_with(s.module, "/tests/fixtures/elf/tiny.elf"));
	CHECK_EQ_STR(s.name, "tiny_add");
	CHECK_EQ_INT(s.offset, 3);
	CHECK_EQ_INT(usyms__resolve(u, addr_of(text) + 0x44, &s), 0);
	CHECK_EQ_STR(s.name, "tiny_mul");
	CHECK_EQ_INT(s.offset, 4);
	/* Padding between functions: no name, the file offset instead. */
	CHECK_EQ_INT(usyms__resolve(u, addr_of(text) + 0x20, &s), 0);
	CHECK(!s.name);
	CHECK_EQ_INT(s.offset, 0x1020);
out:
	usyms__free(u);
	if (text)
		munmap(text, 4096);
}

static int copy_file(const char *from, int to_fd)
{
	char buf[4096];
	ssize_t n;
	int fd, err = 0;

	fd = open(from, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		if (write(to_fd, buf, n) != n) {
			err = -EIO;
			break;
		}
	}
	if (n < 0)
		err = -errno;
	close(fd);
	return err;
}

/* A file deleted after mapping is found through /proc/self/map_files. */
static void test_deleted_file(void)
{
	char tmp[] = "/tmp/usyms-test-XXXXXX", link[128];
	struct usym s = { 0 };
	struct usyms *u = NULL;
	char *text = NULL;
	int fd, map_files_ok;

	fd = mkstemp(tmp);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK_EQ_INT(copy_file(fixture("elf/tiny.elf"), fd), 0);
	close(fd);
	text = map_text_page(tmp);
	unlink(tmp);
	CHECK(text);
	if (!text)
		return;
	u = usyms__new(0, NULL);
	CHECK(u);
	if (!u)
		goto out;
	/* Reading map_files takes CAP_SYS_ADMIN on most kernels. */
	snprintf(link, sizeof(link), "/proc/self/map_files/%" PRIx64 "-%" PRIx64, addr_of(text),
		 addr_of(text) + 4096);
	fd = open(link, O_RDONLY | O_CLOEXEC);
	map_files_ok = fd >= 0;
	if (fd >= 0)
		close(fd);
	else
		fprintf(stderr, "note: %s unreadable (%s); expecting no name\n", link,
			strerror(errno));

	CHECK_EQ_INT(usyms__resolve(u, addr_of(text) + 3, &s), 0);
	CHECK(s.module && ends_with(s.module, " (deleted)"));
	if (map_files_ok) {
		CHECK_EQ_STR(s.name, "tiny_add");
		CHECK_EQ_INT(s.offset, 3);
	} else {
		CHECK(!s.name);
		CHECK_EQ_INT(s.offset, 0x1003);
	}
out:
	usyms__free(u);
	munmap(text, 4096);
}

static void test_refresh_after_dlopen(void)
{
	const char *lib = "libresolv.so.2", *fn = "inet_net_ntop";
	void *h = NULL, *addr = NULL;
	struct usym s = { 0 };
	int was_loaded;
	struct usyms *u;

	h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
	was_loaded = h != NULL;
	if (h)
		dlclose(h);
	u = usyms__new(0, NULL);
	CHECK(u);
	h = dlopen(lib, RTLD_NOW);
	if (!h)
		fprintf(stderr, "required library missing: %s (%s)\n", lib, dlerror());
	CHECK(h);
	addr = h ? dlsym(h, fn) : NULL;
	CHECK(addr);
	if (!u || !addr)
		goto out;
	if (!was_loaded)
		CHECK_EQ_INT(usyms__resolve(u, addr_of(addr), &s), -ENOENT);
	CHECK_EQ_INT(usyms__refresh(u), 0);
	CHECK_EQ_INT(usyms__resolve(u, addr_of(addr) + 7, &s), 0);
	CHECK(s.module && strstr(s.module, "libresolv"));
	CHECK_EQ_STR(s.name, fn);
	CHECK_EQ_INT(s.offset, 7);
	/* A second refresh keeps the module and its strings. */
	CHECK_EQ_INT(usyms__refresh(u), 0);
	CHECK_EQ_STR(s.name, fn);
out:
	usyms__free(u);
	if (h)
		dlclose(h);
}

static void test_shared_cache(void)
{
	struct elf_cache_opts copts = { .max_files = 2 };
	struct usyms *u1 = NULL, *u2 = NULL;
	void *malloc_addr = libc_sym("malloc"), *elf_addr, *h;
	struct usym s = { 0 }, first = { 0 };
	struct usyms_opts uopts = { 0 };
	struct elf_cache *c;

	h = dlopen("libelf.so.1", RTLD_NOW | RTLD_NOLOAD);
	elf_addr = h ? dlsym(h, "elf_version") : NULL;
	CHECK(malloc_addr && elf_addr);
	c = elf_cache__new(&copts);
	CHECK(c);
	if (!c || !malloc_addr || !elf_addr)
		goto out;
	uopts.cache = c;
	u1 = usyms__new(0, &uopts);
	u2 = usyms__new(0, &uopts);
	CHECK(u1 && u2);
	if (!u1 || !u2)
		goto out;

	CHECK_EQ_INT(usyms__resolve(u1, addr_of(malloc_addr), &first), 0);
	CHECK_EQ_STR(first.name, "malloc");
	CHECK_EQ_INT(elf_cache__count(c), 1);
	CHECK_EQ_INT(usyms__resolve(u2, addr_of(malloc_addr), &s), 0);
	CHECK_EQ_STR(s.name, "malloc");
	CHECK_EQ_INT(elf_cache__hits(c), 1);
	CHECK_EQ_INT(elf_cache__count(c), 1);

	/* Two more files through a two-file cache: libc is evicted... */
	CHECK_EQ_INT(usyms__resolve(u1, addr_of(&local_marker), &s), 0);
	CHECK_EQ_STR(s.name, "local_marker");
	CHECK_EQ_INT(usyms__resolve(u1, addr_of(elf_addr), &s), 0);
	CHECK_EQ_STR(s.name, "elf_version");
	CHECK_EQ_INT(elf_cache__count(c), 2);
	CHECK_EQ_INT(elf_cache__evictions(c), 1);
	/* ...but the usyms that hold it keep it open and its names valid. */
	CHECK_EQ_STR(first.name, "malloc");
	CHECK_EQ_INT(usyms__resolve(u2, addr_of(malloc_addr) + 1, &s), 0);
	CHECK_EQ_STR(s.name, "malloc");
	CHECK_EQ_INT(s.offset, 1);
out:
	usyms__free(u1);
	usyms__free(u2);
	elf_cache__free(c);
	if (h)
		dlclose(h);
}

static void test_bad_pid(void)
{
	errno = 0;
	CHECK(!usyms__new(-1, NULL));
	CHECK_EQ_INT(errno, EINVAL);
	errno = 0;
	CHECK(!usyms__new(0x7ffffff0, NULL)); /* above any pid_max */
	CHECK_EQ_INT(errno, ENOENT);
	usyms__free(NULL);
	elf_cache__free(NULL);
}

int main(void)
{
	RUN_TEST(test_libc);
	RUN_TEST(test_own_function);
	RUN_TEST(test_unmapped_and_anonymous);
	RUN_TEST(test_mapped_file);
	RUN_TEST(test_deleted_file);
	RUN_TEST(test_refresh_after_dlopen);
	RUN_TEST(test_shared_cache);
	RUN_TEST(test_bad_pid);
	return test_summary("usyms");
}
