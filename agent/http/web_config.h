/* SPDX-License-Identifier: MIT */
#ifndef FABMON_WEB_CONFIG_H
#define FABMON_WEB_CONFIG_H

#include <stddef.h>

/*
 * The web config file: TLS and basic authentication for the HTTP side, in
 * the YAML form of Prometheus's exporter-toolkit (docs/web-configuration.md),
 * so one file can serve node_exporter and fabmon alike:
 *
 *   tls_server_config:
 *     cert_file: server.crt          # relative paths: to the file's directory
 *     key_file: server.key
 *     min_version: TLS12             # TLS12 (default) or TLS13
 *     max_version: TLS13             # TLS12 or TLS13 (default)
 *     client_auth_type: RequireAndVerifyClientCert
 *     client_ca_file: ca.crt
 *   basic_auth_users:
 *     alice: $2y$10$...              # bcrypt, e.g. htpasswd -nbBC 10 alice PASSWORD
 *
 * The toolkit's keys that fabmon cannot honour (inline PEM, cipher and curve
 * lists, client_allowed_sans, http_server_config, rate_limit) are refused by
 * name rather than ignored: a file that asks for more than it gets is an error.
 */

enum web_client_auth {
	WEB_CLIENT_AUTH_NONE, /* NoClientCert */
	WEB_CLIENT_AUTH_REQUEST, /* RequestClientCert: asked for, never checked */
	WEB_CLIENT_AUTH_REQUIRE_ANY, /* RequireAnyClientCert: must be sent, never checked */
	WEB_CLIENT_AUTH_VERIFY_IF_GIVEN, /* VerifyClientCertIfGiven */
	WEB_CLIENT_AUTH_REQUIRE_AND_VERIFY, /* RequireAndVerifyClientCert */
};

/*
 * The bcrypt costs a web config may use. Below 10 is under OWASP's Password
 * Storage Cheat Sheet's floor for bcrypt (a stolen hash falls to a GPU too
 * fast); each step doubles the time, so past 14 (~0.8 s a check at the ~52 ms
 * cost 10 takes here) every wrong password holds an HTTP thread for seconds,
 * and cost 31 (the format's top) for days.
 */
#define WEB_BCRYPT_COST_MIN 10
#define WEB_BCRYPT_COST_MAX 14

struct web_user {
	char *name;
	char *hash; /* bcrypt: $2y$, $2b$ or $2a$, cost, 53 characters of salt and hash */
};

struct web_config {
	int tls; /* cert_file and key_file were given: serve HTTPS only */
	char *cert_pem; /* the files' contents, NUL-terminated, read at load */
	char *key_pem;
	char *client_ca_pem; /* NULL: no client CA */
	enum web_client_auth client_auth;
	int min_version; /* 12 or 13: TLS 1.2 or 1.3 */
	int max_version;
	struct web_user *users; /* sorted by nothing: a handful, looked up linearly */
	size_t nusers; /* 0: no basic authentication */
};

/*
 * Reads and checks a web config file: the YAML, every key and value, that the
 * certificate and key files can be read and belong together, that the client
 * CA file holds a certificate, that every hash is bcrypt of a cost from
 * WEB_BCRYPT_COST_MIN to WEB_BCRYPT_COST_MAX. Returns 0 and sets
 * *ret (free with web_config_free), or -errno with "FILE:LINE: ..." (the line
 * of the key at fault) in err.
 */
int web_config_load(const char *path, struct web_config **ret, char *err, size_t err_len);

/* Loads path and frees it again, for --check-config; "" is no web config.
 * Returns 0 or -errno with the message in err, as web_config_load. */
int web_config_check(const char *path, char *err, size_t err_len);

/* The cost of a bcrypt hash as web_config_load() accepts it ("$2y$10$...": 10). */
int web_bcrypt_cost(const char *hash);

/* Frees wc, wiping the key. Accepts NULL. */
void web_config_free(struct web_config *wc);

/* The GnuTLS priority string for wc's versions: never below TLS 1.2. */
const char *web_config_priorities(const struct web_config *wc);

/* The client_auth_type value's name, as the file spells it. */
const char *web_client_auth_name(enum web_client_auth a);

#endif
