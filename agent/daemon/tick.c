/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "agent/daemon/tick.h"
#include "agent/daemon/collector_set.h"
#include "agent/daemon/pipeline.h"
#include "agent/daemon/privilege.h"
#include "agent/daemon/reload.h"
#include "agent/detect/events.h"
#include "agent/http/exposition.h"
#include "agent/http/server.h"
#include "agent/http/web_config.h"
#include "agent/lib/clock.h"
#include "agent/lib/log.h"
#include "agent/registry/registry.h"
#include "agent/store/store.h"
#include "collector/bpf/tc_lock.h"

/* Retention deletes at most this many old rows of each kind per tick (1000
 * series close about 4 blocks a tick), so catching up after downtime is
 * spread out and a tick never stalls on it. */
#define PRUNE_ROWS_PER_TICK 16
/* Past the size cap, rows deleted per tick: more than one tick adds. */
#define CAP_ROWS_PER_TICK 16
/* Events are few: a week of a busy fabric's goes in minutes at this pace. */
#define PRUNE_EVENTS_PER_TICK 16

struct agent {
	struct config cfg;
	struct reload *reload; /* reads the config for SIGHUP */
	int sigfd; /* SIGTERM, SIGINT and SIGHUP, blocked, read here */
	struct collector_set set;
	struct bpf_tc_lock *tc_lock; /* held once the tc probe attaches */
	struct pipeline pipe; /* registry, detectors, events */
	struct store *store;
	struct http *http;
	struct web_config *web; /* NULL: none; held as long as http */
	size_t text_len; /* of the last /metrics text */
	char host[256];
	double start_s;
	uint64_t ticks;
	uint64_t store_errors;
	int capping; /* the database is over db_cap_mb */
	int store_ok;
	char store_refused[512]; /* why the path is not written, said once */
	int64_t store_last_ms;
	double store_duration_s;
	double tick_duration_s;
	uint64_t corrupt_logged[STORE_CORRUPT_KINDS]; /* said in the log so far */
	/* corrupt records of the database files closed since start (a file
	 * replaced under the agent): the counter goes on from them */
	uint64_t corrupt_closed[STORE_CORRUPT_KINDS];
};

#define GAUGE(n, h)                                                                                \
	{                                                                                          \
		.name = n, .help = h, .type = METRIC_GAUGE                                         \
	}
#define COUNTER(n, h)                                                                              \
	{                                                                                          \
		.name = n, .help = h, .type = METRIC_COUNTER                                       \
	}

static const struct metric_desc desc_info =
	GAUGE("fabmon_agent_info", "Always 1; labels name the fabmon version and the host.");
static const struct metric_desc desc_start =
	GAUGE("fabmon_agent_start_time_seconds", "When the agent started, in Unix seconds.");
static const struct metric_desc desc_ticks =
	COUNTER("fabmon_ticks_total", "Ticks the agent has run.");
static const struct metric_desc desc_tick_duration = GAUGE(
	"fabmon_tick_duration_seconds", "Time the previous tick took: collect, store and render.");
static const struct metric_desc desc_interval =
	GAUGE("fabmon_tick_interval_seconds", "The configured tick interval.");
static const struct metric_desc desc_series =
	GAUGE("fabmon_registry_series", "Series the registry holds.");
static const struct metric_desc desc_dropped =
	COUNTER("fabmon_registry_dropped_samples_total",
		"Samples dropped because the registry held max_series series.");
static const struct metric_desc desc_store_up =
	GAUGE("fabmon_store_up", "1 if the last tick was written to the database, 0 if not.");
static const struct metric_desc desc_store_errors =
	COUNTER("fabmon_store_errors_total", "Ticks that could not be written to the database.");
static const struct metric_desc desc_store_duration =
	GAUGE("fabmon_store_write_duration_seconds", "Time the last database write took.");
static const struct metric_desc desc_store_corrupt =
	COUNTER("fabmon_store_corrupt_records_total",
		"Records read back from the database that were corrupt, skipped.");
static const struct metric_desc desc_store_last =
	GAUGE("fabmon_store_last_tick_timestamp_seconds",
	      "Time of the newest tick committed to the database, in Unix seconds.");

static void agent_self_metrics(struct agent *a)
{
	struct sample_sink *out = registry_sink(a->pipe.reg, "agent");
	struct label info[] = { { "version", FABMON_VERSION }, { "host", a->host } };

	(void)sample_gauge(out, &desc_info, info, 2, 1);
	(void)sample_gauge(out, &desc_start, NULL, 0, a->start_s);
	(void)sample_counter(out, &desc_ticks, NULL, 0, a->ticks);
	(void)sample_gauge(out, &desc_tick_duration, NULL, 0, a->tick_duration_s);
	(void)sample_gauge(out, &desc_interval, NULL, 0, (double)a->cfg.interval_ms / 1000.0);
	(void)sample_gauge(out, &desc_series, NULL, 0, registry_count(a->pipe.reg));
	(void)sample_counter(out, &desc_dropped, NULL, 0, registry_dropped(a->pipe.reg));
}

/* Corrupt records of kind k skipped since start, in every file held. */
static uint64_t agent_corrupt_total(const struct agent *a, int k)
{
	return a->corrupt_closed[k] +
	       (a->store ? store_corrupt_records(a->store, (enum store_corrupt_kind)k) : 0);
}

/* After the commit, so that a scrape shows what the database holds. */
static void agent_store_metrics(struct agent *a)
{
	struct sample_sink *out = registry_sink(a->pipe.reg, "agent");

	(void)sample_gauge(out, &desc_store_up, NULL, 0, a->store_ok);
	(void)sample_counter(out, &desc_store_errors, NULL, 0, a->store_errors);
	(void)sample_gauge(out, &desc_store_duration, NULL, 0, a->store_duration_s);
	(void)sample_gauge(out, &desc_store_last, NULL, 0, (double)a->store_last_ms / 1000.0);
	for (int k = 0; k < STORE_CORRUPT_KINDS; k++) {
		struct label l = { "kind", store_corrupt_kind_names[k] };

		(void)sample_counter(out, &desc_store_corrupt, &l, 1, agent_corrupt_total(a, k));
	}
}

/* Corrupt records the store skipped, said once when it finds them (when it
 * resumes from the file, at start or after a failed tick). */
static void agent_log_corrupt(struct agent *a)
{
	for (int k = 0; k < STORE_CORRUPT_KINDS; k++) {
		uint64_t n = agent_corrupt_total(a, k);

		if (n > a->corrupt_logged[k])
			log_warnx(
				"store: skipped %llu corrupt %s record(s) in '%s', never trusted: "
				"see fabmon_store_corrupt_records_total",
				(unsigned long long)(n - a->corrupt_logged[k]),
				store_corrupt_kind_names[k], a->cfg.db_path);
		a->corrupt_logged[k] = n;
	}
}

/*
 * Keeps the database under db_cap_mb: past it, the oldest packed samples go
 * first, then the oldest rollups, until it is under again (up to
 * CAP_ROWS_PER_TICK rows a tick: faster than one tick adds), whatever their
 * age.
 * Said once when it starts, and once when the file is back under 90 % of
 * the cap.
 */
static void agent_cap(struct agent *a)
{
	int64_t cap = (int64_t)a->cfg.db_cap_mb << 20, used;

	if (!cap || (used = store_used_bytes(a->store)) < 0)
		return;
	if (used <= cap) {
		/* at the cap the file hovers just under it: over again only
		 * once it has room to spare, or the log would say so every few
		 * ticks */
		if (a->capping && used < cap / 10 * 9) {
			log_info("store: under its %u MiB cap again", a->cfg.db_cap_mb);
			a->capping = 0;
		}
		return;
	}
	if (!a->capping)
		log_warnx("store: '%s' reached its %u MiB cap (db_cap_mb): dropping the oldest "
			  "samples first",
			  a->cfg.db_path, a->cfg.db_cap_mb);
	a->capping = 1;
	/* one row at a time, no more than it takes: the history kept is all
	 * the cap allows */
	for (int i = 0; i < CAP_ROWS_PER_TICK && used > cap; i++)
		if (store_shed(a->store, 1) <= 0 || (used = store_used_bytes(a->store)) < 0)
			break;
}

/*
 * Writing to a file that was deleted or replaced under the agent would lose
 * every tick with it: each tick checks (a stat) that the path still names
 * the file held. The tick that finds it does not closes that file and
 * counts as not written; from the next one the path is opened as at start:
 * nothing there, a new database; a fabmon database, written on; anything
 * else (or one that another fabmon writes, or of a newer schema) refused,
 * left untouched, and tried again every tick, with fabmon_store_up 0. Each
 * change is said once. Returns 0 while a database is held, or -errno.
 */
static int agent_store_follow(struct agent *a)
{
	char err[512];
	int r = a->store ? store_check_path(a->store, err, sizeof(err)) : 0;
	int absent;

	if (a->store && r == 0)
		return 0;
	if (a->store) {
		log_error(0, "store: %s; opening '%s' again as at start", err, a->cfg.db_path);
		for (int k = 0; k < STORE_CORRUPT_KINDS; k++)
			a->corrupt_closed[k] +=
				store_corrupt_records(a->store, (enum store_corrupt_kind)k);
		store_close(a->store);
		a->store = NULL;
		/* ids of rows in the file closed */
		registry_forget_store_ids(a->pipe.reg);
		events_forget_store_ids(a->pipe.events);
		a->store_refused[0] = '\0';
		return r;
	}
	absent = access(a->cfg.db_path, F_OK) < 0;
	r = store_open(a->cfg.db_path, STORE_READ_WRITE, &a->store, err, sizeof(err));
	if (r < 0) {
		if (strcmp(err, a->store_refused) != 0)
			log_error(0, "store: %s; tried again every tick", err);
		snprintf(a->store_refused, sizeof(a->store_refused), "%s", err);
		return r;
	}
	log_warnx("store: %s '%s'",
		  absent ? "started a new database at" : "now writing the database at",
		  a->cfg.db_path);
	a->store_refused[0] = '\0';
	return 0;
}

static void agent_store(struct agent *a, double collect_s)
{
	char err[512];
	double t0 = clock_mono_s();
	int r = agent_store_follow(a);

	if (r == 0)
		r = pipeline_store_tick(&a->pipe, a->store, collect_s, err, sizeof(err));
	a->store_duration_s = clock_mono_s() - t0;
	agent_log_corrupt(a);
	if (r < 0) {
		a->store_errors++;
		/* once per outage, not once per tick; a path with no database
		 * held was said by agent_store_follow */
		if (a->store_ok && a->store)
			log_error(0, "store: %s (%s); /metrics still served, retrying every tick",
				  err, strerror(-r));
		a->store_ok = 0;
		return;
	}
	if (!a->store_ok)
		log_info("store: writing again to '%s'", a->cfg.db_path);
	a->store_ok = 1;
	a->store_last_ms = registry_now(a->pipe.reg);
	(void)store_prune(a->store, a->store_last_ms - a->cfg.retention_ms, PRUNE_ROWS_PER_TICK);
	(void)store_prune_rollups(a->store, a->store_last_ms - a->cfg.rollup_retention_ms,
				  PRUNE_ROWS_PER_TICK);
	(void)store_prune_events(a->store, a->store_last_ms - a->cfg.event_retention_ms,
				 PRUNE_EVENTS_PER_TICK);
	agent_cap(a);
}

/* Logs an event once on open and once on close (its row is written by then). */
static void agent_event_changed(struct event *e, void *arg)
{
	(void)arg;
	if (e->changes & EVENT_OPENED)
		log_warnx("event %s opened: %s, score %.2f, %s", event_kind_name(e->kind),
			  e->subject, e->peak, e->evidence);
	if (e->changes & EVENT_CLOSED)
		log_info("event %s closed: %s after %.1f s, peak score %.2f",
			 event_kind_name(e->kind), e->subject,
			 (double)(e->end_ms - e->start_ms) / 1000.0, e->peak);
}

/* A source that was absent at start (a driver loaded later) is picked up. */
static void agent_retry_collectors(struct agent *a)
{
	if (collector_set_retry(&a->set, clock_mono_s(),
				(double)a->cfg.collector_retry_ms / 1000.0) == 0)
		return;
	for (unsigned i = 0; i < a->set.n; i++) {
		struct collector_slot *s = &a->set.slots[i];

		if (s->just_available)
			log_info("collector %s available now%s%s", s->ops->name,
				 s->why[0] ? ": " : "", s->why);
	}
}

/* Said once, when a sample finds it: a probe someone took away, or put back. */
static void agent_log_news(const struct collector_set *set)
{
	for (unsigned i = 0; i < set->n; i++)
		if (set->slots[i].news[0])
			log_warnx("collector %s: %s", set->slots[i].ops->name, set->slots[i].news);
}

static void agent_tick(struct agent *a)
{
	double t0 = clock_mono_s(), collect_s;
	struct strbuf text;
	size_t len, cap;
	char *buf;
	int r;

	a->ticks++;
	agent_retry_collectors(a);
	pipeline_begin(&a->pipe, clock_wall_ms());
	collector_set_sample(&a->set, a->pipe.reg);
	agent_log_news(&a->set);
	pipeline_detect(&a->pipe, "agent");
	agent_self_metrics(a);
	pipeline_end(&a->pipe);
	collect_s = clock_mono_s() - t0;
	agent_store(a, collect_s);
	/* a failed write is tried again at the event's next change */
	pipeline_store_events(&a->pipe, a->store_ok ? a->store : NULL, agent_event_changed, NULL);
	agent_store_metrics(a);
	/* rendered into the buffer the HTTP side will own: the last text's
	 * own when no scrape is sending it, else one sized as it. A reserve
	 * that fails marks text failed, so the render fails and the last
	 * published text stays (or, reclaimed, none until the next tick) */
	strbuf_init(&text);
	if ((buf = http_reclaim(a->http, &cap)))
		strbuf_attach(&text, buf, cap);
	else
		strbuf_reserve(&text, a->text_len);
	r = exposition_render(a->pipe.reg, &text);
	cap = text.alloc;
	len = 0;
	buf = r == 0 ? strbuf_detach(&text, &len) : NULL;
	if (buf)
		a->text_len = len;
	http_publish(a->http, buf, len, cap);
	strbuf_release(&text);
	a->tick_duration_s = clock_mono_s() - t0;
}

static void agent_log_collectors(const struct agent *a)
{
	if (a->cfg.host_collectors_off)
		log_info("%s", CONFIG_HOST_COLLECTORS_OFF);
	if (a->cfg.mesh_unlisted)
		log_warnx("%s", CONFIG_MESH_UNLISTED);
	for (unsigned i = 0; i < a->set.n; i++) {
		const struct collector_slot *s = &a->set.slots[i];

		if (!s->available)
			log_warnx("collector %s unavailable: %s", s->ops->name, s->why);
		else if (s->why[0])
			log_info("collector %s: %s", s->ops->name, s->why);
	}
}

/* Applies the config the reload thread read, if it has one ready. */
static void agent_reload(struct agent *a)
{
	struct config cfg;
	char err[1024];
	int r = reload_take(a->reload, &cfg, err, sizeof(err));

	if (r == 0)
		return;
	if (r < 0) {
		log_error(0, "reload: %s; keeping the running configuration", err);
		return;
	}
	if (strcmp(cfg.listen, a->cfg.listen) != 0 || strcmp(cfg.db_path, a->cfg.db_path) != 0 ||
	    cfg.max_series != a->cfg.max_series || strcmp(cfg.user, a->cfg.user) != 0)
		log_warnx("reload: listen, db, max_series, user take effect at the next restart");
	snprintf(cfg.listen, sizeof(cfg.listen), "%s", a->cfg.listen);
	snprintf(cfg.db_path, sizeof(cfg.db_path), "%s", a->cfg.db_path);
	snprintf(cfg.user, sizeof(cfg.user), "%s", a->cfg.user);
	cfg.max_series = a->cfg.max_series;
	/* read at start only: its key is often root's alone, and the agent
	 * may run as its own user by now */
	if (cfg.web_config_file[0] || a->cfg.web_config_file[0])
		log_warnx("reload: the web config ('%s') is read at start only: restart to apply "
			  "changes to it",
			  a->cfg.web_config_file[0] ? a->cfg.web_config_file : cfg.web_config_file);
	snprintf(cfg.web_config_file, sizeof(cfg.web_config_file), "%s", a->cfg.web_config_file);
	collector_set_release(&a->set);
	a->cfg = cfg;
	detect_configure(a->pipe.detect, &a->cfg);
	(void)collector_set_init(&a->set, &a->cfg, 0, a->tc_lock);
	agent_log_collectors(a);
	log_info("configuration reloaded from '%s'", a->cfg.config_path);
}

/*
 * Waits until the next tick is due, a signal arrives or the reload thread
 * has a result. Signals stay blocked in every thread and are read from
 * sigfd here, between ticks, so a SIGTERM that comes during a tick lets
 * that tick finish and commit. Returns the signal, or 0.
 */
static int agent_wait(int sigfd, int reload_fd, double deadline_s)
{
	struct pollfd fds[2] = { { .fd = sigfd, .events = POLLIN },
				 { .fd = reload_fd, .events = POLLIN } };
	double left = deadline_s - clock_mono_s();
	struct signalfd_siginfo info;
	struct timespec ts;

	if (left <= 0) {
		ts.tv_sec = 0;
		ts.tv_nsec = 0;
	} else {
		ts.tv_sec = (time_t)left;
		ts.tv_nsec = (long)((left - (double)ts.tv_sec) * 1e9);
	}
	if (ppoll(fds, 2, &ts, NULL) <= 0 || !(fds[0].revents & POLLIN) ||
	    read(sigfd, &info, sizeof(info)) != sizeof(info))
		return 0;
	return (int)info.ssi_signo;
}

/*
 * Resolves the configured user before anything is opened. Returns 1 if the
 * agent is to switch to it once set up (a root start), 0 if it runs as it
 * is (no user, or already that user), or -errno after logging why.
 */
static int agent_user(const struct config *cfg, struct privilege_user *ret_user)
{
	int r;

	if (!cfg->user[0])
		return 0;
	r = privilege_lookup(cfg->user, ret_user);
	if (r < 0) {
		log_error(r == -ENOENT ? 0 : r, "user '%s' (user): %s", cfg->user,
			  r == -ENOENT ? "no such user" : "unable to look it up");
		return r;
	}
	if (ret_user->uid == geteuid())
		return 0;
	if (geteuid() != 0) {
		log_error(0, "user '%s' (user): switching users needs root (running as uid %u)",
			  cfg->user, (unsigned)geteuid());
		return -EPERM;
	}
	return 1;
}

/*
 * Becomes the configured user once the probes, the sockets and the database
 * are open: the database files go to the user first, so that it writes them
 * on. Said once. Returns 0 or -errno after logging why.
 */
static int agent_drop(struct agent *a, const struct privilege_user *user)
{
	char files[3][PATH_MAX + 8], err[PATH_MAX + 256], caps[256];
	const char *paths[3] = { files[0], files[1], files[2] };
	int r;

	snprintf(files[0], sizeof(files[0]), "%s", a->cfg.db_path);
	snprintf(files[1], sizeof(files[1]), "%s-wal", a->cfg.db_path);
	snprintf(files[2], sizeof(files[2]), "%s-shm", a->cfg.db_path);
	r = privilege_chown(user, paths, 3, err, sizeof(err));
	if (r == 0)
		r = privilege_drop(user, a->cfg.collectors, err, sizeof(err));
	if (r < 0) {
		log_error(r, "%s", err);
		return r;
	}
	privilege_describe(caps, sizeof(caps));
	log_info("running as user '%s' (uid %u, gid %u), capabilities: %s", user->name,
		 (unsigned)user->uid, (unsigned)user->gid, caps);
	return 0;
}

static void agent_release(struct agent *a)
{
	collector_set_release(&a->set);
	/* after the probes are detached: the next agent finds nothing of ours */
	bpf_tc_lock_free(a->tc_lock);
	http_stop(a->http);
	web_config_free(a->web);
	store_close(a->store);
	pipeline_release(&a->pipe);
	/* last: a config read that blocks holds up the exit, never the
	 * commit */
	reload_free(a->reload);
	if (a->sigfd >= 0)
		close(a->sigfd);
}

int agent_run(const struct config_source *src, const struct config *cfg)
{
	struct agent a = { .cfg = *cfg, .store_ok = 1, .sigfd = -1 };
	struct http_options hopt;
	struct privilege_user user;
	pid_t rival;
	int drop;
	double next;
	char err[1024];
	sigset_t set;
	int r, status = 1;

	a.start_s = (double)clock_wall_ms() / 1000.0;
	if (gethostname(a.host, sizeof(a.host)) < 0)
		snprintf(a.host, sizeof(a.host), "unknown");
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	/* before any thread exists, so all inherit the mask */
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	a.sigfd = signalfd(-1, &set, SFD_CLOEXEC);
	a.reload = reload_new(src);
	if (a.sigfd < 0 || !a.reload) {
		log_error(-errno, "unable to set up signal handling");
		goto out;
	}

	a.tc_lock = bpf_tc_lock_new(BPF_TC_LOCK_DIR);
	if (pipeline_init(&a.pipe, &a.cfg,
			  a.cfg.series_expiry_ms > a.cfg.interval_ms ? a.cfg.series_expiry_ms
								     : a.cfg.interval_ms) < 0 ||
	    !a.tc_lock) {
		log_error(-ENOMEM, "unable to allocate the registry");
		goto out;
	}
	drop = agent_user(&a.cfg, &user);
	if (drop < 0)
		goto out;
	r = store_open(a.cfg.db_path, STORE_READ_WRITE, &a.store, err, sizeof(err));
	if (r < 0) {
		log_error(0, "%s", err);
		goto out;
	}
	if (a.cfg.web_config_file[0]) {
		r = web_config_load(a.cfg.web_config_file, &a.web, err, sizeof(err));
		if (r < 0) {
			log_error(0, "%s", err);
			goto out;
		}
	}
	hopt = (struct http_options){
		.listen = a.cfg.listen,
		.connection_limit = a.cfg.http_connection_limit,
		.per_ip_limit = a.cfg.http_per_ip_limit,
		.timeout_s = a.cfg.http_timeout_s,
		.stale_ms = 10 * a.cfg.interval_ms > 30000 ? 10 * a.cfg.interval_ms : 30000,
		.db_path = a.cfg.db_path,
		.api_max_points = a.cfg.api_max_points,
		.api_timeout_ms = a.cfg.api_timeout_ms,
		.api_concurrency = a.cfg.api_concurrency,
		.web = a.web,
	};
	r = http_start(&hopt, &a.http, err, sizeof(err));
	if (r < 0) {
		log_error(0, "%s", err);
		goto out;
	}
	if (a.web && a.web->tls)
		log_info("web config '%s': HTTPS, TLS 1.%d to 1.%d, client certificates: %s, "
			 "basic auth: %zu user(s)",
			 a.cfg.web_config_file, a.web->min_version - 10, a.web->max_version - 10,
			 web_client_auth_name(a.web->client_auth), a.web->nusers);
	else if (a.web)
		log_info("web config '%s': plain HTTP, basic auth: %zu user(s)",
			 a.cfg.web_config_file, a.web->nusers);
	(void)collector_set_init(&a.set, &a.cfg, 0, a.tc_lock);
	agent_log_collectors(&a);
	rival = bpf_tc_lock_rival(a.tc_lock);
	if (rival) {
		char pid[32] = "";

		if (rival > 0)
			snprintf(pid, sizeof(pid), " (pid %d)", (int)rival);
		log_error(0,
			  "another fabmon agent%s holds '%s' and attaches the tc probe in this "
			  "network namespace: one agent per namespace",
			  pid, bpf_tc_lock_path(a.tc_lock));
		goto out;
	}
	/* what needs root is open: the probes, the sockets, the database */
	if (drop && agent_drop(&a, &user) < 0)
		goto out;
	log_info("listening on %s (port %u), database '%s', every %lldms", a.cfg.listen,
		 http_port(a.http), a.cfg.db_path, (long long)a.cfg.interval_ms);

	next = clock_mono_s();
	for (;;) {
		int sig = agent_wait(a.sigfd, reload_fd(a.reload), next);

		if (sig == SIGTERM || sig == SIGINT) {
			log_info("%s: stopping", sig == SIGTERM ? "SIGTERM" : "SIGINT");
			break;
		}
		/* read in the reload thread, applied here between ticks */
		if (sig == SIGHUP)
			reload_request(a.reload);
		agent_reload(&a);
		if (clock_mono_s() < next)
			continue;
		agent_tick(&a);
		next += (double)a.cfg.interval_ms / 1000.0;
		/* a tick that overran skips the slots it missed instead of
		 * running them back to back */
		if (next < clock_mono_s())
			next = clock_mono_s() + (double)a.cfg.interval_ms / 1000.0;
	}
	status = 0;
out:
	agent_release(&a);
	return status;
}
