/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "agent/http/server.h"
#include "agent/config.h"
#include "agent/http/api.h"
#include "agent/http/auth.h"
#include "agent/http/page.h"
#include "agent/http/pool.h"
#include "agent/http/web_config.h"
#include "agent/lib/clock.h"

/* The request line and the headers we serve: longer is 414 and 431. */
#define HTTP_LINE_MAX (32 * 1024)
#define HTTP_HEADERS_MAX (32 * 1024)
/* Query parameters we parse: the API takes at most 22. */
#define HTTP_PARAMS_MAX 128
/*
 * What one connection may hold: libmicrohttpd keeps the request line and
 * headers in it, and a record of 56 bytes for each parameter and header.
 * Half of it is the first read buffer, so a line within HTTP_LINE_MAX
 * leaves the other half for HTTP_PARAMS_MAX records and the headers'. Past
 * that libmicrohttpd 0.9.75 answers nothing for a line whose parameters do
 * not fit (it sends its 431 only for headers).
 */
#define HTTP_CONNECTION_MEMORY (2 * HTTP_LINE_MAX)

/* A published /metrics body, shared by the scrapes that are sending it. */
struct snapshot {
	atomic_int refs;
	size_t len, cap; /* the text's bytes, and those allocated for it */
	char *text;
};

/* A scrape waits this long for a text being rendered (a tick's render of
 * a thousand mesh peers takes milliseconds), then gets the 503 of an agent
 * with nothing to show. */
#define HTTP_RENDER_WAIT_MS 2000

struct http {
	struct MHD_Daemon *daemon;
	pthread_mutex_t lock;
	struct snapshot *current; /* NULL until the first tick, and while rendering */
	int rendering; /* current's buffer was reclaimed for the next text */
	pthread_cond_t published; /* signalled when rendering ends */
	int64_t published_ms; /* monotonic */
	int64_t stale_ms;
	unsigned port;
	char *db_path; /* NULL: no API */
	unsigned api_max_points;
	int64_t api_timeout_ms;
	struct http_pool *pool; /* API queries; NULL: no API */
	struct http_auth *auth; /* NULL: no web config */
};

/* A request's state (libmicrohttpd's *req), besides NULL before its headers
 * are in: */
static char seen; /* a GET whose headers are in */
static char too_long; /* a request line past HTTP_LINE_MAX or HTTP_PARAMS_MAX */

/* Else an API query, on a pool thread while its connection is suspended,
 * then back with its answer. */
struct api_call {
	struct http_job job; /* first: the pool hands it back */
	struct http *h;
	struct MHD_Connection *c;
	struct http_api_request *req; /* NULL once run */
	int64_t deadline_ms;
	struct http_api_answer ans;
};

static void snapshot_unref(void *cls)
{
	struct snapshot *s = cls;

	if (s && atomic_fetch_sub(&s->refs, 1) == 1) {
		free(s->text);
		free(s);
	}
}

static struct snapshot *snapshot_get(struct http *h, int64_t *ret_published)
{
	struct snapshot *s;
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += HTTP_RENDER_WAIT_MS / 1000;
	pthread_mutex_lock(&h->lock);
	while (h->rendering && pthread_cond_timedwait(&h->published, &h->lock, &until) != ETIMEDOUT)
		;
	s = h->current;
	if (s)
		atomic_fetch_add(&s->refs, 1);
	*ret_published = h->published_ms;
	pthread_mutex_unlock(&h->lock);
	return s;
}

char *http_reclaim(struct http *h, size_t *ret_cap)
{
	struct snapshot *s;
	char *text = NULL;

	pthread_mutex_lock(&h->lock);
	s = h->current;
	/* the one reference left is the server's own: no scrape is sending it */
	if (s && atomic_load(&s->refs) == 1) {
		h->current = NULL;
		h->rendering = 1;
		text = s->text;
		*ret_cap = s->cap;
		free(s);
	}
	pthread_mutex_unlock(&h->lock);
	return text;
}

void http_publish(struct http *h, char *text, size_t len, size_t cap)
{
	struct snapshot *s = text ? malloc(sizeof(*s)) : NULL, *old;

	if (s) {
		atomic_init(&s->refs, 1);
		s->text = text;
		s->len = len;
		s->cap = cap;
	} else {
		free(text);
	}
	pthread_mutex_lock(&h->lock);
	old = h->current;
	if (s) {
		h->current = s;
		h->published_ms = clock_mono_ms();
	}
	h->rendering = 0;
	pthread_cond_broadcast(&h->published);
	pthread_mutex_unlock(&h->lock);
	if (s)
		snapshot_unref(old);
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned status, const char *text)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	(void)MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		(void)MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	if (status == MHD_HTTP_UNAUTHORIZED) /* with WWW-Authenticate: Basic realm= */
		ret = MHD_queue_basic_auth_fail_response(c, "fabmon", r);
	else
		ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result serve_metrics(struct http *h, struct MHD_Connection *c)
{
	struct MHD_Response *r;
	enum MHD_Result ret;
	struct snapshot *s;
	int64_t published;

	s = snapshot_get(h, &published);
	if (!s)
		return reply_text(
			c, MHD_HTTP_SERVICE_UNAVAILABLE,
			published ? "the tick's text is late: its render failed or is slow\n"
				  : "no tick has completed yet\n");
	r = MHD_create_response_from_buffer_with_free_callback_cls(s->len, s->text, snapshot_unref,
								   s);
	if (!r) {
		snapshot_unref(s);
		return MHD_NO;
	}
	/* Prometheus text exposition format 0.0.4 */
	(void)MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				      "text/plain; version=0.0.4; charset=utf-8");
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result serve_healthz(struct http *h, struct MHD_Connection *c)
{
	int64_t published;
	struct snapshot *s = snapshot_get(h, &published);

	snapshot_unref(s);
	if (s && clock_mono_ms() - published > h->stale_ms)
		return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "tick loop stalled\n");
	return reply_text(c, MHD_HTTP_OK, "ok\n");
}

static enum MHD_Result serve_readyz(struct http *h, struct MHD_Connection *c)
{
	int64_t published;
	struct snapshot *s = snapshot_get(h, &published);

	snapshot_unref(s);
	if (!s)
		return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "waiting for the first tick\n");
	return reply_text(c, MHD_HTTP_OK, "ready\n");
}

/* The timeline page (agent/http/page.html), which reads /api/v1/events. */
static enum MHD_Result serve_page(struct http *h, struct MHD_Connection *c)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(web_page_len, (void *)web_page,
								 MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	(void)h;
	if (!r)
		return MHD_NO;
	(void)MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/html; charset=utf-8");
	/* it runs only its own inline script and talks only to this agent */
	(void)MHD_add_response_header(r, "Content-Security-Policy",
				      "default-src 'none'; script-src 'unsafe-inline'; "
				      "style-src 'unsafe-inline'; connect-src 'self'");
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

/* /healthz and /readyz answer without a password: they tell only whether
 * the agent ticks, and a kubelet or load balancer probe cannot easily hold
 * one. Everything else needs one when basic_auth_users are configured. */
static const struct route {
	const char *path;
	enum MHD_Result (*serve)(struct http *h, struct MHD_Connection *c);
	int open;
} routes[] = {
	{ "/", serve_page, 0 },
	{ "/metrics", serve_metrics, 0 },
	{ "/healthz", serve_healthz, 1 },
	{ "/readyz", serve_readyz, 1 },
};

static enum MHD_Result queue_answer(struct MHD_Connection *c, struct http_api_answer *ans)
{
	enum MHD_Result ret;

	if (!ans->response)
		return MHD_NO;
	ret = MHD_queue_response(c, ans->status, ans->response);
	MHD_destroy_response(ans->response);
	ans->response = NULL;
	return ret;
}

static void api_call_run(struct http_job *job, int stopping)
{
	struct api_call *call = (struct api_call *)job;

	if (stopping) {
		http_api_request_free(call->req);
		http_api_busy("the agent is stopping", &call->ans);
	} else {
		http_api_run(call->req, call->h->db_path, call->deadline_ms, &call->ans);
	}
	call->req = NULL;
}

/* The answer is sent from libmicrohttpd's thread, which may free call at
 * once. */
static void api_call_done(struct http_job *job)
{
	MHD_resume_connection(((struct api_call *)job)->c);
}

/* Hands an API request to the pool, suspending its connection until the
 * answer is in; a full pool is a 503 at once. */
static enum MHD_Result serve_api(struct http *h, struct MHD_Connection *c, const char *url,
				 void **state)
{
	struct http_api_answer ans;
	struct api_call *call;
	struct http_api_request *req = http_api_prepare(c, url, h->api_max_points, &ans);

	if (!req)
		return queue_answer(c, &ans);
	call = calloc(1, sizeof(*call));
	if (!call) {
		http_api_request_free(req);
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	}
	*call = (struct api_call){
		.job = { .run = api_call_run, .done = api_call_done }, .h = h, .c = c, .req = req
	};
	/* the wait for a turn counts: the client waits for it too */
	call->deadline_ms = clock_mono_ms() + h->api_timeout_ms;
	*state = call;
	MHD_suspend_connection(c);
	if (http_pool_submit(h->pool, &call->job) < 0) {
		http_api_request_free(call->req);
		call->req = NULL;
		http_api_busy("too many API queries at once: retry later", &call->ans);
		MHD_resume_connection(c);
	}
	return MHD_YES;
}

static enum MHD_Result add_size(void *cls, enum MHD_ValueKind kind, const char *key,
				const char *value)
{
	(void)kind;
	*(size_t *)cls += strlen(key) + (value ? strlen(value) : 0) + 4; /* ": " CRLF */
	return MHD_YES;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **req)
{
	struct http *h = cls;
	const struct route *route = NULL;
	enum http_auth_verdict verdict;
	size_t headers = 0;
	int get = strcmp(method, MHD_HTTP_METHOD_GET) == 0 ||
		  strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;

	(void)version;
	(void)upload;
	if (*req == &too_long)
		return reply_text(c, MHD_HTTP_URI_TOO_LONG,
				  "request line over 32 KiB or 128 parameters\n");
	if (*req && *req != &seen) /* an API query back from the pool */
		return queue_answer(c, &((struct api_call *)*req)->ans);
	if (!*req)
		(void)MHD_get_connection_values(c, MHD_HEADER_KIND, add_size, &headers);
	if (headers > HTTP_HEADERS_MAX) {
		*upload_size = 0;
		return reply_text(c, MHD_HTTP_REQUEST_HEADER_FIELDS_TOO_LARGE,
				  "headers over 32 KiB\n");
	}
	/*
	 * libmicrohttpd 0.9.75 closes the connection after an answer queued at
	 * the first call, when the headers alone are in (keepalive_possible()'s
	 * TODO): a GET is answered at the next call, once the request is
	 * complete, so that scrapers keep their connection (and TLS session).
	 * Anything else is refused at once, its body unread, and closed.
	 */
	if (get && !*req) {
		*req = &seen;
		return MHD_YES;
	}
	if (get && *upload_size) {
		*upload_size = 0; /* a GET's body means nothing here */
		return MHD_YES;
	}
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (strcmp(url, routes[i].path) == 0)
			route = &routes[i];
	verdict = http_auth_request(h->auth, c, !route || !route->open);
	if (verdict != HTTP_AUTH_OK) {
		*upload_size = 0; /* discard any body, as for 405 */
		return verdict == HTTP_AUTH_BAD_CERT
			       ? reply_text(c, MHD_HTTP_FORBIDDEN,
					    "client certificate not verified\n")
			       : reply_text(c, MHD_HTTP_UNAUTHORIZED, "unauthorized\n");
	}
	if (!get) {
		*upload_size = 0; /* discard any body; we answer 405 regardless */
		return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
	}
	if (route)
		return route->serve(h, c);
	if (h->db_path && strncmp(url, "/api/v1/", 8) == 0)
		return serve_api(h, c, url, req);
	return reply_text(c, MHD_HTTP_NOT_FOUND,
			  "not found: try /, /metrics, /healthz, /readyz, /api/v1/events\n");
}

static void request_done(void *cls, struct MHD_Connection *c, void **req,
			 enum MHD_RequestTerminationCode code)
{
	struct api_call *call = *req;

	(void)cls;
	(void)c;
	(void)code;
	if (!call || *req == &seen || *req == &too_long)
		return;
	if (call->ans.response)
		MHD_destroy_response(call->ans.response);
	http_api_request_free(call->req);
	free(call);
}

/*
 * Called with the request line before libmicrohttpd parses its parameters:
 * one past HTTP_LINE_MAX or HTTP_PARAMS_MAX is refused (414), and its
 * parameters are cut off here so that libmicrohttpd 0.9.75 does not run out
 * of the connection's memory parsing them, which leaves the client without
 * an answer. The line is in the connection's own buffer, which libmicrohttpd
 * parses the parameters from right after this call.
 */
static void *check_line(void *cls, const char *uri, struct MHD_Connection *c)
{
	char *query = uri ? (char *)strchr(uri, '?') : NULL; /* NULL: no URI at all */
	size_t params = query ? 1 : 0;

	(void)cls;
	(void)c;
	if (!uri)
		return NULL;
	for (const char *p = query; p && *p; p++)
		params += *p == '&';
	if (strlen(uri) <= HTTP_LINE_MAX && params <= HTTP_PARAMS_MAX)
		return NULL;
	if (query)
		query[1] = '\0';
	return &too_long;
}

/*
 * libmicrohttpd says something for every malformed, oversized or abandoned
 * request: at most HTTP_LOG_BURST lines a minute, so that a client cannot
 * flood the journal.
 */
#define HTTP_LOG_BURST 20

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static int64_t window_ms;
	static unsigned lines, dropped;
	int64_t now = clock_mono_ms();
	unsigned said_dropped = 0;
	int say;

	(void)cls;
	pthread_mutex_lock(&lock);
	if (now - window_ms >= 60000) {
		said_dropped = dropped;
		window_ms = now;
		lines = dropped = 0;
	}
	say = lines++ < HTTP_LOG_BURST;
	if (!say)
		dropped++;
	pthread_mutex_unlock(&lock);
	if (said_dropped)
		fprintf(stderr, "fabmon: http: %u messages left out in the last minute\n",
			said_dropped);
	if (!say)
		return;
	fprintf(stderr, "fabmon: http: ");
	vfprintf(stderr, fmt, ap);
}

static void notify_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			      enum MHD_ConnectionNotificationCode code)
{
	struct http *h = cls;

	(void)socket_context;
	if (code == MHD_CONNECTION_NOTIFY_STARTED)
		http_auth_tls_start(h->auth, c);
}

/*
 * Each connection is a descriptor: lets the soft limit (1024 under most
 * shells and systemd) cover the connection limit, up to the hard limit.
 */
static void raise_nofile(unsigned connections)
{
	rlim_t want = (rlim_t)connections + 256; /* the database, probes, captures */
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
	(void)setrlimit(RLIMIT_NOFILE, &rl);
}

/* Fills opts (room for 16) with the daemon's options; sa may be NULL. */
static void daemon_options(const struct http_options *opt, struct http *h,
			   const struct sockaddr *sa, struct MHD_OptionItem *opts)
{
	const struct web_config *web = opt->web;
	size_t n = 0;

#define OPT(o, v, p) (opts[n++] = (struct MHD_OptionItem){ (o), (intptr_t)(v), (void *)(p) })
	OPT(MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL);
	OPT(MHD_OPTION_CONNECTION_LIMIT, opt->connection_limit, NULL);
	OPT(MHD_OPTION_PER_IP_CONNECTION_LIMIT, opt->per_ip_limit, NULL);
	OPT(MHD_OPTION_CONNECTION_TIMEOUT, opt->timeout_s, NULL);
	OPT(MHD_OPTION_CONNECTION_MEMORY_LIMIT, HTTP_CONNECTION_MEMORY, NULL);
	OPT(MHD_OPTION_THREAD_POOL_SIZE, 2, NULL);
	OPT(MHD_OPTION_URI_LOG_CALLBACK, check_line, NULL);
	OPT(MHD_OPTION_NOTIFY_COMPLETED, request_done, NULL);
	if (sa)
		OPT(MHD_OPTION_SOCK_ADDR, 0, sa);
	if (web && web->tls) {
		OPT(MHD_OPTION_HTTPS_MEM_CERT, 0, web->cert_pem);
		OPT(MHD_OPTION_HTTPS_MEM_KEY, 0, web->key_pem);
		OPT(MHD_OPTION_HTTPS_PRIORITIES, 0, web_config_priorities(web));
		if (web->client_ca_pem)
			OPT(MHD_OPTION_HTTPS_MEM_TRUST, 0, web->client_ca_pem);
		if (web->client_auth != WEB_CLIENT_AUTH_NONE)
			OPT(MHD_OPTION_NOTIFY_CONNECTION, notify_connection, h);
	}
	OPT(MHD_OPTION_END, 0, NULL);
#undef OPT
}

int http_start(const struct http_options *opt, struct http **ret, char *err, size_t err_len)
{
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG |
			 MHD_ALLOW_SUSPEND_RESUME;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST };
	struct addrinfo *ai = NULL;
	const union MHD_DaemonInfo *info;
	struct MHD_OptionItem opts[16];
	pthread_condattr_t ca;
	char host[256];
	unsigned port;
	struct http *h;
	int r;

	if (config_parse_listen(opt->listen, host, sizeof(host), &port) < 0) {
		snprintf(err, err_len, "bad listen address '%s': expected ADDR:PORT", opt->listen);
		return -EINVAL;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	pthread_mutex_init(&h->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&h->published, &ca);
	pthread_condattr_destroy(&ca);
	h->stale_ms = opt->stale_ms;
	h->api_max_points = opt->api_max_points;
	h->api_timeout_ms = opt->api_timeout_ms;
	if (opt->db_path && (!(h->db_path = strdup(opt->db_path)) ||
			     !(h->pool = http_pool_new(opt->api_concurrency)))) {
		r = -ENOMEM;
		snprintf(err, err_len, "out of memory");
		goto fail;
	}
	if (opt->web) {
		if (opt->web->tls && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
			r = -EOPNOTSUPP;
			snprintf(err, err_len, "this libmicrohttpd was built without TLS");
			goto fail;
		}
		if (opt->web->tls)
			flags |= MHD_USE_TLS;
		h->auth = http_auth_new(opt->web);
		if (!h->auth) {
			r = -ENOMEM;
			snprintf(err, err_len, "out of memory");
			goto fail;
		}
	}
	if (host[0]) {
		r = getaddrinfo(host, NULL, &hints, &ai);
		if (r) {
			snprintf(err, err_len, "bad listen address '%s': %s", opt->listen,
				 gai_strerror(r));
			r = -EINVAL;
			goto fail;
		}
		if (ai->ai_family == AF_INET6) {
			flags |= MHD_USE_IPv6;
			((struct sockaddr_in6 *)ai->ai_addr)->sin6_port = htons((uint16_t)port);
		} else {
			((struct sockaddr_in *)ai->ai_addr)->sin_port = htons((uint16_t)port);
		}
	} else {
		flags |= MHD_USE_DUAL_STACK;
	}
	raise_nofile(opt->connection_limit);
	daemon_options(opt, h, ai ? ai->ai_addr : NULL, opts);
	h->daemon = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, handle, h, MHD_OPTION_ARRAY,
				     opts, MHD_OPTION_END);
	if (!h->daemon && !host[0]) {
		/* no IPv6 on this host: all IPv4 addresses */
		flags &= ~(unsigned)MHD_USE_DUAL_STACK;
		h->daemon = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, handle, h,
					     MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
	}
	if (!h->daemon) {
		r = errno ? -errno : -EADDRINUSE;
		snprintf(err, err_len, "unable to listen on '%s': %s", opt->listen, strerror(-r));
		goto fail;
	}
	info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
	h->port = info ? info->port : port;
	freeaddrinfo(ai);
	*ret = h;
	return 0;
fail:
	if (ai)
		freeaddrinfo(ai);
	http_stop(h);
	return r;
}

void http_stop(struct http *h)
{
	if (!h)
		return;
	/* every suspended connection is resumed first, as libmicrohttpd
	 * requires; new API requests are refused meanwhile */
	http_pool_stop(h->pool);
	if (h->daemon)
		MHD_stop_daemon(h->daemon);
	http_pool_free(h->pool);
	snapshot_unref(h->current);
	pthread_cond_destroy(&h->published);
	pthread_mutex_destroy(&h->lock);
	http_auth_free(h->auth);
	free(h->db_path);
	free(h);
}

unsigned http_port(const struct http *h)
{
	return h->port;
}
