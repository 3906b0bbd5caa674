/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the JSON API's query parameters (agent/http/api.c):
 * the bytes are a query string, split at '&' and '=' and %-decoded by
 * libmicrohttpd's own MHD_http_unescape as it decodes a request's, then
 * parsed for /api/v1/events (and /events/ID, the ID from the first
 * parameter's key), /series and /query_range. Whatever the bytes: an answer
 * or an error naming why, and an accepted query_range within its bounds.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "agent/http/api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NOW_MS 1700000000000LL
#define MAX_POINTS 11000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char buf[HISTORY_LABELS_MAX][HISTORY_LABEL_LEN];
	struct http_api_args args = { 0 };
	struct http_api_error e;
	struct events_query eq;
	struct history_query q;
	char *text, rest[80];
	int r;

	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	for (char *save = NULL, *kv = strtok_r(text, "&", &save); kv;
	     kv = strtok_r(NULL, "&", &save)) {
		char *eq_sign = strchr(kv, '=');
		char *value = NULL;

		if (eq_sign) {
			*eq_sign = '\0';
			value = eq_sign + 1;
			MHD_http_unescape(value);
		}
		MHD_http_unescape(kv);
		if (http_api_args_add(&args, kv, value) < 0)
			goto out;
	}

	r = http_api_parse_events("", &args, NOW_MS, &eq, &e);
	if (r < 0 && (r != -EINVAL || !e.why || !e.why[0]))
		abort();
	if (r == 0 && eq.until_ms < eq.since_ms)
		abort();
	snprintf(rest, sizeof(rest), "/%.60s", args.n ? args.arg[0].key : "");
	r = http_api_parse_events(rest, &args, NOW_MS, &eq, &e);
	if (r < 0 && (r != -EINVAL || !e.why || !e.why[0]))
		abort();
	if (r == 0 && eq.id <= 0)
		abort();

	r = http_api_parse_series(&args, &q, buf, &e);
	if (r < 0 && (!e.why || !e.why[0]))
		abort();
	if (r == 0 && (q.nlabels < 0 || q.nlabels > HISTORY_LABELS_MAX))
		abort();

	r = http_api_parse_range(&args, NOW_MS, MAX_POINTS, &q, buf, &e);
	if (r < 0 && (!e.why || !e.why[0]))
		abort();
	if (r == 0 && (!q.metric || !q.metric[0] || q.until_ms < q.since_ms || q.step_ms < 1 ||
		       history_steps(&q) > MAX_POINTS))
		abort();
out:
	http_api_args_release(&args);
	free(text);
	return 0;
}
