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
/* How long one wait for the sockets lasts; the transfers' own timeout
 * bounds the whole. */
#define PROM_POLL_MS 1000

struct prom_client {
	const struct prom_options *o;
	CURLM *multi;
	int queries;
	char err[CURL_ERROR_SIZE + 2304]; /* a URL and a message */
};

/* A request in flight: its handle, form, answer and transfer error. */
struct transfer {
	CURL *curl;
	struct strbuf form, body;
	char url[2048];
	char curl_err[CURL_ERROR_SIZE];
	CURLcode rc;
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

	if (!c || curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		goto fail;
	c->o = o;
	c->multi = curl_multi_init();
	if (!c->multi)
		goto fail;
	return c;
fail:
	prom_client_free(c);
	return NULL;
}

void prom_client_free(struct prom_client *c)
{
	if (!c)
		return;
	if (c->multi)
		curl_multi_cleanup(c->multi);
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

/* Appends "name=<value url-encoded>" to a form. */
static void form_add(CURL *curl, struct strbuf *sb, const char *name, const char *value)
{
	char *esc = curl_easy_escape(curl, value, 0);

	if (!esc) {
		sb->failed = 1;
		return;
	}
	strbuf_addf(sb, "%s%s=%s", sb->len ? "&" : "", name, esc);
	curl_free(esc);
}

static void form_add_time(CURL *curl, struct strbuf *sb, const char *name, int64_t ms)
{
	char t[32];

	snprintf(t, sizeof(t), "%lld.%03d", (long long)(ms / 1000), (int)(ms % 1000));
	form_add(curl, sb, name, t);
}

/* Sets up t's handle for req. 0 or -ENOMEM. */
static int transfer_init(struct prom_client *c, struct transfer *t, const struct prom_request *req)
{
	const struct prom_options *o = c->o;
	size_t n = strlen(o->url);

	strbuf_init(&t->form);
	strbuf_init(&t->body);
	t->curl = curl_easy_init();
	if (!t->curl)
		return -ENOMEM;
	while (n && o->url[n - 1] == '/')
		n--;
	snprintf(t->url, sizeof(t->url), "%.*s/api/v1/%s", (int)n, o->url,
		 req->step_ms > 0 ? "query_range" : "query");
	form_add(t->curl, &t->form, "query", req->promql);
	if (req->step_ms > 0) {
		form_add_time(t->curl, &t->form, "start", req->start_ms);
		form_add_time(t->curl, &t->form, "end", req->end_ms);
		form_add_time(t->curl, &t->form, "step", req->step_ms);
	} else if (req->at_ms) {
		form_add_time(t->curl, &t->form, "time", req->at_ms);
	}
	if (t->form.failed)
		return -ENOMEM;
	curl_easy_setopt(t->curl, CURLOPT_URL, t->url);
	curl_easy_setopt(t->curl, CURLOPT_POSTFIELDS, t->form.buf);
	curl_easy_setopt(t->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(t->curl, CURLOPT_WRITEDATA, &t->body);
	curl_easy_setopt(t->curl, CURLOPT_ERRORBUFFER, t->curl_err);
	curl_easy_setopt(t->curl, CURLOPT_PRIVATE, t);
	curl_easy_setopt(t->curl, CURLOPT_TIMEOUT_MS,
			 o->timeout_ms ? o->timeout_ms : PROM_TIMEOUT_MS_DEFAULT);
	curl_easy_setopt(t->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(t->curl, CURLOPT_ACCEPT_ENCODING, ""); /* gzip if offered */
	/* http(s) only: a URL is the operator's, but not a way to read files */
	curl_easy_setopt(t->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	if (o->ca_file)
		curl_easy_setopt(t->curl, CURLOPT_CAINFO, o->ca_file);
	if (o->cert_file)
		curl_easy_setopt(t->curl, CURLOPT_SSLCERT, o->cert_file);
	if (o->key_file)
		curl_easy_setopt(t->curl, CURLOPT_SSLKEY, o->key_file);
	if (o->user) {
		curl_easy_setopt(t->curl, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
		curl_easy_setopt(t->curl, CURLOPT_USERNAME, o->user);
		curl_easy_setopt(t->curl, CURLOPT_PASSWORD, o->password ? o->password : "");
	}
	return 0;
}

static void transfer_release(struct prom_client *c, struct transfer *t)
{
	if (t->curl) {
		(void)curl_multi_remove_handle(c->multi, t->curl);
		curl_easy_cleanup(t->curl);
	}
	strbuf_release(&t->form);
	strbuf_release(&t->body);
}

/* Reads t's answer: data.result into *ret. 0 or -errno (c->err says). */
static int transfer_result(struct prom_client *c, struct transfer *t, json_t **ret)
{
	json_t *root = NULL, *data;
	json_error_t jerr;
	long code = 0;
	int r = -EIO;

	if (t->rc != CURLE_OK) {
		snprintf(c->err, sizeof(c->err), "%s",
			 t->curl_err[0] ? t->curl_err : curl_easy_strerror(t->rc));
		return -EIO;
	}
	curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
	root = t->body.failed ? NULL : json_loadb(t->body.buf, t->body.len, 0, &jerr);
	if (!root) {
		r = code == 200 ? -EBADMSG : -EIO;
		snprintf(c->err, sizeof(c->err), "HTTP %ld from %s: not Prometheus' JSON", code,
			 t->url);
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
		snprintf(c->err, sizeof(c->err), "%s: the answer has no data.result array", t->url);
		goto out;
	}
	*ret = json_incref(data);
	r = 0;
out:
	json_decref(root);
	return r;
}

/* Drives every added transfer to its end; each one's result code in rc. */
static int perform(struct prom_client *c)
{
	int running = 1, left;
	CURLMsg *m;

	while (running) {
		if (curl_multi_perform(c->multi, &running) != CURLM_OK)
			return -EIO;
		if (running && curl_multi_poll(c->multi, NULL, 0, PROM_POLL_MS, NULL) != CURLM_OK)
			return -EIO;
	}
	while ((m = curl_multi_info_read(c->multi, &left))) {
		struct transfer *t = NULL;

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&t);
		t->rc = m->data.result;
	}
	return 0;
}

int prom_run(struct prom_client *c, struct prom_request *reqs, int n)
{
	struct transfer *t = calloc((size_t)n + 1, sizeof(*t));
	int r = -ENOMEM;

	c->err[0] = '\0';
	if (!t)
		goto out;
	for (int i = 0; i < n; i++) {
		reqs[i].result = NULL;
		r = transfer_init(c, &t[i], &reqs[i]);
		if (!r && curl_multi_add_handle(c->multi, t[i].curl) != CURLM_OK)
			r = -ENOMEM;
		if (r < 0)
			goto out;
	}
	c->queries += n;
	r = perform(c);
	if (r < 0)
		snprintf(c->err, sizeof(c->err), "the HTTP client failed");
	for (int i = 0; !r && i < n; i++)
		r = transfer_result(c, &t[i], &reqs[i].result);
out:
	for (int i = 0; t && i < n; i++) {
		transfer_release(c, &t[i]);
		if (r < 0) {
			json_decref(reqs[i].result);
			reqs[i].result = NULL;
		}
	}
	if (r == -ENOMEM && !c->err[0])
		snprintf(c->err, sizeof(c->err), "out of memory");
	free(t);
	return r;
}
