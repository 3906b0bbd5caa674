/* SPDX-License-Identifier: MIT */
#ifndef FABMON_CLI_PROM_CLIENT_H
#define FABMON_CLI_PROM_CLIENT_H

#include <jansson.h>
#include <stdint.h>

/*
 * A client of Prometheus' HTTP API (/api/v1/query, /api/v1/query_range)
 * over libcurl, with the TLS and basic-auth options an operator gives
 * Prometheus' own clients. One handle, reused for every query (one
 * connection kept alive).
 */

struct prom_options {
	const char *url; /* http(s)://host:port[/prefix] */
	const char *ca_file, *cert_file, *key_file; /* NULL: system CAs, no client cert */
	const char *user, *password; /* basic auth when user is set */
	long timeout_ms; /* a query's bound; 0: 10 s */
};

struct prom_client;

/* A client for opts (strings copied). NULL when out of memory or libcurl
 * cannot start. */
struct prom_client *prom_client_new(const struct prom_options *opts);
void prom_client_free(struct prom_client *c);

/*
 * Runs an instant query at at_ms (0: now). Returns 0 and *ret_result, the
 * response's data.result (a vector: an array of {"metric","value"}; the
 * caller owns it, json_decref), or -EIO (transport or HTTP failure),
 * -EBADMSG (the answer is not Prometheus' JSON), -EINVAL (Prometheus
 * refused the query). prom_client_error() says why.
 */
int prom_query(struct prom_client *c, const char *promql, int64_t at_ms, json_t **ret_result);

/* As prom_query, over [start_ms, end_ms] at step_ms: a matrix (an array of
 * {"metric","values":[[seconds,"value"],...]}). */
int prom_query_range(struct prom_client *c, const char *promql, int64_t start_ms, int64_t end_ms,
		     int64_t step_ms, json_t **ret_result);

/* Queries this client ran (to show that their number is bounded). */
int prom_client_queries(const struct prom_client *c);

/* Why the last query failed, for a message. */
const char *prom_client_error(const struct prom_client *c);

#endif
