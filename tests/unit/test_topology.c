/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "collector/topology_file.h"
#include "suites.h"

/* Hosts with their attributes, links, comments and blank lines. */
START_TEST(test_parse)
{
	static const char text[] = "# the lab\n"
				   "\n"
				   "host node1 rack r1 rail 0 leaf leaf1\n"
				   "host node2   leaf leaf2 pod p1  # trailing comment\r\n"
				   "link leaf1 spine1\n"
				   "link leaf2 spine1";
	struct topology *t = NULL;
	const struct topology_host *h;
	char why[256] = "";

	ck_assert_int_eq(topology_parse(text, "f", &t, why, sizeof(why)), 0);
	ck_assert_int_eq(t->nhosts, 2);
	ck_assert_int_eq(t->nlinks, 2);
	h = topology_find_host(t, "node2");
	ck_assert_ptr_nonnull(h);
	ck_assert_str_eq(h->attr[0], "");
	ck_assert_str_eq(h->attr[2], "p1");
	ck_assert_str_eq(h->attr[3], "leaf2");
	ck_assert_str_eq(topology_find_host(t, "node1")->attr[1], "0");
	ck_assert_str_eq(t->links[1].a, "leaf2");
	ck_assert_ptr_null(topology_find_host(t, "node3"));
	topology_free(t);
}
END_TEST

/* Every mistake is refused with its file and line. */
START_TEST(test_errors)
{
	static const struct {
		const char *text, *why;
	} cases[] = {
		{ "host a\nswitch b\n", "f:2: unknown keyword 'switch' (host, link)" },
		{ "host a\nhost a\n", "f:2: host 'a' is named twice" },
		{ "host a rack\n", "f:1: rack: a value of 1 to 63 of [A-Za-z0-9._:/-] expected" },
		{ "host a color red\n", "f:1: unknown attribute 'color' (rack, rail, pod, leaf)" },
		{ "host a rack 1 rack 2\n", "f:1: rack given twice" },
		{ "\n\nhost a$b\n", "f:3: host: a name of 1 to 63 of [A-Za-z0-9._:/-] expected" },
		{ "link a\n", "f:1: link: two names of 1 to 63 of [A-Za-z0-9._:/-] expected" },
		{ "link a a\n", "f:1: link: 'a' to itself" },
		{ "host a rack 1 rail 2 pod 3 leaf 4 rack 5\n",
		  "f:1: too many words (host NAME and four attributes at most)" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct topology *t = NULL;
		char why[256] = "";

		ck_assert_int_eq(topology_parse(cases[i].text, "f", &t, why, sizeof(why)), -EINVAL);
		ck_assert_str_eq(why, cases[i].why);
		ck_assert_ptr_null(t);
	}
	ck_assert(topology_name_ok("leaf-1.rack:2/a_b"));
	ck_assert(!topology_name_ok(""));
	ck_assert(!topology_name_ok("a b"));
}
END_TEST

Suite *topology_suite(void)
{
	Suite *s = suite_create("topology");
	TCase *tc = tcase_create("topology");

	tcase_add_test(tc, test_parse);
	tcase_add_test(tc, test_errors);
	suite_add_tcase(s, tc);
	return s;
}
