/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../agent/exposition.h"
#include "testutil.h"

const char *testutil_shared_fixtures(void)
{
	const char *p = getenv("SHARED_FIXTURES");

	return p && *p ? p : "../shared/fixtures";
}

int testutil_is_root(void)
{
	return geteuid() == 0;
}

void testutil_skip(const char *name, const char *why)
{
	fprintf(stderr, "SKIP: %s: %s\n", name, why);
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
