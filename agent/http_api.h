/* SPDX-License-Identifier: MIT */
#ifndef FABMON_HTTP_API_H
#define FABMON_HTTP_API_H

#include <microhttpd.h>

/*
 * Answers GET url under /api/v1/ from the database at db_path, opened
 * read-only for the request:
 *  - /api/v1/events?start=&end=&kind=&subject=  the events overlapping the
 *    window (default the last 24 h; times as fabmon events takes them):
 *    {"status":"ok","data":[...],"truncated":false};
 *  - /api/v1/events/ID  one event: {"status":"ok","data":{...}}, 404 if none;
 *  - /api/v1/series?match=NAME&label=K=V...  the stored series (all of
 *    them without match), {"metric","labels","type"} each;
 *  - /api/v1/query_range?metric=&label=K=V...&start=&end=&step=&agg=  each
 *    matching series' values a step (fabmon history's), at most max_points
 *    values in all.
 * Errors are JSON, {"status":"error","error":"...","parameter":"..."}: 400
 * for an unknown parameter or a bad value, 404 for another path, 503 when
 * the database cannot be opened. Runs on libmicrohttpd's threads.
 */
enum MHD_Result http_api_serve(struct MHD_Connection *c, const char *url, const char *db_path,
			       unsigned max_points);

#endif
