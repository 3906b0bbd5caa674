/* SPDX-License-Identifier: MIT */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cli/prom_client.h"
#include "agent/lib/strbuf.h"

#define PROM_TIMEOUT_MS_DEFAULT 10000
/* An answer larger than this is refused rather than held (a query the
 * caller did not bound). */
#define PROM_BODY_MAX (256u << 20)

struct prom_client {
	CURL *curl;
	char *base; /* the URL without a trailing '/' */
	struct strbuf body;
	int queries;
	char err[CURL_ERROR_SIZE + 2304]; /* a URL and a message */
};

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct strbuf *sb = arg;

	if (sb->len + size * n > PROM_BODY_MAX)
		return 0; /* libcurl fails the transfer */
	strbuf_add(sb, data, size * n);
	return sb->failed ? 0 : size * n;
}

struct prom_client *prom_client_new(const struct prom_options *o)
{
	struct prom_client *c = calloc(1, sizeof(*c));
	size_t n;

	if (!c || curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		goto fail;
	c->curl = curl_easy_init();
	c->base = strdup(o->url);
	if (!c->curl || !c->base)
		goto fail;
	n = strlen(c->base);
	while (n && c->base[n - 1] == '/')
		c->base[--n] = '\0';
	strbuf_init(&c->body);
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &c->body);
	curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, c->err);
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS,
			 o->timeout_ms ? o->timeout_ms : PROM_TIMEOUT_MS_DEFAULT);
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->curl, CURLOPT_ACCEPT_ENCODING, ""); /* gzip if offered */
	/* http(s) only: a URL is the operator's, but not a way to read files */
	curl_easy_setopt(c->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	/* libcurl copies string options */
	if (o->ca_file)
		curl_easy_setopt(c->curl, CURLOPT_CAINFO, o->ca_file);
	if (o->cert_file)
		curl_easy_setopt(c->curl, CURLOPT_SSLCERT, o->cert_file);
	if (o->key_file)
		curl_easy_setopt(c->curl, CURLOPT_SSLKEY, o->key_file);
	if (o->user) {
		curl_easy_setopt(c->curl, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
		curl_easy_setopt(c->curl, CURLOPT_USERNAME, o->user);
		curl_easy_setopt(c->curl, CURLOPT_PASSWORD, o->password ? o->password : "");
	}
	return c;
fail:
	prom_client_free(c);
	return NULL;
}

void prom_client_free(struct prom_client *c)
{
	if (!c)
		return;
	if (c->curl)
		curl_easy_cleanup(c->curl);
	strbuf_release(&c->body);
	free(c->base);
	free(c);
}

int prom_client_queries(const struct prom_client *c)
{
	return c->queries;
}

const char *prom_client_error(const struct prom_client *c)
{
	return c->err;
}

/* Posts the form to base/path and returns data.result of the answer. */
static int post(struct prom_client *c, const char *path, const char *form, json_t **ret)
{
	char url[2048];
	long code = 0;
	json_t *root = NULL, *data;
	json_error_t jerr;
	CURLcode rc;
	int r = -EIO;

	c->err[0] = '\0';
	c->queries++;
	strbuf_reset(&c->body);
	snprintf(url, sizeof(url), "%s%s", c->base, path);
	curl_easy_setopt(c->curl, CURLOPT_URL, url);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, form);
	rc = curl_easy_perform(c->curl);
	if (rc != CURLE_OK) {
		if (!c->err[0])
			snprintf(c->err, sizeof(c->err), "%s", curl_easy_strerror(rc));
		goto out;
	}
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &code);
	root = c->body.failed ? NULL : json_loadb(c->body.buf, c->body.len, 0, &jerr);
	if (!root) {
		r = code == 200 ? -EBADMSG : -EIO;
		snprintf(c->err, sizeof(c->err), "HTTP %ld from %s: not Prometheus' JSON", code,
			 url);
		goto out;
	}
	if (strcmp(json_string_value(json_object_get(root, "status")) ?: "", "success") != 0) {
		r = code >= 400 && code < 500 && code != 401 && code != 403 ? -EINVAL : -EIO;
		snprintf(c->err, sizeof(c->err), "HTTP %ld: %s: %s", code,
			 json_string_value(json_object_get(root, "errorType")) ?: "error",
			 json_string_value(json_object_get(root, "error")) ?: "(no message)");
		goto out;
	}
	data = json_object_get(json_object_get(root, "data"), "result");
	if (!json_is_array(data)) {
		r = -EBADMSG;
		snprintf(c->err, sizeof(c->err), "%s: the answer has no data.result array", url);
		goto out;
	}
	*ret = json_incref(data);
	r = 0;
out:
	json_decref(root);
	return r;
}

/* Appends "name=<value url-encoded>" to a form. */
static int form_add(struct prom_client *c, struct strbuf *sb, const char *name, const char *value)
{
	char *esc = curl_easy_escape(c->curl, value, 0);

	if (!esc)
		return -ENOMEM;
	strbuf_addf(sb, "%s%s=%s", sb->len ? "&" : "", name, esc);
	curl_free(esc);
	return sb->failed ? -ENOMEM : 0;
}

static void seconds(int64_t ms, char *buf, size_t len)
{
	snprintf(buf, len, "%lld.%03d", (long long)(ms / 1000), (int)(ms % 1000));
}

int prom_query(struct prom_client *c, const char *promql, int64_t at_ms, json_t **ret_result)
{
	struct strbuf form;
	char t[32];
	int r;

	strbuf_init(&form);
	seconds(at_ms, t, sizeof(t));
	r = form_add(c, &form, "query", promql);
	if (!r && at_ms)
		r = form_add(c, &form, "time", t);
	if (!r)
		r = post(c, "/api/v1/query", form.buf, ret_result);
	strbuf_release(&form);
	return r;
}

int prom_query_range(struct prom_client *c, const char *promql, int64_t start_ms, int64_t end_ms,
		     int64_t step_ms, json_t **ret_result)
{
	struct strbuf form;
	char a[32], b[32], s[32];
	int r;

	strbuf_init(&form);
	seconds(start_ms, a, sizeof(a));
	seconds(end_ms, b, sizeof(b));
	seconds(step_ms, s, sizeof(s));
	r = form_add(c, &form, "query", promql);
	if (!r)
		r = form_add(c, &form, "start", a);
	if (!r)
		r = form_add(c, &form, "end", b);
	if (!r)
		r = form_add(c, &form, "step", s);
	if (!r)
		r = post(c, "/api/v1/query_range", form.buf, ret_result);
	strbuf_release(&form);
	return r;
}
