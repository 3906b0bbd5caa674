/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "agent/http/server.h"
#include "agent/store/store.h"
#include "suites.h"
#include "testutil.h"

/* A minimal HTTP/1.0 client over loopback: sends req, returns the whole
 * response (caller frees). */
static char *http_do(unsigned port, const char *req)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap);
	ssize_t n;
	int fd;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	/* an answer that does not come in this long is none: the test says
	 * what it got rather than hang */
	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval){ 3, 0 },
				    sizeof(struct timeval)),
			 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
		len += (size_t)n;
		if (len + 1 == cap)
			buf = realloc(buf, cap *= 2);
	}
	buf[len] = '\0';
	close(fd);
	return buf;
}

/* A server on a free loopback port; with db, the API too, its queries one
 * at a time (one more waits its turn). */
static struct http *start_api(const char *db)
{
	struct http_options opt = { .listen = "127.0.0.1:0",
				    .connection_limit = 64,
				    .per_ip_limit = 32,
				    .timeout_s = 5,
				    .stale_ms = 30000,
				    .db_path = db,
				    .api_max_points = 1000,
				    .api_timeout_ms = 10000,
				    .api_concurrency = 1 };
	struct http *h = NULL;
	char err[256];

	ck_assert_msg(http_start(&opt, &h, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_gt(http_port(h), 0);
	return h;
}

static struct http *start(void)
{
	return start_api(NULL);
}

static void expect(unsigned port, const char *req, const char *status, const char *body)
{
	char *resp = http_do(port, req);

	/* MHD answers HTTP/1.1 whatever the request's version */
	ck_assert_msg(strncmp(resp, "HTTP/1.1 ", 9) == 0 && strncmp(resp + 9, status, 3) == 0,
		      "%.200s -> %s", req, resp);
	if (body)
		ck_assert_msg(strstr(resp, body), "%.200s -> %s", req, resp);
	free(resp);
}

START_TEST(test_routes)
{
	struct http *h = start();
	unsigned p = http_port(h);

	expect(p, "GET /metrics HTTP/1.0\r\n\r\n", "503", "no tick");
	expect(p, "GET /readyz HTTP/1.0\r\n\r\n", "503", NULL);
	expect(p, "GET /healthz HTTP/1.0\r\n\r\n", "200", "ok");
	http_publish(h, strdup("fabmon_x 1\n"), 11, 12);
	expect(p, "GET /metrics HTTP/1.0\r\n\r\n", "200", "\r\n\r\nfabmon_x 1\n");
	expect(p, "GET /metrics HTTP/1.0\r\n\r\n", "200", "version=0.0.4");
	expect(p, "GET /readyz HTTP/1.0\r\n\r\n", "200", "ready");
	expect(p, "GET /nope HTTP/1.0\r\n\r\n", "404", NULL);
	expect(p, "POST /metrics HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc", "405",
	       "Allow: GET, HEAD");
	expect(p, "DELETE /metrics HTTP/1.0\r\n\r\n", "405", NULL);
	http_stop(h);
}
END_TEST

START_TEST(test_head)
{
	struct http *h = start();
	char *resp;

	http_publish(h, strdup("fabmon_x 1\n"), 11, 12);
	resp = http_do(http_port(h), "HEAD /metrics HTTP/1.0\r\n\r\n");
	ck_assert_msg(strncmp(resp, "HTTP/1.1 200", 12) == 0, "%s", resp);
	ck_assert_msg(strstr(resp, "Content-Length: 11"), "%s", resp);
	ck_assert_msg(!strstr(resp, "fabmon_x"), "HEAD sent a body: %s", resp);
	free(resp);
	http_stop(h);
}
END_TEST

struct scrape_arg {
	unsigned port;
	int ok;
};

static void *scrape(void *p)
{
	struct scrape_arg *a = p;
	char *resp = http_do(a->port, "GET /metrics HTTP/1.0\r\n\r\n");

	a->ok = strncmp(resp, "HTTP/1.1 200", 12) == 0 && strstr(resp, "fabmon_big_") != NULL;
	free(resp);
	return NULL;
}

START_TEST(test_concurrent)
{
	struct http *h = start();
	struct scrape_arg args[20];
	pthread_t th[20];
	struct strbuf sb;
	size_t len;
	char *text;

	strbuf_init(&sb);
	for (int i = 0; i < 10000; i++)
		strbuf_addf(&sb, "fabmon_big_%d{interface=\"eth%d\"} %d\n", i % 50, i, i);
	text = strbuf_detach(&sb, &len);
	http_publish(h, text, len, len + 1);
	for (int i = 0; i < 20; i++) {
		args[i].port = http_port(h);
		ck_assert_int_eq(pthread_create(&th[i], NULL, scrape, &args[i]), 0);
	}
	/* swap the snapshot while scrapes are in flight: old bodies stay valid */
	http_publish(h, strdup("fabmon_big_0 1\n"), 15, 16);
	for (int i = 0; i < 20; i++) {
		pthread_join(th[i], NULL);
		ck_assert_msg(args[i].ok, "scrape %d failed", i);
	}
	http_stop(h);
}
END_TEST

/* A request line of many parameters, well under the 32 KiB bound, is
 * answered; so is one of 32 KiB of them (414), and the server serves on. */
START_TEST(test_many_params)
{
	struct http *h = start();
	unsigned p = http_port(h);
	struct strbuf sb;

	http_publish(h, strdup("fabmon_x 1\n"), 11, 12);
	strbuf_init(&sb);
	strbuf_addstr(&sb, "GET /metrics?");
	for (int i = 0; i < 480; i++)
		strbuf_addf(&sb, "p%d=v&", i);
	strbuf_addstr(&sb, " HTTP/1.0\r\n\r\n");
	expect(p, sb.buf, "414", "parameters");
	strbuf_reset(&sb);
	strbuf_addstr(&sb, "GET /metrics?");
	for (int i = 0; i < 16000; i++)
		strbuf_addstr(&sb, "a&");
	strbuf_addstr(&sb, " HTTP/1.0\r\n\r\n");
	expect(p, sb.buf, "414", NULL);
	strbuf_release(&sb);
	expect(p, "GET /metrics?a=1&b=2 HTTP/1.0\r\n\r\n", "200", "fabmon_x 1");
	http_stop(h);
}
END_TEST

struct api_arg {
	unsigned port;
	const char *path;
	char *resp;
};

static void *api_get(void *p)
{
	struct api_arg *a = p;
	char req[256];

	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\n\r\n", a->path);
	a->resp = http_do(a->port, req);
	return NULL;
}

/*
 * With the API's one worker busy and one query waiting (a writer holding
 * the database locked keeps them so), a third query is a 503 with
 * Retry-After at once, and /metrics and /healthz answer at once; once the
 * lock is gone the two are answered.
 */
START_TEST(test_api_busy)
{
	char path[64] = "/tmp/fabmon-http-XXXXXX", err[256];
	struct api_arg arg[2];
	struct store *st = NULL;
	pthread_t th[2];
	struct http *h;
	sqlite3 *lock;
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	close(fd);
	unlink(path);
	ck_assert_msg(store_open(path, STORE_READ_WRITE, &st, err, sizeof(err)) == 0, "%s", err);
	store_close(st);
	/* in WAL mode only an exclusive lock keeps readers out */
	ck_assert_int_eq(sqlite3_open(path, &lock), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(lock,
				      "PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; "
				      "SELECT count(*) FROM series",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	h = start_api(path);
	http_publish(h, strdup("fabmon_x 1\n"), 11, 12);
	for (int i = 0; i < 2; i++) {
		arg[i] = (struct api_arg){ http_port(h), "/api/v1/events", NULL };
		ck_assert_int_eq(pthread_create(&th[i], NULL, api_get, &arg[i]), 0);
	}
	sleep(1); /* both handed over: one runs, one waits */
	expect(http_port(h), "GET /api/v1/series HTTP/1.0\r\n\r\n", "503", "Retry-After: 1");
	expect(http_port(h), "GET /metrics HTTP/1.0\r\n\r\n", "200", "fabmon_x 1");
	expect(http_port(h), "GET /healthz HTTP/1.0\r\n\r\n", "200", "ok");
	sqlite3_close(lock);
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		ck_assert_msg(strncmp(arg[i].resp, "HTTP/1.1 200", 12) == 0 &&
				      strstr(arg[i].resp, "\"status\":\"ok\""),
			      "%s", arg[i].resp);
		free(arg[i].resp);
	}
	http_stop(h);
	testutil_remove_db(path);
}
END_TEST

struct late_arg {
	unsigned port;
	char *resp;
};

static void *scrape_late(void *p)
{
	struct late_arg *a = p;

	a->resp = http_do(a->port, "GET /metrics HTTP/1.0\r\n\r\n");
	return NULL;
}

/* The published text's buffer comes back for the next render when no
 * scrape is sending it; a scrape meanwhile waits for the next text, and one
 * still sending the last keeps it (no buffer back). */
START_TEST(test_reclaim)
{
	struct http *h = start();
	unsigned p = http_port(h);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)p) };
	const char *req = "GET /metrics HTTP/1.0\r\n\r\n";
	struct late_arg late = { .port = p };
	size_t cap = 0, big = 8 << 20;
	char *buf, *text, c;
	pthread_t th;
	int fd;

	ck_assert_ptr_null(http_reclaim(h, &cap));
	text = strdup("fabmon_x 1\n");
	http_publish(h, text, 11, 12);
	buf = http_reclaim(h, &cap);
	ck_assert_ptr_eq(buf, text);
	ck_assert_uint_eq(cap, 12);
	ck_assert_int_eq(pthread_create(&th, NULL, scrape_late, &late), 0);
	usleep(200 * 1000);
	memcpy(buf, "fabmon_x 2\n", 12);
	http_publish(h, buf, 11, cap);
	pthread_join(th, NULL);
	ck_assert_msg(strstr(late.resp, "\r\n\r\nfabmon_x 2\n"), "%s", late.resp);
	free(late.resp);

	/* a failed render publishes nothing: 503 at once, not a wait */
	ck_assert_ptr_nonnull(buf = http_reclaim(h, &cap));
	free(buf);
	http_publish(h, NULL, 0, 0);
	expect(p, "GET /metrics HTTP/1.0\r\n\r\n", "503", "late");

	/* a body larger than the socket buffers, its scrape reading nothing
	 * past the first byte: its server holds the text */
	text = malloc(big);
	memset(text, 'x', big - 2);
	memcpy(text + big - 2, "\n", 2);
	http_publish(h, text, big - 1, big);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	ck_assert_int_eq(read(fd, &c, 1), 1);
	ck_assert_ptr_null(http_reclaim(h, &cap));
	close(fd);
	http_stop(h);
}
END_TEST

START_TEST(test_bad_listen)
{
	struct http_options opt = { .listen = "nonsense",
				    .connection_limit = 4,
				    .per_ip_limit = 4,
				    .timeout_s = 5,
				    .stale_ms = 1000 };
	struct http *h = NULL, *h2 = NULL;
	char err[256], addr[64];

	ck_assert_int_lt(http_start(&opt, &h, err, sizeof(err)), 0);
	ck_assert(strstr(err, "bad listen address 'nonsense'"));
	h = start();
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", http_port(h));
	opt.listen = addr;
	ck_assert_int_lt(http_start(&opt, &h2, err, sizeof(err)), 0);
	ck_assert_msg(strstr(err, "unable to listen on"), "%s", err);
	http_stop(h);
}
END_TEST

Suite *http_suite(void)
{
	const struct testutil_case cases[] = {
		{ "routes", test_routes, 0 },
		{ "head", test_head, 0 },
		{ "concurrent", test_concurrent, 30 },
		{ "the text's buffer back for the next render", test_reclaim, 30 },
		{ "bad_listen", test_bad_listen, 0 },
		{ "a request line of many parameters", test_many_params, 0 },
		{ "API full: 503, scrapes still answered", test_api_busy, 30 },
	};

	return TESTUTIL_SUITE("http", cases);
}
