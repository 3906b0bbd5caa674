/* SPDX-License-Identifier: MIT */
#ifndef FABMON_CLI_PROM_CLIENT_H
#define FABMON_CLI_PROM_CLIENT_H

#include <jansson.h>
#include <stdint.h>

/*
 * A client of Prometheus' HTTP API (/api/v1/query, /api/v1/query_range)
 * over libcurl, with the TLS and basic-auth options an operator gives
 * Prometheus' own clients. A batch of queries runs at once (curl's multi
 * interface), so that a handful of them costs about the slowest, not their
 * sum.
 */

struct prom_options {
	const char *url; /* http(s)://host:port[/prefix] */
	const char *ca_file, *cert_file, *key_file; /* NULL: system CAs, no client cert */
	const char *user, *password; /* basic auth when user is set */
	long timeout_ms; /* a query's bound; 0: 10 s */
};

/* One query of a batch: instant at at_ms (0: now), or over [start_ms,
 * end_ms] at step_ms when step_ms > 0. */
struct prom_request {
	const char *promql;
	int64_t at_ms, start_ms, end_ms, step_ms;
	json_t *result; /* out: data.result (vector or matrix), the caller's */
};

struct prom_client;

/* A client for opts, which it borrows (they must outlive it). NULL when
 * out of memory or libcurl cannot start. */
struct prom_client *prom_client_new(const struct prom_options *opts);
void prom_client_free(struct prom_client *c);

/*
 * Runs the n requests at once and fills each one's result. Returns 0, or
 * the first failure in request order: -EIO (transport or HTTP failure),
 * -EBADMSG (the answer is not Prometheus' JSON), -EINVAL (Prometheus
 * refused the query), -ENOMEM; prom_client_error() says why. On failure
 * no result is kept.
 */
int prom_run(struct prom_client *c, struct prom_request *reqs, int n);

/* Queries this client ran (to show that their number is bounded). */
int prom_client_queries(const struct prom_client *c);

/* Why the last batch failed, for a message. */
const char *prom_client_error(const struct prom_client *c);

#endif
