/* SPDX-License-Identifier: MIT */
#include <crypt.h>
#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/http/auth.h"
#include "agent/lib/clock.h"

/* A handful of scrapers and operators: more users than this at once only
 * means an older entry pays one bcrypt again. */
#define CACHE_SLOTS 32
#define MAC_LEN 32 /* HMAC-SHA256 */

struct cache_slot {
	unsigned char mac[MAC_LEN];
	int64_t expires_ms; /* monotonic; 0: empty */
};

struct http_auth {
	enum web_client_auth client_auth;
	struct web_user *users;
	size_t nusers;
	/* a bcrypt setting ("$2b$12$" and salt) at the highest cost of the
	 * users, which an unknown user's password is hashed with */
	char dummy[CRYPT_GENSALT_OUTPUT_SIZE];
	pthread_mutex_t lock; /* the cache */
	unsigned char key[32];
	struct cache_slot cache[CACHE_SLOTS];
};

/* Equal without an early exit: the time depends on n only. */
static int equal_ct(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;
	unsigned char d = 0;

	for (size_t i = 0; i < n; i++)
		d |= x[i] ^ y[i];
	return d == 0;
}

struct http_auth *http_auth_new(const struct web_config *wc)
{
	struct http_auth *a = calloc(1, sizeof(*a));
	int cost = 0;

	if (!a)
		return NULL;
	pthread_mutex_init(&a->lock, NULL);
	a->client_auth = wc->client_auth;
	if (gnutls_rnd(GNUTLS_RND_KEY, a->key, sizeof(a->key)) < 0)
		goto fail;
	if (wc->nusers) {
		a->users = calloc(wc->nusers, sizeof(*a->users));
		if (!a->users)
			goto fail;
	}
	for (; a->nusers < wc->nusers; a->nusers++) {
		struct web_user *u = &a->users[a->nusers];

		u->name = strdup(wc->users[a->nusers].name);
		u->hash = strdup(wc->users[a->nusers].hash);
		if (!u->name || !u->hash) {
			a->nusers++;
			goto fail;
		}
		if (web_bcrypt_cost(u->hash) > cost)
			cost = web_bcrypt_cost(u->hash);
	}
	/* the highest cost, not the first user's: a lower one would set
	 * every name of a higher cost apart from unknown ones */
	if (a->nusers &&
	    !crypt_gensalt_rn("$2b$", (unsigned long)cost, NULL, 0, a->dummy, sizeof(a->dummy)))
		goto fail;
	return a;
fail:
	http_auth_free(a);
	return NULL;
}

void http_auth_free(struct http_auth *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->nusers; i++) {
		free(a->users[i].name);
		free(a->users[i].hash);
	}
	free(a->users);
	pthread_mutex_destroy(&a->lock);
	explicit_bzero(a, sizeof(*a));
	free(a);
}

int http_auth_has_users(const struct http_auth *a)
{
	return a && a->nusers > 0;
}

int http_auth_unknown_user_cost(const struct http_auth *a)
{
	return a->nusers ? web_bcrypt_cost(a->dummy) : 0;
}

/* The cache key of a user's password: HMAC(key, user NUL password). */
static int cache_mac(const struct http_auth *a, const char *user, const char *password,
		     unsigned char *mac)
{
	gnutls_hmac_hd_t h;

	if (gnutls_hmac_init(&h, GNUTLS_MAC_SHA256, a->key, sizeof(a->key)) < 0)
		return -ENOMEM;
	(void)gnutls_hmac(h, user, strlen(user) + 1);
	(void)gnutls_hmac(h, password, strlen(password));
	gnutls_hmac_deinit(h, mac);
	return 0;
}

static int cache_hit(struct http_auth *a, const unsigned char *mac)
{
	int64_t now = clock_mono_ms();
	int hit = 0;

	pthread_mutex_lock(&a->lock);
	for (size_t i = 0; i < CACHE_SLOTS; i++)
		if (a->cache[i].expires_ms > now && equal_ct(a->cache[i].mac, mac, MAC_LEN))
			hit = 1;
	pthread_mutex_unlock(&a->lock);
	return hit;
}

/* Remembers a verified password in an empty, expired or the oldest slot. */
static void cache_add(struct http_auth *a, const unsigned char *mac)
{
	size_t oldest = 0;

	pthread_mutex_lock(&a->lock);
	for (size_t i = 1; i < CACHE_SLOTS; i++)
		if (a->cache[i].expires_ms < a->cache[oldest].expires_ms)
			oldest = i;
	memcpy(a->cache[oldest].mac, mac, MAC_LEN);
	a->cache[oldest].expires_ms = clock_mono_ms() + HTTP_AUTH_CACHE_MS;
	pthread_mutex_unlock(&a->lock);
}

int http_auth_check_password(struct http_auth *a, const char *user, const char *password)
{
	const struct web_user *u = NULL;
	struct crypt_data *cd = NULL;
	unsigned char mac[MAC_LEN];
	const char *out;
	int ok = 0, have_mac;

	if (!a->nusers)
		return 0;
	for (size_t i = 0; i < a->nusers; i++)
		if (strcmp(a->users[i].name, user) == 0)
			u = &a->users[i];
	have_mac = u && cache_mac(a, user, password, mac) == 0;
	if (have_mac && cache_hit(a, mac))
		return 1;
	/* struct crypt_data is ~32 KiB: too much for an MHD thread's stack */
	cd = calloc(1, sizeof(*cd));
	if (!cd)
		return 0;
	/* an unknown user pays the highest cost a known one can: no name
	 * answers slower than an unknown one, and one of the highest cost (of
	 * the only cost, if all have one) answers as fast */
	out = crypt_rn(password, u ? u->hash : a->dummy, cd, sizeof(*cd));
	if (u && out && strlen(out) == strlen(u->hash))
		ok = equal_ct(out, u->hash, strlen(u->hash));
	explicit_bzero(cd, sizeof(*cd));
	free(cd);
	if (ok && have_mac)
		cache_add(a, mac);
	return ok;
}

/* Whether the TLS session's client certificate is trusted by the client CA
 * file and fit for TLS client authentication. */
static int peer_verified(gnutls_session_t s)
{
	gnutls_typed_vdata_st purpose = { .type = GNUTLS_DT_KEY_PURPOSE_OID,
					  .data = (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT };
	unsigned status = 0;

	return gnutls_certificate_verify_peers(s, &purpose, 1, &status) == 0 && status == 0;
}

static int peer_count(gnutls_session_t s)
{
	unsigned n = 0;

	return gnutls_certificate_get_peers(s, &n) ? (int)n : 0;
}

/* Called by GnuTLS in the handshake once the client's certificate (or its
 * absence) is known: non-zero ends the handshake. */
static int handshake_verify(gnutls_session_t s)
{
	if (peer_count(s) == 0)
		return 0; /* GNUTLS_CERT_REQUIRE already refused it where needed */
	return peer_verified(s) ? 0 : -1;
}

void http_auth_tls_start(const struct http_auth *a, struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *info;
	gnutls_session_t s;

	if (!a || a->client_auth == WEB_CLIENT_AUTH_NONE)
		return;
	info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	if (!info || !info->tls_session)
		return;
	s = info->tls_session;
	switch (a->client_auth) {
	case WEB_CLIENT_AUTH_NONE:
		break;
	case WEB_CLIENT_AUTH_REQUEST:
		gnutls_certificate_server_set_request(s, GNUTLS_CERT_REQUEST);
		break;
	case WEB_CLIENT_AUTH_REQUIRE_ANY:
		gnutls_certificate_server_set_request(s, GNUTLS_CERT_REQUIRE);
		break;
	case WEB_CLIENT_AUTH_VERIFY_IF_GIVEN:
		gnutls_certificate_server_set_request(s, GNUTLS_CERT_REQUEST);
		gnutls_session_set_verify_function(s, handshake_verify);
		break;
	case WEB_CLIENT_AUTH_REQUIRE_AND_VERIFY:
		gnutls_certificate_server_set_request(s, GNUTLS_CERT_REQUIRE);
		gnutls_session_set_verify_function(s, handshake_verify);
		break;
	}
}

/* The handshake has enforced the policy already; this is the same rule
 * again per request, so no TLS resumption or library change can skip it. */
static int client_cert_ok(const struct http_auth *a, struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *info;
	gnutls_session_t s;
	int n;

	if (a->client_auth == WEB_CLIENT_AUTH_NONE || a->client_auth == WEB_CLIENT_AUTH_REQUEST)
		return 1;
	info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	if (!info || !info->tls_session)
		return 0;
	s = info->tls_session;
	n = peer_count(s);
	switch (a->client_auth) {
	case WEB_CLIENT_AUTH_REQUIRE_ANY:
		return n > 0;
	case WEB_CLIENT_AUTH_VERIFY_IF_GIVEN:
		return n == 0 || peer_verified(s);
	case WEB_CLIENT_AUTH_REQUIRE_AND_VERIFY:
		return n > 0 && peer_verified(s);
	default:
		return 0;
	}
}

enum http_auth_verdict http_auth_request(struct http_auth *a, struct MHD_Connection *c,
					 int need_password)
{
	char *user, *password = NULL;
	int ok;

	if (!a)
		return HTTP_AUTH_OK;
	if (!client_cert_ok(a, c))
		return HTTP_AUTH_BAD_CERT;
	if (!need_password || !a->nusers)
		return HTTP_AUTH_OK;
	user = MHD_basic_auth_get_username_password(c, &password);
	ok = user && password && http_auth_check_password(a, user, password);
	if (password) {
		explicit_bzero(password, strlen(password));
		MHD_free(password);
	}
	if (user)
		MHD_free(user);
	return ok ? HTTP_AUTH_OK : HTTP_AUTH_BAD_PASSWORD;
}
