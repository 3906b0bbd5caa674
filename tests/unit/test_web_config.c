/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/http/auth.h"
#include "agent/http/web_config.h"
#include "suites.h"
#include "testutil.h"

/*
 * tests/fixtures/web: a test CA, a server certificate it signed (100 years,
 * for 127.0.0.1 and localhost) with its key, and an unrelated key. Test keys
 * only, made with openssl; never trusted anywhere else.
 */
#define ALICE "$2y$10$XVvi.cU325odiT61kD/QZOp5IceF0vCxirk9u1CP5fU13G.mV1fFW" /* secret */
#define BOB "$2y$10$3Q0h5Mr6CJvIoX62PR7iHOph68StDQSH3FxOSBHpot/j9V6pWiIeG" /* hunter2 */
#define CAROL "$2y$12$H3m1M0VrnTpjE1i4KrXqluJoN2RHQBV1OeEfc1A6bFGO1vrS4vSUW" /* pw12 */

/* Writes text as web.yml beside a copy of the fixtures; returns its path. */
static const char *write_web(const char *text)
{
	static char path[512];
	const char *dir = testutil_copy_tree("tests/fixtures/web");

	testutil_write(dir, "web.yml", text);
	snprintf(path, sizeof(path), "%s/web.yml", dir);
	return path;
}

/* Removes the directory write_web() made for path. */
static void remove_web(const char *path)
{
	char dir[512];

	snprintf(dir, sizeof(dir), "%.*s", (int)(strrchr(path, '/') - path), path);
	testutil_remove_tree(dir);
}

/* The web config is read whole at load: its directory can go at once. */
static struct web_config *load_ok(const char *text)
{
	struct web_config *wc = NULL;
	const char *path = write_web(text);
	char err[512] = "";

	ck_assert_msg(web_config_load(path, &wc, err, sizeof(err)) == 0, "%s", err);
	ck_assert_ptr_nonnull(wc);
	remove_web(path);
	return wc;
}

START_TEST(test_full)
{
	struct web_config *wc = load_ok("# a comment\n"
					"tls_server_config:\n"
					"  cert_file: server.crt\n"
					"  key_file: server.key\n"
					"  min_version: TLS13\n"
					"  client_auth_type: RequireAndVerifyClientCert\n"
					"  client_ca_file: ca.crt\n"
					"basic_auth_users:\n"
					"  alice: " ALICE "\n"
					"  'bob': \"" BOB "\"\n");

	ck_assert_int_eq(wc->tls, 1);
	ck_assert_int_eq(wc->min_version, 13);
	ck_assert_int_eq(wc->max_version, 13);
	ck_assert_int_eq(wc->client_auth, WEB_CLIENT_AUTH_REQUIRE_AND_VERIFY);
	ck_assert_ptr_nonnull(strstr(wc->cert_pem, "BEGIN CERTIFICATE"));
	ck_assert_ptr_nonnull(strstr(wc->key_pem, "PRIVATE KEY"));
	ck_assert_ptr_nonnull(strstr(wc->client_ca_pem, "BEGIN CERTIFICATE"));
	ck_assert_uint_eq(wc->nusers, 2);
	ck_assert_str_eq(wc->users[1].name, "bob");
	ck_assert_str_eq(wc->users[1].hash, BOB);
	ck_assert_str_eq(web_config_priorities(wc), "NORMAL:-VERS-ALL:+VERS-TLS1.3");
	web_config_free(wc);
}
END_TEST

START_TEST(test_defaults)
{
	struct web_config *wc = load_ok("");

	ck_assert_int_eq(wc->tls, 0);
	ck_assert_uint_eq(wc->nusers, 0);
	web_config_free(wc);
	/* users alone: basic auth over plain HTTP, as exporter-toolkit allows */
	wc = load_ok("tls_server_config:\nbasic_auth_users:\n  alice: " ALICE "\n");
	ck_assert_int_eq(wc->tls, 0);
	ck_assert_uint_eq(wc->nusers, 1);
	web_config_free(wc);
	wc = load_ok("tls_server_config: {cert_file: server.crt, key_file: server.key}\n");
	ck_assert_int_eq(wc->tls, 1);
	ck_assert_int_eq(wc->client_auth, WEB_CLIENT_AUTH_NONE);
	ck_assert_str_eq(web_config_priorities(wc), "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2");
	web_config_free(wc);
	wc = load_ok("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
		     "  max_version: TLS12\n");
	ck_assert_str_eq(web_config_priorities(wc), "NORMAL:-VERS-ALL:+VERS-TLS1.2");
	web_config_free(wc);
}
END_TEST

/* Each bad file and the start of its message after the path: the line of
 * the key at fault and what was expected. */
static const struct {
	const char *text;
	const char *msg;
} bad[] = {
	{ "tls_server_config: [unclosed\n",
	  ":1: bad value for 'tls_server_config': expected a mapping" },
	{ "tls_server_config:\n  cert_file: server.crt\n key_file: server.key\n",
	  ":3: YAML syntax error: " },
	{ "tls_server_config:\n\tcert_file: server.crt\n", ":2: YAML syntax error: " },
	{ "tls_server_config:\n  cert_fil: server.crt\n",
	  ":2: unknown key 'cert_fil' in 'tls_server_config': expected cert_file" },
	{ "tls_config: {}\n", ":1: unknown key 'tls_config' in the web config" },
	{ "rate_limit:\n  burst: 20\n",
	  ":1: 'rate_limit' (an exporter-toolkit key) is not supported" },
	{ "tls_server_config:\n  cert: PEM\n",
	  ":2: 'cert' (an exporter-toolkit key) is not supported" },
	{ "basic_auth_users:\n  alice: secret\n",
	  ":2: bad hash for user 'alice': expected a bcrypt" },
	{ "basic_auth_users:\n  alice: $1$abc$def\n", ":2: bad hash for user 'alice'" },
	{ "basic_auth_users:\n  alice: $2y$99$DjQiO13ixO2AyCxhsC/64efaefXfslt/1Lm/jGBoEbsqL9bK65Paa\n",
	  ":2: bad hash for user 'alice'" },
	{ "basic_auth_users:\n  alice:\n", ":2: bad hash for user 'alice'" },
	{ "basic_auth_users:\n  bob: " BOB
	  "\n  alice: $2y$31$XVvi.cU325odiT61kD/QZOp5IceF0vCxirk9u1CP5fU13G.mV1fFW\n",
	  ":3: bad bcrypt cost 31 for user 'alice': expected a cost from 10 to 14" },
	{ "basic_auth_users:\n  alice: $2y$04$XVvi.cU325odiT61kD/QZOp5IceF0vCxirk9u1CP5fU13G.mV1fFW\n",
	  ":2: bad bcrypt cost 4 for user 'alice': expected a cost from 10 to 14" },
	{ "basic_auth_users:\n  a:b: " ALICE "\n", ":2: bad user name 'a:b'" },
	{ "basic_auth_users:\n  alice: " ALICE "\n  alice: " BOB "\n",
	  ":3: 'alice' given twice in 'basic_auth_users'" },
	{ "basic_auth_users: [alice]\n",
	  ":1: bad value for 'basic_auth_users': expected a mapping" },
	{ "tls_server_config:\n  cert_file: server.crt\n", ":2: 'cert_file' without 'key_file'" },
	{ "tls_server_config:\n  min_version: TLS13\n",
	  ":1: 'tls_server_config' needs 'cert_file' and 'key_file'" },
	{ "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
	  "  min_version: TLS11\n",
	  ":4: bad value 'TLS11' for 'min_version': TLS 1.0 and 1.1 are not offered" },
	{ "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
	  "  min_version: TLS13\n  max_version: TLS12\n",
	  ":4: 'min_version' TLS13 is above 'max_version' TLS12" },
	{ "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
	  "  client_auth_type: RequireClientCert\n",
	  ":4: bad value 'RequireClientCert' for 'client_auth_type'" },
	{ "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
	  "  client_ca_file: ca.crt\n",
	  ":4: 'client_ca_file' without a 'client_auth_type'" },
	{ "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
	  "  client_auth_type: VerifyClientCertIfGiven\n",
	  ":4: 'client_auth_type' VerifyClientCertIfGiven needs 'client_ca_file'" },
	{ "tls_server_config:\n  cert_file: missing.crt\n  key_file: server.key\n",
	  ":2: unable to read '" },
	{ "tls_server_config:\n  cert_file: server.crt\n  key_file: other.key\n",
	  ":2: 'cert_file' 'server.crt' and 'key_file' 'other.key': " },
	{ "tls_server_config:\n  cert_file: server.key\n  key_file: server.key\n",
	  ":2: 'cert_file' 'server.key' and 'key_file' 'server.key': " },
	{ "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
	  "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: server.key\n",
	  ":5: 'client_ca_file' 'server.key' holds no certificate" },
	{ "a: &x 1\nb: *x\n", ":1: unknown key 'a'" },
	{ "basic_auth_users: &u\n  alice: " ALICE "\ntls_server_config: *u\n",
	  ":3: YAML aliases are not supported" },
	{ "- 1\n", ":1: expected a mapping" },
	{ "basic_auth_users:\n---\nbasic_auth_users:\n", ":2: expected one YAML document" },
};

START_TEST(test_bad)
{
	struct web_config *wc = NULL;
	const char *path = write_web(bad[_i].text);
	char err[512] = "", want[768];

	ck_assert_int_eq(web_config_load(path, &wc, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_null(wc);
	snprintf(want, sizeof(want), "%s%s", path, bad[_i].msg);
	ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "%s\n -> %s\n expected %s",
		      bad[_i].text, err, want);
	remove_web(path);
}
END_TEST

START_TEST(test_missing)
{
	struct web_config *wc = NULL;
	char err[512];

	ck_assert_int_eq(web_config_load("/nonexistent/web.yml", &wc, err, sizeof(err)), -ENOENT);
	ck_assert_str_eq(err, "unable to open '/nonexistent/web.yml': No such file or directory");
	ck_assert_int_eq(web_config_check("", err, sizeof(err)), 0);
	ck_assert_int_eq(web_config_check("/nonexistent/web.yml", err, sizeof(err)), -ENOENT);
}
END_TEST

START_TEST(test_passwords)
{
	struct web_config *wc = load_ok("basic_auth_users:\n  alice: " ALICE "\n  bob: " BOB "\n");
	struct http_auth *a = http_auth_new(wc);

	ck_assert_ptr_nonnull(a);
	ck_assert(http_auth_has_users(a));
	ck_assert_int_eq(http_auth_check_password(a, "alice", "secret"), 1);
	ck_assert_int_eq(http_auth_check_password(a, "alice", "secret"), 1); /* cached */
	ck_assert_int_eq(http_auth_check_password(a, "bob", "hunter2"), 1);
	ck_assert_int_eq(http_auth_check_password(a, "alice", "hunter2"), 0);
	ck_assert_int_eq(http_auth_check_password(a, "alice", "secre"), 0);
	ck_assert_int_eq(http_auth_check_password(a, "alice", ""), 0);
	ck_assert_int_eq(http_auth_check_password(a, "carol", "secret"), 0);
	ck_assert_int_eq(http_auth_check_password(a, "", ""), 0);
	/* the cache is keyed by user and password together */
	ck_assert_int_eq(http_auth_check_password(a, "bob", "secret"), 0);
	http_auth_free(a);
	web_config_free(wc);
}
END_TEST

/* Users of different costs: an unknown name pays the highest, whichever
 * user comes first, or it would answer sooner than carol's name does. */
START_TEST(test_unknown_user_cost)
{
	struct web_config *wc = load_ok("basic_auth_users:\n  alice: " ALICE "\n  carol: " CAROL
					"\n  bob: " BOB "\n");
	struct http_auth *a = http_auth_new(wc);

	ck_assert_ptr_nonnull(a);
	ck_assert_int_eq(http_auth_unknown_user_cost(a), 12);
	ck_assert_int_eq(http_auth_check_password(a, "dave", "pw12"), 0);
	http_auth_free(a);
	web_config_free(wc);
}
END_TEST

Suite *web_config_suite(void)
{
	Suite *s = suite_create("web_config");
	TCase *good = tcase_create("good files"), *bad_files = tcase_create("bad files");
	TCase *auth = tcase_create("passwords");

	tcase_add_test(good, test_full);
	tcase_add_test(good, test_defaults);
	tcase_add_loop_test(bad_files, test_bad, 0, sizeof(bad) / sizeof(bad[0]));
	tcase_add_test(bad_files, test_missing);
	tcase_add_test(auth, test_passwords);
	tcase_add_test(auth, test_unknown_user_cost);
	/* a dozen bcrypts of cost 10 to 12 (~50 to 200 ms each idle) on a
	 * loaded machine */
	tcase_set_timeout(auth, 30);
	suite_add_tcase(s, good);
	suite_add_tcase(s, bad_files);
	suite_add_tcase(s, auth);
	return s;
}
