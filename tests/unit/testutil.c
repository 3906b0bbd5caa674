/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/http/exposition.h"
#include "testutil.h"

const char *testutil_shared_fixtures(void)
{
	const char *p = getenv("SHARED_FIXTURES");

	return p && *p ? p : "../shared/fixtures";
}

const char *testutil_shared_sysfs(void)
{
	static char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/sysfs", testutil_shared_fixtures());
	return path;
}

int testutil_is_root(void)
{
	return geteuid() == 0;
}

void testutil_skip(const char *name, const char *why)
{
	fprintf(stderr, "SKIP: %s: %s\n", name, why);
}

int testutil_netns_enter(int with_sysfs, const char *name)
{
	const char *fork_mode = getenv("CK_FORK");

	if (!testutil_is_root()) {
		testutil_skip(name,
			      "needs root to make a network namespace; NOT tested in this run");
		return -EPERM;
	}
	/* Without fork mode the namespace would outlive the test, in the runner. */
	if (fork_mode && strcmp(fork_mode, "no") == 0) {
		testutil_skip(name,
			      "needs Check's fork mode: it moves the test process to a netns");
		return -EINVAL;
	}
	if (unshare(CLONE_NEWNET | (with_sysfs ? CLONE_NEWNS : 0)) < 0) {
		int r = -errno;

		testutil_skip(name, with_sysfs
					    ? "unable to unshare the network and mount namespaces"
					    : "unable to unshare the network namespace");
		return r;
	}
	if (with_sysfs) {
		/* private first, or the new /sys would show in the host's mount namespace */
		ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
		ck_assert_int_eq(mount("sysfs", "/sys", "sysfs", 0, NULL), 0);
	}
	return 0;
}

int testutil_tick(struct registry *reg, const struct collector_ops *ops, void *state,
		  const struct collector_env *env, int64_t now_ms)
{
	int r;

	registry_begin_tick(reg, now_ms);
	r = ops->sample(state, env, registry_sink(reg, ops->name));
	registry_end_tick(reg);
	return r;
}

char *testutil_render(struct registry *reg)
{
	struct strbuf sb;
	char *text;

	strbuf_init(&sb);
	ck_assert_int_eq(exposition_render(reg, &sb), 0);
	text = strbuf_detach(&sb, NULL);
	ck_assert_ptr_nonnull(text);
	return text;
}

struct series_query {
	const char *name;
	const char *labels;
	struct series *ret;
};

static int series_match(struct series *s, void *arg)
{
	struct series_query *q = arg;

	if (strcmp(s->name, q->name) != 0 || strcmp(s->labels, q->labels) != 0)
		return 0;
	*q->ret = *s;
	return 1;
}

int testutil_series_find(struct registry *reg, const char *name, const char *labels,
			 struct series *ret)
{
	struct series_query q = { .name = name, .labels = labels, .ret = ret };

	return registry_foreach(reg, series_match, &q);
}

struct series testutil_series(struct registry *reg, const char *name, const char *labels)
{
	struct series s;

	ck_assert_msg(testutil_series_find(reg, name, labels, &s), "no series %s{%s} in this tick",
		      name, labels);
	return s;
}

/* Compiles an optional ERE into re; returns re, or NULL when there is none. */
static const regex_t *rig_regex(regex_t *re, const char *pattern)
{
	if (!pattern)
		return NULL;
	ck_assert_msg(regcomp(re, pattern, REG_EXTENDED | REG_NOSUB) == 0, "bad regex '%s'",
		      pattern);
	return re;
}

void testutil_rig_init(struct testutil_rig *rig, const struct collector_ops *ops,
		       const char *sysfs_root, const char *interfaces, const char *ethtool_include)
{
	memset(rig, 0, sizeof(*rig));
	rig->ops = ops;
	rig->env.sysfs_root = sysfs_root;
	rig->env.interfaces = rig_regex(&rig->interfaces, interfaces);
	rig->env.ethtool_include = rig_regex(&rig->ethtool_include, ethtool_include);
	/* room for every series of the fixtures; nothing expires between a test's ticks */
	rig->reg = registry_new(10000, 60000);
	ck_assert_ptr_nonnull(rig->reg);
	ck_assert_msg(ops->init(&rig->env, &rig->state, rig->why, sizeof(rig->why)) == 0,
		      "%s init on '%s': %s", ops->name, sysfs_root, rig->why);
}

char *testutil_rig_tick(struct testutil_rig *rig, int64_t now_ms)
{
	ck_assert_int_eq(testutil_tick(rig->reg, rig->ops, rig->state, &rig->env, now_ms), 0);
	return testutil_render(rig->reg);
}

void testutil_rig_release(struct testutil_rig *rig)
{
	rig->ops->fini(rig->state);
	registry_free(rig->reg);
	if (rig->env.interfaces == &rig->interfaces)
		regfree(&rig->interfaces);
	if (rig->env.ethtool_include == &rig->ethtool_include)
		regfree(&rig->ethtool_include);
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	struct strbuf sb;
	char buf[4096];
	size_t n;

	if (!f)
		return NULL;
	strbuf_init(&sb);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		strbuf_add(&sb, buf, n);
	fclose(f);
	return strbuf_detach(&sb, NULL);
}

void testutil_check_golden(const char *text, const char *name)
{
	char path[PATH_MAX];
	const char *a, *b;
	char *want;
	int line = 1;

	snprintf(path, sizeof(path), "tests/fixtures/golden/%s", name);
	if (getenv("UPDATE_GOLDEN")) {
		FILE *f = fopen(path, "w");

		ck_assert_msg(f != NULL, "unable to write '%s'", path);
		fputs(text, f);
		fclose(f);
		return;
	}
	want = read_file(path);
	ck_assert_msg(want != NULL, "unable to read golden '%s' (UPDATE_GOLDEN=1 makes it)", path);
	for (a = text, b = want; *a && *b && *a == *b; a++, b++)
		if (*a == '\n')
			line++;
	if (*a || *b) {
		const char *ea = strchr(a, '\n'), *eb = strchr(b, '\n');
		int la = ea ? (int)(ea - a) : (int)strlen(a);
		int lb = eb ? (int)(eb - b) : (int)strlen(b);

		while (a > text && a[-1] != '\n')
			a--, la++;
		while (b > want && b[-1] != '\n')
			b--, lb++;
		ck_abort_msg("%s line %d differs:\n got: %.*s\nwant: %.*s", name, line, la, a, lb,
			     b);
	}
	free(want);
}

static const char *find_line(const char *text, const char *prefix)
{
	size_t n = strlen(prefix);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, prefix, n) == 0 && (p[n] == ' ' || p[n] == '{' || p[n] == '\0'))
			return p;
	return NULL;
}

double testutil_value(const char *text, const char *series)
{
	const char *p = find_line(text, series);
	const char *sp;

	ck_assert_msg(p != NULL, "no series '%s' in:\n%s", series, text);
	sp = strchr(p + strlen(series), ' ');
	ck_assert_ptr_nonnull(sp);
	return strtod(sp + 1, NULL);
}

int testutil_has(const char *text, const char *prefix)
{
	return find_line(text, prefix) != NULL;
}

const char *testutil_copy_tree(const char *src)
{
	static char dir[PATH_MAX];
	char cmd[PATH_MAX * 2 + 32];

	snprintf(dir, sizeof(dir), "/tmp/fabmon-test-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "cp -R '%s'/. '%s'/ && chmod -R u+w '%s'", src, dir, dir);
	ck_assert_int_eq(system(cmd), 0);
	return dir;
}

static int remove_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	return remove(path);
}

void testutil_remove_tree(const char *path)
{
	static const char tmp[] = "/tmp/fabmon-";

	/* a recursive delete: only ever what a test made */
	ck_assert_msg(strncmp(path, tmp, sizeof(tmp) - 1) == 0 && !strstr(path, "/.."),
		      "refusing to remove '%s': not under %s", path, tmp);
	ck_assert_msg(nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS) == 0,
		      "unable to remove '%s': %s", path, strerror(errno));
}

void testutil_remove_db(const char *path)
{
	char side[PATH_MAX];

	unlink(path);
	snprintf(side, sizeof(side), "%s-wal", path);
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", path);
	unlink(side);
}

void testutil_write(const char *root, const char *rel, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		(void)mkdir(path, 0755);
		*p = '/';
	}
	f = fopen(path, "w");
	ck_assert_msg(f != NULL, "unable to write '%s'", path);
	fputs(text, f);
	fclose(f);
}

Suite *testutil_suite(const char *name, const struct testutil_case *cases, size_t n)
{
	Suite *s = suite_create(name);

	for (size_t i = 0; i < n; i++) {
		TCase *tc = tcase_create(cases[i].name);

		tcase_add_test(tc, cases[i].fn);
		if (cases[i].timeout_s)
			tcase_set_timeout(tc, cases[i].timeout_s);
		suite_add_tcase(s, tc);
	}
	return s;
}
