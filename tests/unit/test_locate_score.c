/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cli/locate_score.h"
#include "suites.h"

static struct locate_suspect *run(const struct locate_input *in, int *n)
{
	struct locate_suspect *s = NULL;

	ck_assert_int_eq(locate_score(in, &s, n), 0);
	return s;
}

/* Nothing reported: nobody is named. */
START_TEST(test_clean)
{
	struct locate_input in = { .nodes = 8 };
	struct locate_suspect *s;
	int n = -1;

	s = run(&in, &n);
	ck_assert_int_eq(n, 0);
	free(s);
}
END_TEST

/* A host two other nodes name is a suspect; one node's word, or a node
 * naming itself as a peer, is not enough; its own word (host=) is. */
START_TEST(test_host)
{
	static const struct locate_blame b[] = {
		{ "198.18.0.1:9478", "198.18.0.3", 2000, 0 },
		{ "198.18.0.2:9478", "198.18.0.3", 1000, 0 },
		{ "198.18.0.2:9478", "198.18.0.3", 3000, 0 }, /* another event, same node */
		{ "198.18.0.1:9478", "198.18.0.4", 1000, 0 },
		{ "198.18.0.4:9478", "198.18.0.4", 1000, 0 },
		{ "n5", "198.18.0.5", 4000, 1 },
	};
	struct locate_input in = { .blames = b, .nblames = 6, .nodes = 4 };
	struct locate_suspect *s;
	int n;

	s = run(&in, &n);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(s[0].kind, LOCATE_HOST);
	ck_assert_str_eq(s[0].name, "198.18.0.3");
	ck_assert_int_eq(s[0].failing, 2);
	ck_assert_int_eq(s[0].of, 3);
	ck_assert_str_eq(s[0].reporters, "198.18.0.1:9478,198.18.0.2:9478");
	ck_assert_int_eq(s[0].first_ms, 1000);
	ck_assert_int_eq(s[0].tie, 0);
	ck_assert_int_eq(s[0].self, 0);
	ck_assert_str_eq(s[1].name, "198.18.0.5");
	ck_assert_int_eq(s[1].failing, 1);
	ck_assert_int_eq(s[1].self, 1);
	ck_assert_str_eq(s[1].reporters, "n5");
	free(s);
}
END_TEST

/* A port with errors on its own node, named with its switch port; many
 * errors rank above a host two of eight nodes name, few below. */
START_TEST(test_port)
{
	static const struct locate_blame b[] = {
		{ "n1", "198.18.0.3", 0, 0 },
		{ "n2", "198.18.0.3", 0, 0 },
	};
	static const struct locate_port p[] = {
		{ "n5", "eth0", "leaf1 port Ethernet5", 500, 7000 },
		{ "n6", "eth1", NULL, 1, 0 },
		{ "n7", "eth0", NULL, 0, 0 },
	};
	struct locate_input in = { .blames = b, .nblames = 2, .ports = p, .nports = 3, .nodes = 8 };
	struct locate_suspect *s;
	int n;

	s = run(&in, &n);
	ck_assert_int_eq(n, 3);
	ck_assert_str_eq(s[0].name, "n5 eth0 -> leaf1 port Ethernet5");
	ck_assert_int_eq(s[0].kind, LOCATE_PORT);
	ck_assert_int_eq(s[0].first_ms, 7000);
	ck_assert_str_eq(s[1].name, "198.18.0.3");
	ck_assert_str_eq(s[2].name, "n6 eth1");
	free(s);
}
END_TEST

/* Tomography: the spine both lossy paths cross and no healthy one does,
 * with the link they share into it, cannot be told apart (a tie); the leaf
 * as many clean paths cross as lossy ones is cleared. */
START_TEST(test_hops)
{
	static const char *const p1[] = { "leaf1", "spine1", "leaf2" };
	static const char *const p2[] = { "leaf3", "spine1", "leaf2" };
	static const char *const p3[] = { "leaf1", "spine2", "leaf2" };
	static const char *const p4[] = { "leaf4", "spine3", "leaf5" };
	static const char *const p5[] = { "leaf3", "spine2", "leaf2" };
	struct locate_path paths[] = {
		{ "n1", "x", p1, 3, 1, 1, 5000 }, { "n3", "y", p2, 3, 1, 1, 4000 },
		{ "n1", "z", p3, 3, 0, 0, 0 },	  { "n4", "w", p4, 3, 0, 0, 0 },
		{ "n3", "v", p5, 3, 0, 0, 0 },
	};
	struct locate_input in = { .paths = paths, .npaths = 5, .nodes = 4 };
	struct locate_suspect *s;
	int n;

	s = run(&in, &n);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(s[0].kind, LOCATE_LINK);
	ck_assert_str_eq(s[0].name, "leaf2 - spine1");
	ck_assert_int_eq(s[1].kind, LOCATE_HOP);
	ck_assert_str_eq(s[1].name, "spine1");
	ck_assert_int_eq(s[1].failing, 2);
	ck_assert_int_eq(s[1].of, 2);
	ck_assert_int_eq(s[1].first_ms, 4000);
	ck_assert_int_ne(s[0].tie, 0);
	ck_assert_int_eq(s[0].tie, s[1].tie);
	free(s);

	/* lossy paths with no clean sibling (every flow to their peers
	 * lost): the same elements, at LOCATE_UNTESTED_SHARE of the score */
	paths[0].sibling_clean = paths[1].sibling_clean = 0;
	s = run(&in, &n);
	ck_assert_int_eq(n, 2);
	ck_assert_double_eq_tol(s[0].score, LOCATE_UNTESTED_SHARE, 1e-9);
	free(s);

	/* a path that lost under the bound clears nothing: the leaf,
	 * with more lossy paths across it than clean ones, is named below
	 * the spine */
	paths[0].sibling_clean = paths[1].sibling_clean = 1;
	paths[2].lossy = -1;
	s = run(&in, &n);
	ck_assert_int_eq(n, 3);
	ck_assert_str_eq(s[2].name, "leaf2");
	ck_assert_int_eq(s[2].clean, 1);
	ck_assert_double_eq_tol(s[2].score, 2.0 / 3, 1e-9);
	free(s);

	/* one node's lossy paths alone name nothing */
	paths[1].reporter = "n1";
	s = run(&in, &n);
	ck_assert_int_eq(n, 0);
	free(s);
}
END_TEST

/* A spine link: lossy paths cross it, healthy ones cross both its ends
 * (through other links): only the link is named. */
START_TEST(test_link)
{
	static const char *const bad1[] = { "leaf1", "spine1", "leaf2" };
	static const char *const bad2[] = { "leaf3", "spine1", "leaf2" };
	static const char *const ok1[] = { "leaf1", "spine1", "leaf3" };
	static const char *const ok2[] = { "leaf1", "spine2", "leaf2" };
	static const char *const ok3[] = { "leaf3", "spine2", "leaf2" };
	static const char *const ok4[] = { "leaf3", "spine1", "leaf1" };
	const struct locate_path paths[] = {
		{ "n1", "a", bad1, 3, 1, 1, 0 }, { "n5", "b", bad2, 3, 1, 1, 0 },
		{ "n2", "c", ok1, 3, 0, 0, 0 },	 { "n1", "d", ok2, 3, 0, 0, 0 },
		{ "n5", "e", ok3, 3, 0, 0, 0 },	 { "n6", "f", ok4, 3, 0, 0, 0 },
	};
	struct locate_input in = { .paths = paths, .npaths = 6, .nodes = 6 };
	struct locate_suspect *s;
	int n;

	s = run(&in, &n);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(s[0].kind, LOCATE_LINK);
	ck_assert_str_eq(s[0].name, "leaf2 - spine1");
	ck_assert_double_eq(s[0].score, 1.0);
	free(s);
}
END_TEST

/* Every path to a host lost, none of the others: the host (the paths' last
 * hop) is named, with the paths' stronger score over one event's. */
START_TEST(test_host_paths)
{
	static const char *const to_h1[] = { "leaf1", "spine1", "leaf2", "h" };
	static const char *const to_h2[] = { "leaf3", "spine2", "leaf2", "h" };
	static const char *const to_g[] = { "leaf1", "spine1", "leaf2", "g" };
	static const char *const to_g2[] = { "leaf3", "spine2", "leaf2", "g" };
	static const struct locate_blame b[] = { { "n1", "h", 0, 0 }, { "n3", "h", 0, 0 } };
	const struct locate_path paths[] = {
		{ "n1", "h", to_h1, 4, 1, 1, 0 },
		{ "n3", "h", to_h2, 4, 1, 1, 0 },
		{ "n1", "g", to_g, 4, 0, 0, 0 },
		{ "n3", "g", to_g2, 4, 0, 0, 0 },
	};
	struct locate_input in = {
		.blames = b, .nblames = 2, .paths = paths, .npaths = 4, .nodes = 10
	};
	struct locate_suspect *s;
	int n;

	s = run(&in, &n);
	ck_assert_int_ge(n, 1);
	ck_assert_int_eq(s[0].kind, LOCATE_HOST);
	ck_assert_str_eq(s[0].name, "h");
	ck_assert_double_eq(s[0].score, 1.0);
	for (int i = 1; i < n; i++)
		ck_assert_int_eq(s[i].kind, LOCATE_LINK); /* leaf2 - h: the same paths */
	free(s);
}
END_TEST

/* Hops that did not answer are no element: lossy paths of two nodes whose
 * traces went unanswered at a hop name the hop they share that answered,
 * not the unanswered one, nor a link to it; a hop heard twice in a row is
 * no link to itself. */
START_TEST(test_unknown_hop)
{
	static const char *const bad[] = { "spine1", LOCATE_HOP_UNKNOWN, "x", "x" };
	static const char *const ok[] = { "spine2", "x", "c" };
	const struct locate_path paths[] = {
		{ "n1", "b", bad, 4, 1, 1, 0 },
		{ "n5", "c", bad, 4, 1, 1, 0 },
		{ "n5", "c", ok, 3, 0, 0, 0 },
		{ "n6", "c", ok, 3, 0, 0, 0 },
	};
	struct locate_input in = { .paths = paths, .npaths = 4, .nodes = 6 };
	struct locate_suspect *s;
	int n;

	s = run(&in, &n);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(s[0].kind, LOCATE_HOP);
	ck_assert_str_eq(s[0].name, "spine1");
	free(s);
}
END_TEST

/* A host's own access link loses both ways: the paths towards it from two
 * nodes and its own paths out, whose start it is. The host is named top-1
 * on all of them, above the leaf its paths out cross; or its port, where
 * that counts errors. */
START_TEST(test_access_link)
{
	static const char *const to_h[] = { "spine1", "leaf1", "10.0.0.8" };
	static const char *const out1[] = { "leaf1", "spine1", "leaf2", "10.0.0.1" };
	static const char *const out2[] = { "leaf1", "spine2", "leaf2", "10.0.0.2" };
	static const char *const ok[] = { "leaf1", "spine2", "leaf2", "10.0.0.1" };
	const struct locate_path paths[] = {
		{ "10.0.0.1:9478", "10.0.0.8", to_h, 3, 1, 0, 0 },
		{ "10.0.0.2:9478", "10.0.0.8", to_h, 3, 1, 0, 0 },
		{ "10.0.0.8:9478", "10.0.0.1", out1, 4, 1, 0, 0 },
		{ "10.0.0.8:9478", "10.0.0.2", out2, 4, 1, 0, 0 },
		{ "10.0.0.3:9478", "10.0.0.1", ok, 4, 0, 0, 0 },
	};
	static const struct locate_port port = { "10.0.0.8:9478", "eth0", NULL, 1, 0 };
	struct locate_input in = { .paths = paths, .npaths = 5, .nodes = 4 };
	struct locate_suspect *s;
	int n;

	s = run(&in, &n);
	ck_assert_int_ge(n, 1);
	ck_assert_int_eq(s[0].kind, LOCATE_HOST);
	ck_assert_str_eq(s[0].name, "10.0.0.8");
	ck_assert_int_eq(s[0].failing, 4);
	ck_assert_double_eq_tol(s[0].score, 1.0, 1e-9); /* no sibling could avoid it */
	free(s);

	/* its port counting errors is where on it: the port takes the score,
	 * the host and its access links are not listed */
	in.ports = &port;
	in.nports = 1;
	s = run(&in, &n);
	ck_assert_int_ge(n, 1);
	ck_assert_int_eq(s[0].kind, LOCATE_PORT);
	ck_assert_double_eq_tol(s[0].score, 1.0, 1e-9);
	for (int i = 1; i < n; i++)
		ck_assert_ptr_null(strstr(s[i].name, "10.0.0.8"));
	free(s);
}
END_TEST

/* Two nodes' lossy paths across a spine whose other crossers lost a little,
 * under the bound: a fault there shows on most nodes crossing it, and two
 * of five is a busy host's late answers, not the spine. */
START_TEST(test_few_nodes)
{
	static const char *const via[] = { "leaf1", "spine1", "leaf2" };
	struct locate_path paths[] = {
		{ "n1", "a", via, 3, 1, 1, 0 },	 { "n2", "a", via, 3, 1, 1, 0 },
		{ "n3", "a", via, 3, -1, 0, 0 }, { "n4", "a", via, 3, -1, 0, 0 },
		{ "n5", "a", via, 3, -1, 0, 0 },
	};
	struct locate_input in = { .paths = paths, .npaths = 5, .nodes = 5 };
	struct locate_suspect *s;
	int n;

	s = run(&in, &n);
	ck_assert_int_eq(n, 0);
	free(s);
	paths[2].lossy = 1; /* three of five: named */
	s = run(&in, &n);
	ck_assert_int_gt(n, 0);
	free(s);
}
END_TEST

/* Two hosts whose paths to each other lose, and nobody else's: their own
 * word about their own start, which names neither, nor the link between. */
START_TEST(test_own_word)
{
	static const char *const to1[] = { "10.0.0.1" }, *const to2[] = { "10.0.0.2" };
	const struct locate_path paths[] = {
		{ "10.0.0.1:9478", "10.0.0.2", to2, 1, 1, 0, 0 },
		{ "10.0.0.2:9478", "10.0.0.1", to1, 1, 1, 0, 0 },
	};
	struct locate_input in = { .paths = paths, .npaths = 2, .nodes = 8 };
	struct locate_suspect *s;
	int n;

	s = run(&in, &n);
	ck_assert_int_eq(n, 0);
	free(s);
}
END_TEST

START_TEST(test_instance_host)
{
	char buf[64];

	locate_instance_host("198.18.0.2:9478", buf, sizeof(buf));
	ck_assert_str_eq(buf, "198.18.0.2");
	locate_instance_host("[2001:db8::1]:9478", buf, sizeof(buf));
	ck_assert_str_eq(buf, "2001:db8::1");
	locate_instance_host("node17", buf, sizeof(buf));
	ck_assert_str_eq(buf, "node17");
}
END_TEST

Suite *locate_score_suite(void)
{
	Suite *s = suite_create("locate_score");
	TCase *tc = tcase_create("locate_score");

	tcase_add_test(tc, test_clean);
	tcase_add_test(tc, test_host);
	tcase_add_test(tc, test_port);
	tcase_add_test(tc, test_hops);
	tcase_add_test(tc, test_link);
	tcase_add_test(tc, test_host_paths);
	tcase_add_test(tc, test_unknown_hop);
	tcase_add_test(tc, test_access_link);
	tcase_add_test(tc, test_few_nodes);
	tcase_add_test(tc, test_own_word);
	tcase_add_test(tc, test_instance_host);
	suite_add_tcase(s, tc);
	return s;
}
