/* SPDX-License-Identifier: MIT */
#ifndef FABMON_HTTP_H
#define FABMON_HTTP_H

#include <stddef.h>
#include <stdint.h>

/*
 * The HTTP side: libmicrohttpd with its own polling threads (epoll). It
 * serves the last published snapshot of /metrics, so a scrape never waits
 * for a collector, plus /healthz and /readyz, and the JSON API under
 * /api/v1/ (agent/http/api.h), whose queries run on threads of their own
 * (agent/http/pool.h) so that a scrape never waits for one either: at most
 * api_concurrency at once, as many more waiting, the rest answered 503 with
 * Retry-After; each answered within api_timeout or with a 503. GET and HEAD
 * only (405 otherwise), 404 for unknown paths; a request line over 32 KiB
 * or with over 128 query parameters is 414, headers over 32 KiB 431. With a web config (agent/http/web_config.h) it serves HTTPS only, checks
 * client certificates as the config says, and asks every path but /healthz
 * and /readyz for basic authentication (agent/http/auth.h).
 */

struct http;
struct web_config;

struct http_options {
	const char *listen; /* "ADDR:PORT", "[V6]:PORT" or ":PORT" */
	unsigned connection_limit;
	unsigned per_ip_limit;
	unsigned timeout_s;
	int64_t stale_ms; /* /healthz fails if no tick was published for this long */
	const char *db_path; /* the database /api/v1/ reads (read-only); NULL: no API */
	unsigned api_max_points; /* bound on one query_range answer */
	int64_t api_timeout_ms; /* a query's answer in this long, or a 503 */
	unsigned api_concurrency; /* queries run at once; as many more wait */
	const struct web_config *web; /* TLS and users; NULL: plain HTTP, open */
};

/* Starts serving. Returns 0 and sets *ret, or -errno with a message in err.
 * opt->web must outlive the server: libmicrohttpd keeps pointers into it. */
int http_start(const struct http_options *opt, struct http **ret, char *err, size_t err_len);

/* Stops the server, once the running queries are answered, and frees the
 * last snapshot. Accepts NULL. */
void http_stop(struct http *h);

/*
 * Publishes a new /metrics body, taking ownership of text (malloc'd, cap
 * bytes). The old one is freed once the last scrape that holds it is done.
 * Marks the agent ready (/readyz 200) and alive (/healthz) as of now. A
 * NULL text publishes nothing: it ends a render that failed after
 * http_reclaim(), and scrapes get a 503 until the next text.
 */
void http_publish(struct http *h, char *text, size_t len, size_t cap);

/*
 * The published body's buffer back for the next render, if no scrape is
 * sending it (NULL, and *ret_cap untouched, otherwise): a thousand mesh
 * peers' text is 1.8 MB, and a render beside the published text held twice
 * that. Until the next http_publish(), scrapes wait for it (2 s at most).
 */
char *http_reclaim(struct http *h, size_t *ret_cap);

/* The port actually bound (useful with port 0 in tests). */
unsigned http_port(const struct http *h);

#endif
