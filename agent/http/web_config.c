/* SPDX-License-Identifier: MIT */
#include <crypt.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "agent/http/web_config.h"
#include "agent/lib/file_read.h"

struct parse {
	yaml_parser_t parser;
	yaml_event_t ev;
	int have_ev;
	const char *path;
	char *err;
	size_t err_len;
	struct web_config *wc;
	/* file names as written, and the lines of the keys, for the checks
	 * that span keys */
	char *cert_file, *key_file, *ca_file;
	int tls_line, cert_line, key_line, ca_line, auth_line, min_line, max_line;
	int auth_set;
};

static int fail(struct parse *ps, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct parse *ps, int line, const char *fmt, ...)
{
	int n = snprintf(ps->err, ps->err_len, "%s:%d: ", ps->path, line);
	va_list ap;

	if (n >= 0 && (size_t)n < ps->err_len) {
		va_start(ap, fmt);
		vsnprintf(ps->err + n, ps->err_len - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int ev_line(const struct parse *ps)
{
	return (int)ps->ev.start_mark.line + 1;
}

/* Moves to the next event; aliases are refused here, once for all callers. */
static int next(struct parse *ps)
{
	if (ps->have_ev)
		yaml_event_delete(&ps->ev);
	ps->have_ev = 0;
	if (!yaml_parser_parse(&ps->parser, &ps->ev))
		return fail(ps, (int)ps->parser.problem_mark.line + 1, "YAML syntax error: %s",
			    ps->parser.problem ? ps->parser.problem : "unknown");
	ps->have_ev = 1;
	if (ps->ev.type == YAML_ALIAS_EVENT)
		return fail(ps, ev_line(ps), "YAML aliases are not supported here");
	return 0;
}

static const char *scalar(const struct parse *ps)
{
	return (const char *)ps->ev.data.scalar.value;
}

/* YAML's null: an empty value ("key:" alone), ~ or null, unquoted. */
static int is_null(const struct parse *ps)
{
	static const char *const nulls[] = { "", "~", "null", "Null", "NULL" };

	if (ps->ev.type != YAML_SCALAR_EVENT || !ps->ev.data.scalar.plain_implicit)
		return 0;
	for (size_t i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++)
		if (strcmp(scalar(ps), nulls[i]) == 0)
			return 1;
	return 0;
}

/* The current event as a string value of key: *ret NULL for a null. */
static int string_value(struct parse *ps, const char *key, char **ret)
{
	if (ps->ev.type != YAML_SCALAR_EVENT)
		return fail(ps, ev_line(ps), "bad value for '%s': expected a string", key);
	free(*ret);
	*ret = NULL;
	if (is_null(ps))
		return 0;
	*ret = strdup(scalar(ps));
	return *ret ? 0 : -ENOMEM;
}

static int version_value(struct parse *ps, const char *key, int *ret)
{
	const char *v = ps->ev.type == YAML_SCALAR_EVENT ? scalar(ps) : "";

	if (strcmp(v, "TLS12") == 0)
		*ret = 12;
	else if (strcmp(v, "TLS13") == 0)
		*ret = 13;
	else if (strcmp(v, "TLS10") == 0 || strcmp(v, "TLS11") == 0)
		return fail(ps, ev_line(ps),
			    "bad value '%s' for '%s': TLS 1.0 and 1.1 are not offered (RFC 8996); "
			    "expected TLS12 or TLS13",
			    v, key);
	else
		return fail(ps, ev_line(ps), "bad value '%s' for '%s': expected TLS12 or TLS13", v,
			    key);
	return 0;
}

static const char *const client_auth_names[] = {
	[WEB_CLIENT_AUTH_NONE] = "NoClientCert",
	[WEB_CLIENT_AUTH_REQUEST] = "RequestClientCert",
	[WEB_CLIENT_AUTH_REQUIRE_ANY] = "RequireAnyClientCert",
	[WEB_CLIENT_AUTH_VERIFY_IF_GIVEN] = "VerifyClientCertIfGiven",
	[WEB_CLIENT_AUTH_REQUIRE_AND_VERIFY] = "RequireAndVerifyClientCert",
};

const char *web_client_auth_name(enum web_client_auth a)
{
	return client_auth_names[a];
}

static int client_auth_value(struct parse *ps)
{
	const char *v = ps->ev.type == YAML_SCALAR_EVENT ? scalar(ps) : "";

	for (size_t i = 0; i < sizeof(client_auth_names) / sizeof(client_auth_names[0]); i++)
		if (strcmp(v, client_auth_names[i]) == 0) {
			ps->wc->client_auth = (enum web_client_auth)i;
			ps->auth_set = 1;
			return 0;
		}
	return fail(ps, ev_line(ps),
		    "bad value '%s' for 'client_auth_type': expected NoClientCert, "
		    "RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven or "
		    "RequireAndVerifyClientCert",
		    v);
}

/* exporter-toolkit keys fabmon does not honour: refused, never ignored. */
static const char *const unsupported_keys[] = {
	"cert",
	"key",
	"client_ca",
	"client_allowed_sans",
	"cipher_suites",
	"prefer_server_cipher_suites",
	"curve_preferences",
	"http_server_config",
	"rate_limit",
};

static int unknown_key(struct parse *ps, int line, const char *key, const char *where,
		       const char *expected)
{
	for (size_t i = 0; i < sizeof(unsupported_keys) / sizeof(unsupported_keys[0]); i++)
		if (strcmp(key, unsupported_keys[i]) == 0)
			return fail(ps, line,
				    "'%s' (an exporter-toolkit key) is not supported by fabmon",
				    key);
	return fail(ps, line, "unknown key '%s' in %s: expected %s", key, where, expected);
}

/*
 * Walks a mapping whose MAPPING_START is the current event, calling value()
 * with each key (its line) and the value as the current event. A null value
 * for the whole mapping is an empty one.
 */
static int walk_mapping(struct parse *ps, const char *name,
			int (*value)(struct parse *ps, const char *key, int line))
{
	char *seen[64];
	size_t nseen = 0;
	int r = 0;

	if (is_null(ps))
		return 0;
	if (ps->ev.type != YAML_MAPPING_START_EVENT)
		return fail(ps, ev_line(ps), "bad value for '%s': expected a mapping of keys",
			    name);
	for (;;) {
		char *key;
		int line;

		r = next(ps);
		if (r < 0 || ps->ev.type == YAML_MAPPING_END_EVENT)
			break;
		line = ev_line(ps);
		if (ps->ev.type != YAML_SCALAR_EVENT) {
			r = fail(ps, line, "expected a key in '%s'", name);
			break;
		}
		for (size_t i = 0; i < nseen; i++)
			if (strcmp(seen[i], scalar(ps)) == 0)
				r = fail(ps, line, "'%s' given twice in '%s'", scalar(ps), name);
		if (r < 0)
			break;
		if (nseen == sizeof(seen) / sizeof(seen[0])) {
			r = fail(ps, line, "over %zu keys in '%s'", nseen, name);
			break;
		}
		key = seen[nseen++] = strdup(scalar(ps));
		if (!key) {
			nseen--;
			r = -ENOMEM;
			break;
		}
		r = next(ps);
		if (r < 0)
			break;
		r = value(ps, key, line);
		if (r < 0)
			break;
	}
	for (size_t i = 0; i < nseen; i++)
		free(seen[i]);
	return r;
}

static int tls_value(struct parse *ps, const char *key, int line)
{
	if (strcmp(key, "cert_file") == 0) {
		ps->cert_line = line;
		return string_value(ps, key, &ps->cert_file);
	}
	if (strcmp(key, "key_file") == 0) {
		ps->key_line = line;
		return string_value(ps, key, &ps->key_file);
	}
	if (strcmp(key, "client_ca_file") == 0) {
		ps->ca_line = line;
		return string_value(ps, key, &ps->ca_file);
	}
	if (strcmp(key, "client_auth_type") == 0) {
		ps->auth_line = line;
		return client_auth_value(ps);
	}
	if (strcmp(key, "min_version") == 0) {
		ps->min_line = line;
		return version_value(ps, key, &ps->wc->min_version);
	}
	if (strcmp(key, "max_version") == 0) {
		ps->max_line = line;
		return version_value(ps, key, &ps->wc->max_version);
	}
	return unknown_key(ps, line, key, "'tls_server_config'",
			   "cert_file, key_file, min_version, max_version, client_auth_type or "
			   "client_ca_file");
}

/* bcrypt as crypt(3) writes it: $2b$ (or $2y$, $2a$), a two-digit cost, then
 * 22 characters of salt and 31 of hash in bcrypt's base64. */
static int bcrypt_shaped(const char *h)
{
	if (strlen(h) != 60 || h[0] != '$' || h[1] != '2' || !strchr("aby", h[2]) || h[3] != '$' ||
	    h[6] != '$')
		return 0;
	if (h[4] < '0' || h[4] > '3' || h[5] < '0' || h[5] > '9')
		return 0;
	for (const char *p = h + 7; *p; p++)
		if (!strchr("./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", *p))
			return 0;
	/* libxcrypt's own view: a cost out of 04..31, or bcrypt disabled */
	return crypt_checksalt(h) == CRYPT_SALT_OK;
}

int web_bcrypt_cost(const char *hash)
{
	return (hash[4] - '0') * 10 + (hash[5] - '0');
}

static int user_value(struct parse *ps, const char *name, int line)
{
	struct web_config *wc = ps->wc;
	struct web_user *u;
	char *hash = NULL;
	int r, cost;

	if (!name[0] || strchr(name, ':'))
		return fail(ps, line, "bad user name '%s': expected a non-empty name without ':'",
			    name);
	r = string_value(ps, name, &hash);
	if (r < 0)
		return r;
	if (!hash || !bcrypt_shaped(hash)) {
		r = fail(ps, ev_line(ps),
			 "bad hash for user '%s': expected a bcrypt hash ($2y$10$ and 53 "
			 "characters), e.g. from htpasswd -nbBC 10 %s PASSWORD",
			 name, name);
		free(hash);
		return r;
	}
	cost = web_bcrypt_cost(hash);
	if (cost < WEB_BCRYPT_COST_MIN || cost > WEB_BCRYPT_COST_MAX) {
		r = fail(ps, ev_line(ps),
			 "bad bcrypt cost %d for user '%s': expected a cost from %d to %d, e.g. "
			 "from htpasswd -nbBC 10 %s PASSWORD",
			 cost, name, WEB_BCRYPT_COST_MIN, WEB_BCRYPT_COST_MAX, name);
		free(hash);
		return r;
	}
	u = realloc(wc->users, (wc->nusers + 1) * sizeof(*u));
	if (!u) {
		free(hash);
		return -ENOMEM;
	}
	wc->users = u;
	u[wc->nusers].hash = hash;
	u[wc->nusers].name = strdup(name);
	if (!u[wc->nusers].name) {
		free(hash);
		return -ENOMEM;
	}
	wc->nusers++;
	return 0;
}

static int top_value(struct parse *ps, const char *key, int line)
{
	if (strcmp(key, "tls_server_config") == 0) {
		ps->tls_line = line;
		return walk_mapping(ps, key, tls_value);
	}
	if (strcmp(key, "basic_auth_users") == 0)
		return walk_mapping(ps, key, user_value);
	return unknown_key(ps, line, key, "the web config",
			   "tls_server_config or basic_auth_users");
}

/* Reads a file the web config names, relative to the web config's directory
 * as exporter-toolkit does. */
static int read_named(struct parse *ps, const char *key, const char *name, int line, char **ret,
		      size_t *ret_len)
{
	const char *slash = strrchr(ps->path, '/');
	char full[PATH_MAX];
	int r;

	if (name[0] == '/' || !slash)
		snprintf(full, sizeof(full), "%s", name);
	else
		snprintf(full, sizeof(full), "%.*s/%s", (int)(slash - ps->path), ps->path, name);
	r = file_read(full, ret, ret_len);
	if (r < 0)
		return fail(ps, line, "unable to read '%s' for '%s': %s", full, key,
			    file_read_strerror(r));
	return 0;
}

/* The checks that span keys, then the files read and tried with GnuTLS, so a
 * bad file is found by --check-config rather than at the first handshake. */
static int finish(struct parse *ps)
{
	struct web_config *wc = ps->wc;
	gnutls_certificate_credentials_t cred = NULL;
	gnutls_datum_t cert, key, ca;
	size_t len;
	int r;

	if (!ps->cert_file != !ps->key_file)
		return ps->cert_file ? fail(ps, ps->cert_line, "'cert_file' without 'key_file'")
				     : fail(ps, ps->key_line, "'key_file' without 'cert_file'");
	if (!ps->cert_file) {
		if (ps->ca_file || ps->auth_set || ps->min_line || ps->max_line)
			return fail(ps, ps->tls_line,
				    "'tls_server_config' needs 'cert_file' and 'key_file'");
		return 0;
	}
	wc->tls = 1;
	if (wc->min_version > wc->max_version)
		return fail(ps, ps->min_line ? ps->min_line : ps->max_line,
			    "'min_version' TLS%d is above 'max_version' TLS%d", wc->min_version,
			    wc->max_version);
	if (ps->ca_file && wc->client_auth == WEB_CLIENT_AUTH_NONE)
		return fail(ps, ps->ca_line,
			    "'client_ca_file' without a 'client_auth_type' that asks for "
			    "certificates: expected RequireAndVerifyClientCert or "
			    "VerifyClientCertIfGiven");
	if (!ps->ca_file && (wc->client_auth == WEB_CLIENT_AUTH_VERIFY_IF_GIVEN ||
			     wc->client_auth == WEB_CLIENT_AUTH_REQUIRE_AND_VERIFY))
		return fail(ps, ps->auth_line, "'client_auth_type' %s needs 'client_ca_file'",
			    web_client_auth_name(wc->client_auth));
	r = read_named(ps, "cert_file", ps->cert_file, ps->cert_line, &wc->cert_pem, &len);
	if (r < 0)
		return r;
	cert = (gnutls_datum_t){ (unsigned char *)wc->cert_pem, (unsigned)len };
	r = read_named(ps, "key_file", ps->key_file, ps->key_line, &wc->key_pem, &len);
	if (r < 0)
		return r;
	key = (gnutls_datum_t){ (unsigned char *)wc->key_pem, (unsigned)len };
	if (gnutls_certificate_allocate_credentials(&cred) < 0)
		return -ENOMEM;
	r = gnutls_certificate_set_x509_key_mem2(cred, &cert, &key, GNUTLS_X509_FMT_PEM, NULL, 0);
	if (r < 0) {
		r = fail(ps, ps->cert_line, "'cert_file' '%s' and 'key_file' '%s': %s",
			 ps->cert_file, ps->key_file, gnutls_strerror(r));
		goto out;
	}
	if (ps->ca_file) {
		r = read_named(ps, "client_ca_file", ps->ca_file, ps->ca_line, &wc->client_ca_pem,
			       &len);
		if (r < 0)
			goto out;
		ca = (gnutls_datum_t){ (unsigned char *)wc->client_ca_pem, (unsigned)len };
		r = gnutls_certificate_set_x509_trust_mem(cred, &ca, GNUTLS_X509_FMT_PEM);
		if (r <= 0) {
			r = fail(ps, ps->ca_line, "'client_ca_file' '%s' holds no certificate%s%s",
				 ps->ca_file, r < 0 ? ": " : "", r < 0 ? gnutls_strerror(r) : "");
			goto out;
		}
	}
	r = 0;
out:
	gnutls_certificate_free_credentials(cred);
	return r;
}

/* The document: one mapping, or nothing at all (an empty file asks for
 * neither TLS nor authentication, as with exporter-toolkit). */
static int parse_document(struct parse *ps)
{
	int r = next(ps);

	if (r == 0 && ps->ev.type == YAML_STREAM_START_EVENT)
		r = next(ps);
	if (r < 0 || ps->ev.type == YAML_STREAM_END_EVENT)
		return r;
	r = next(ps); /* past DOCUMENT_START */
	if (r < 0)
		return r;
	if (!is_null(ps) && ps->ev.type != YAML_MAPPING_START_EVENT)
		return fail(ps, ev_line(ps),
			    "expected a mapping with tls_server_config or basic_auth_users");
	r = walk_mapping(ps, "the web config", top_value);
	if (r == 0)
		r = next(ps); /* DOCUMENT_END */
	if (r == 0)
		r = next(ps);
	if (r == 0 && ps->ev.type != YAML_STREAM_END_EVENT)
		r = fail(ps, ev_line(ps), "expected one YAML document, found more");
	return r;
}

int web_config_load(const char *path, struct web_config **ret, char *err, size_t err_len)
{
	struct parse ps = { .path = path, .err = err, .err_len = err_len };
	char *text = NULL;
	size_t len;
	int r;

	ps.wc = calloc(1, sizeof(*ps.wc));
	if (!ps.wc)
		return -ENOMEM;
	ps.wc->min_version = 12;
	ps.wc->max_version = 13;
	r = file_read(path, &text, &len);
	if (r < 0) {
		snprintf(err, err_len, "unable to open '%s': %s", path, file_read_strerror(r));
		goto out;
	}
	if (!yaml_parser_initialize(&ps.parser)) {
		r = -ENOMEM;
		goto out;
	}
	yaml_parser_set_input_string(&ps.parser, (const unsigned char *)text, len);
	r = parse_document(&ps);
	if (ps.have_ev)
		yaml_event_delete(&ps.ev);
	yaml_parser_delete(&ps.parser);
	if (r == 0)
		r = finish(&ps);
	if (r == -ENOMEM)
		snprintf(err, err_len, "%s: out of memory", path);
out:
	free(text);
	free(ps.cert_file);
	free(ps.key_file);
	free(ps.ca_file);
	if (r < 0)
		web_config_free(ps.wc);
	else
		*ret = ps.wc;
	return r;
}

int web_config_check(const char *path, char *err, size_t err_len)
{
	struct web_config *wc = NULL;
	int r;

	if (!path[0])
		return 0;
	r = web_config_load(path, &wc, err, err_len);
	web_config_free(wc);
	return r;
}

void web_config_free(struct web_config *wc)
{
	if (!wc)
		return;
	if (wc->key_pem) {
		explicit_bzero(wc->key_pem, strlen(wc->key_pem));
		free(wc->key_pem);
	}
	free(wc->cert_pem);
	free(wc->client_ca_pem);
	for (size_t i = 0; i < wc->nusers; i++) {
		free(wc->users[i].name);
		free(wc->users[i].hash);
	}
	free(wc->users);
	free(wc);
}

const char *web_config_priorities(const struct web_config *wc)
{
	/* NORMAL is GnuTLS's default set; only the versions are narrowed */
	if (wc->min_version >= 13)
		return "NORMAL:-VERS-ALL:+VERS-TLS1.3";
	if (wc->max_version <= 12)
		return "NORMAL:-VERS-ALL:+VERS-TLS1.2";
	return "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2";
}
