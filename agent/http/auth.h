/* SPDX-License-Identifier: MIT */
#ifndef FABMON_HTTP_AUTH_H
#define FABMON_HTTP_AUTH_H

#include <microhttpd.h>

#include "agent/http/web_config.h"

/*
 * The HTTP side's access control, from a web config (agent/http/web_config.h): client
 * certificates checked in the TLS handshake and again per request, and basic
 * authentication against bcrypt hashes (libxcrypt's crypt_rn). A bcrypt costs
 * tens of milliseconds by design, so a user's correct password is remembered
 * for HTTP_AUTH_CACHE_MS as an HMAC under a key drawn at start (never the
 * password itself); wrong passwords are never remembered and always pay.
 * Thread-safe: libmicrohttpd's threads share one http_auth.
 */

#define HTTP_AUTH_CACHE_MS (5 * 60 * 1000)

struct http_auth;

/* Copies what it needs of wc (users, client_auth). Returns NULL on ENOMEM. */
struct http_auth *http_auth_new(const struct web_config *wc);

/* Frees a, wiping its cache. Accepts NULL. */
void http_auth_free(struct http_auth *a);

/* Whether any basic_auth_users are configured. */
int http_auth_has_users(const struct http_auth *a);

/*
 * Checks a user and password: 1 if they match a configured user, else 0. An
 * unknown user costs a bcrypt of the highest cost any user has (no timing
 * tells names); the hash is compared in constant time.
 */
int http_auth_check_password(struct http_auth *a, const char *user, const char *password);

/* The bcrypt cost an unknown user's check pays (0: no users). */
int http_auth_unknown_user_cost(const struct http_auth *a);

/*
 * For MHD_OPTION_NOTIFY_CONNECTION's MHD_CONNECTION_NOTIFY_STARTED, before
 * the handshake: asks this connection's TLS session for a client certificate
 * as client_auth_type says, and has GnuTLS verify it in the handshake (a
 * missing or untrusted one ends the handshake) where the policy verifies.
 */
void http_auth_tls_start(const struct http_auth *a, struct MHD_Connection *c);

enum http_auth_verdict {
	HTTP_AUTH_OK,
	HTTP_AUTH_BAD_CERT, /* the client certificate fails the policy: 403 */
	HTTP_AUTH_BAD_PASSWORD, /* none, or wrong: 401 with WWW-Authenticate */
};

/*
 * Checks one request: the client certificate again (as the policy says) and,
 * if need_password and users are configured, its basic auth credentials.
 * A NULL a (no web config) lets everything through.
 */
enum http_auth_verdict http_auth_request(struct http_auth *a, struct MHD_Connection *c,
					 int need_password);

#endif
