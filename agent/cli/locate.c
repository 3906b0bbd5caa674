/* SPDX-License-Identifier: MIT */
/*
 * fabmon locate: a fixed handful of PromQL queries over the window (nodes
 * up, events naming a peer, port errors and when they began, LLDP
 * neighbours, mesh path loss and when it began, hops), turned into the scorer's input
 * (agent/cli/locate_score.c) and printed. A query per kind of evidence,
 * never one per node or per series, so the cost does not grow with the
 * cluster's size beyond the answers' own.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cli/locate.h"
#include "agent/cli/cli.h"
#include "agent/cli/json_arena.h"
#include "agent/cli/locate_score.h"
#include "agent/cli/prom_client.h"
#include "agent/config.h"
#include "agent/lib/clock.h"
#include "agent/lib/file_read.h"
#include "agent/lib/timefmt.h"
#include "collector/mesh/mesh_knock.h"

/* Points a range query asks for per series, at most (and steps of 1 s at
 * least): first-seen times to a 120th of the window. */
#define LOCATE_RANGE_POINTS 120
/* A range query's look back at each step, at least. */
#define LOCATE_REACH_S 10
/* A mesh path whose probes were lost more often than this is lossy. */
#define LOCATE_LOSS_RATIO 0.01
/* A host's peers blame it for data acknowledged and left unread for
 * host_stall_after (1.5 s by default); its own agent seeing nothing stand
 * this long says that data never reached its buffers. */
#define LOCATE_UNREAD_S 0.5
/* Hops of one path kept (a path is a few switches). */
#define LOCATE_HOPS_MAX 32

static const char locate_usage[] =
	"usage: fabmon locate --prometheus URL [OPTION]...\n"
	"Asks Prometheus what every fabmon node reported over a window and prints\n"
	"a ranked list of suspects: a host that events on several other nodes name,\n"
	"a port whose own node counts errors on it (with its LLDP switch port), a\n"
	"mesh hop that lossy paths of several nodes cross, more than clean ones do;\n"
	"each with its score and evidence. Suspects the data cannot tell apart are\n"
	"listed together and said to be.\n"
	"\n"
	"  --prometheus URL       Prometheus' base URL (http://host:9090)\n"
	"  --since TIME           window start (default 15m: 15 minutes ago)\n"
	"  --until TIME           window end (default now)\n"
	"  --json                 one JSON object: the window and the suspects\n"
	"  --csv                  CSV: rank,score,kind,suspect,failing,of,first_seen,reported_by,tie\n"
	"  --ca-file FILE         CA bundle for an https URL\n"
	"  --cert FILE --key FILE client certificate and key (mutual TLS)\n"
	"  --user USER            basic auth user, with --password-file\n"
	"  --password-file FILE   the password (its first line)\n"
	"  --timeout DURATION     each query's bound (default 10s)\n"
	"  -h, --help             this help\n"
	"\n"
	"TIME as for fabmon events. Exit status: 0 the list was printed (also an\n"
	"empty one: no suspect), 1 Prometheus could not be reached or refused a\n"
	"query, 2 usage error.\n";

struct locate_args {
	struct cli_common cm;
	struct prom_options po;
	const char *password_file;
	int64_t since_ms, until_ms;
	char *password;
};

static int parse_args(int argc, char **argv, struct locate_args *a)
{
	enum { O_PROM = 0x200, O_CA, O_CERT, O_KEY, O_USER, O_PASS, O_TIMEOUT };
	static const struct option opts[] = {
		CLI_COMMON_OPTIONS,
		{ "prometheus", required_argument, NULL, O_PROM },
		{ "ca-file", required_argument, NULL, O_CA },
		{ "cert", required_argument, NULL, O_CERT },
		{ "key", required_argument, NULL, O_KEY },
		{ "user", required_argument, NULL, O_USER },
		{ "password-file", required_argument, NULL, O_PASS },
		{ "timeout", required_argument, NULL, O_TIMEOUT },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int64_t ms;
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == CLI_OPT_DB || c == CLI_OPT_UTC)
			return cli_usage_error("locate", "--db and --utc are not locate's options");
		if ((r = cli_common_option("locate", c, optarg, &a->cm)) >= 0) {
			if (r)
				return r;
			continue;
		}
		switch (c) {
		case O_PROM:
			a->po.url = optarg;
			break;
		case O_CA:
			a->po.ca_file = optarg;
			break;
		case O_CERT:
			a->po.cert_file = optarg;
			break;
		case O_KEY:
			a->po.key_file = optarg;
			break;
		case O_USER:
			a->po.user = optarg;
			break;
		case O_PASS:
			a->password_file = optarg;
			break;
		case O_TIMEOUT:
			if (duration_parse(optarg, &ms) < 0 || ms < 1)
				return cli_usage_error("locate",
						       "--timeout: '%s' is not a duration", optarg);
			a->po.timeout_ms = (long)ms;
			break;
		case 'h':
			fputs(locate_usage, stdout);
			return 1;
		default:
			fputs(locate_usage, stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc)
		return cli_usage_error("locate", "unexpected argument '%s'", argv[optind]);
	if (!a->po.url)
		return cli_usage_error("locate", "no --prometheus URL given");
	if (strncmp(a->po.url, "http://", 7) != 0 && strncmp(a->po.url, "https://", 8) != 0)
		return cli_usage_error("locate", "--prometheus: '%s' is not an http(s) URL",
				       a->po.url);
	if (!a->po.cert_file != !a->po.key_file)
		return cli_usage_error("locate", "--cert and --key go together");
	if (!a->po.user != !a->password_file)
		return cli_usage_error("locate", "--user and --password-file go together");
	return cli_window("locate", a->cm.since, a->cm.until, &a->since_ms, &a->until_ms);
}

/* The password file's first line into a->password. 0, or 1 (said why). */
static int read_password(struct locate_args *a)
{
	size_t len;
	int r;

	if (!a->password_file)
		return 0;
	r = file_read(a->password_file, &a->password, &len);
	if (r < 0) {
		fprintf(stderr, "fabmon locate: unable to read '%s': %s\n", a->password_file,
			file_read_strerror(r));
		return 1;
	}
	a->password[strcspn(a->password, "\r\n")] = '\0';
	a->po.password = a->password;
	return 0;
}

/* The evidence as Prometheus gave it, kept for the scorer's borrowed
 * pointers until the end. */
struct evidence {
	json_t *nodes, *blames, *port_errors, *port_onsets, *lldp, *loss, *loss_onsets, *hops;
	struct locate_blame *b;
	struct locate_port *p;
	struct locate_path *paths;
	const char **hopv;
	char (*neighbor)[256];
	char (*peer)[256];
	struct locate_input in;
};

static const char *label(json_t *series, const char *name)
{
	return json_string_value(json_object_get(json_object_get(series, "metric"), name)) ?: "";
}

static double value_of(json_t *series)
{
	const char *v = json_string_value(json_array_get(json_object_get(series, "value"), 1));

	return v ? strtod(v, NULL) : 0;
}

/* A matrix series' point i in ms (-1: the last). */
static int64_t point_ms(json_t *series, long i)
{
	json_t *v = json_object_get(series, "values");
	json_t *p = json_array_get(v, i < 0 ? json_array_size(v) - 1 : (size_t)i);

	return p ? (int64_t)(json_number_value(json_array_get(p, 0)) * 1000.0) : 0;
}

static int64_t first_point_ms(json_t *series)
{
	return point_ms(series, 0);
}

/* The range step for the window: a 120th of it, a whole second at least. */
static int64_t range_step(const struct locate_args *a)
{
	int64_t step = (a->until_ms - a->since_ms) / LOCATE_RANGE_POINTS / 1000 * 1000;

	return step < 1000 ? 1000 : step;
}

/* A range query's look back at each step, in seconds: two steps, or 10 s
 * so that a counter has two samples at common scrape intervals. */
static long long range_reach_s(const struct locate_args *a)
{
	long long two_steps = range_step(a) / 1000 * 2;

	return two_steps > LOCATE_REACH_S ? two_steps : LOCATE_REACH_S;
}

/* Errors a port's own counters rose by over range_s, per node and port;
 * each counter's increase marked before the or (their labels are the same
 * once the name is gone), as fabmon-cluster.rules.yml does. */
static void port_errors_query(char *q, size_t len, long long range_s)
{
	snprintf(q, len,
		 "sum by (instance, interface) ("
		 "label_replace(increase(fabmon_netdev_receive_errors_total[%llds]), "
		 "\"c\", \"rx\", \"\", \"\") or "
		 "label_replace(increase(fabmon_netdev_transmit_errors_total[%llds]), "
		 "\"c\", \"tx\", \"\", \"\") or "
		 "label_replace(increase(fabmon_ethtool_rx_phy_errors_total[%llds]), "
		 "\"c\", \"phy\", \"\", \"\")) > 0",
		 range_s, range_s, range_s);
}

/* The queries, one per kind of evidence. */
enum {
	Q_NODES,
	Q_BLAMES,
	Q_PORT_ERRORS,
	Q_PORT_ONSETS,
	Q_LLDP,
	Q_LOSS,
	Q_LOSS_ONSETS,
	Q_HOPS,
	QUERIES
};

/* Asks every query at once; 0 or the first failure (-errno). */
static int ask(struct prom_client *c, const struct locate_args *a, struct evidence *e)
{
	int64_t w = (a->until_ms - a->since_ms + 999) / 1000, step = range_step(a);
	long long reach = range_reach_s(a);
	static char q[QUERIES][1024];
	static struct config defaults; /* ~20 KiB: not on the stack */
	struct prom_request req[QUERIES] = { 0 };
	json_t **out[QUERIES] = { &e->nodes, &e->blames, &e->port_errors, &e->port_onsets,
				  &e->lldp,  &e->loss,	 &e->loss_onsets, &e->hops };
	int r;

	if (w < 1)
		w = 1;
	config_defaults(&defaults);
	snprintf(q[Q_NODES], sizeof(q[0]),
		 "count(count by (instance) (max_over_time(fabmon_agent_info[%llds])))",
		 (long long)w);
	/* over a range, not the instant's 5-minute lookback: an event that
	 * closed (its series gone) stops counting a few steps later. Only
	 * cause "host" blames the peer (or, host=, the node itself): a
	 * network event names the peer as the far end of a path that
	 * suffers, which the mesh paths place. A host_stall naming a peer
	 * not at a step where the peer's own agent saw nothing stand unread
	 * LOCATE_UNREAD_S (the data waited in the network, not in its
	 * buffers), or found its application waiting on a receive from a
	 * peer that went quiet under host_stall_after (its default) before
	 * its data began to stand: that peer's victim (detect_unread()). A
	 * node whose probes find the peer's kernel silent (the path cut,
	 * its stall's) names it too: where every node's path to it is cut,
	 * the host or its own link is what they share (the rules'
	 * peer:fabmon_event_reporting_nodes:count) */
	snprintf(q[Q_BLAMES], sizeof(q[0]),
		 "max by (instance, subject) (max by (instance, subject, kind) (max_over_time("
		 "fabmon_event_active{cause=\"host\",subject=~\"(peer|host)=.+\"}[%llds])) "
		 "unless on (subject, kind) label_replace(label_replace("
		 "fabmon_tcp_unread_seconds < %g or (fabmon_tcp_awaited_seconds > 0 and "
		 "fabmon_tcp_awaited_seconds - fabmon_tcp_unread_seconds < %g), "
		 "\"subject\", \"peer=$1\", \"local\", \"(.+)\"), "
		 "\"kind\", \"host_stall\", \"\", \"\")) > 0 "
		 "or max by (instance, subject) (label_replace(max_over_time("
		 "fabmon_mesh_kernel_silent_seconds[%llds]) >= %g, \"subject\", \"peer=$1\", "
		 "\"peer\", \"(.+)\"))",
		 reach, LOCATE_UNREAD_S, (double)defaults.host_stall_after_ms / 1000.0, reach,
		 MESH_KNOCK_TIMEOUT_S);
	port_errors_query(q[Q_PORT_ERRORS], sizeof(q[0]), w);
	port_errors_query(q[Q_PORT_ONSETS], sizeof(q[0]), reach);
	snprintf(q[Q_LLDP], sizeof(q[0]),
		 "max by (instance, interface, system_name, port_id) "
		 "(max_over_time(fabmon_lldp_neighbor_info[%llds]))",
		 (long long)w);
	snprintf(
		q[Q_LOSS], sizeof(q[0]),
		"sum by (instance, peer, flow) (increase(fabmon_mesh_flow_probes_lost_total[%llds])) / "
		"sum by (instance, peer, flow) (increase(fabmon_mesh_flow_probes_sent_total[%llds]))",
		(long long)w, (long long)w);
	snprintf(
		q[Q_LOSS_ONSETS], sizeof(q[0]),
		"sum by (instance, peer, flow) (increase(fabmon_mesh_flow_probes_lost_total[%llds])) > 0",
		reach);
	snprintf(q[Q_HOPS], sizeof(q[0]),
		 "max by (instance, peer, flow, hop, address) "
		 "(max_over_time(fabmon_mesh_hop_info[%llds]))",
		 (long long)w);
	for (int i = 0; i < QUERIES; i++) {
		int range = i == Q_BLAMES || i == Q_PORT_ONSETS || i == Q_LOSS_ONSETS;

		req[i] = (struct prom_request){ .promql = q[i], .at_ms = a->until_ms };
		if (range) {
			req[i].start_ms = a->since_ms;
			req[i].end_ms = a->until_ms;
			req[i].step_ms = step;
		}
	}
	r = prom_run(c, req, QUERIES);
	for (int i = 0; !r && i < QUERIES; i++)
		*out[i] = req[i].result;
	return r;
}

/* The blames: each series of an event naming peer=ADDR on a node that was
 * open within the window. A step's max_over_time looks back reach_s, so
 * the first steps also see an event that closed just before --since; one
 * open at any time in the window holds on for reach_s after, so its last
 * step is that late at least (or is the window's end). */
static int build_blames(struct evidence *e, const struct locate_args *a)
{
	size_t n = json_array_size(e->blames), k = 0;
	int64_t open_by = a->since_ms + range_reach_s(a) * 1000;

	e->b = calloc(n + 1, sizeof(*e->b));
	e->peer = calloc(n + 1, sizeof(*e->peer));
	if (!e->b || !e->peer)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		json_t *s = json_array_get(e->blames, i);
		const char *subject = label(s, "subject");
		int self = strncmp(subject, "host=", 5) == 0;

		/* "peer=198.18.0.3", "peer=198.18.0.3,flow=..." or
		 * "host=198.18.0.3" (the query's matcher keeps only those) */
		if (self || strncmp(subject, "peer=", 5) == 0)
			subject += 5;
		if (point_ms(s, -1) < open_by && point_ms(s, -1) < a->until_ms - range_step(a))
			continue;
		snprintf(e->peer[k], sizeof(e->peer[0]), "%.*s", (int)strcspn(subject, ","),
			 subject);
		e->b[k] = (struct locate_blame){ label(s, "instance"), e->peer[k],
						 first_point_ms(s), self };
		k++;
	}
	e->in.blames = e->b;
	e->in.nblames = (int)k;
	return 0;
}

/* True if series is of node inst's port ifname. */
static int same_port(json_t *series, const char *inst, const char *ifname)
{
	return strcmp(label(series, "instance"), inst) == 0 &&
	       strcmp(label(series, "interface"), ifname) == 0;
}

/* The ports with errors, with their LLDP neighbour and onset. */
static int build_ports(struct evidence *e)
{
	size_t n = json_array_size(e->port_errors);

	e->p = calloc(n + 1, sizeof(*e->p));
	e->neighbor = calloc(n + 1, sizeof(*e->neighbor));
	if (!e->p || !e->neighbor)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		json_t *s = json_array_get(e->port_errors, i);
		const char *inst = label(s, "instance"), *ifname = label(s, "interface");
		struct locate_port *p = &e->p[i];

		*p = (struct locate_port){ inst, ifname, NULL, value_of(s), 0 };
		for (size_t k = 0; k < json_array_size(e->lldp); k++) {
			json_t *t = json_array_get(e->lldp, k);

			if (!same_port(t, inst, ifname))
				continue;
			snprintf(e->neighbor[i], sizeof(e->neighbor[0]), "%s port %s",
				 label(t, "system_name"), label(t, "port_id"));
			p->neighbor = e->neighbor[i];
		}
		for (size_t k = 0; k < json_array_size(e->port_onsets); k++)
			if (same_port(json_array_get(e->port_onsets, k), inst, ifname))
				p->first_ms = first_point_ms(json_array_get(e->port_onsets, k));
	}
	e->in.ports = e->p;
	e->in.nports = (int)n;
	return 0;
}

/* A path's key, "instance peer flow" of one of its series. */
static void path_key(json_t *series, char *buf, size_t len)
{
	const char *part[3] = { label(series, "instance"), label(series, "peer"),
				label(series, "flow") };
	size_t used = 0;

	/* joined by hand: snprintf() for its 80,000 keys was 4 % of locate's
	 * work at 2,000 nodes */
	for (int i = 0; i < 3 && used < len; i++) {
		size_t n = strnlen(part[i], len - used - 1);

		memcpy(buf + used, part[i], n);
		used += n;
		buf[used++] = '\x1f';
	}
	buf[used - 1] = '\0';
}

/* The series of a result by path key (an object of arrays), so that a
 * path finds its own in one lookup; NULL when out of memory. */
static json_t *index_paths(json_t *result)
{
	json_t *idx = json_object(), *s, *list;
	char key[1024];

	for (size_t i = 0; idx && i < json_array_size(result); i++) {
		s = json_array_get(result, i);
		path_key(s, key, sizeof(key));
		list = json_object_get(idx, key);
		if (!list && (!(list = json_array()) || json_object_set_new(idx, key, list) < 0))
			goto fail;
		if (json_array_append(list, s) < 0)
			goto fail;
	}
	return idx;
fail:
	json_decref(idx);
	return NULL;
}

/* The hops of the path with key from the hops index into hv, in their
 * order (LOCATE_HOP_UNKNOWN for one that did not answer, which the agent
 * labels "unknown" until a trace hears it: an address it had in the
 * window wins); returns how many. */
static int path_hops(json_t *hops, const char *key, const char **hv)
{
	json_t *hs = json_object_get(hops, key);
	int n = 0;

	for (size_t j = 0; j < json_array_size(hs); j++) {
		json_t *h = json_array_get(hs, j);
		long hop = strtol(label(h, "hop"), NULL, 10);
		const char *address = label(h, "address");

		if (hop < 1 || hop > LOCATE_HOPS_MAX)
			continue;
		if (strcmp(address, "unknown") != 0 || !hv[hop - 1])
			hv[hop - 1] = strcmp(address, "unknown") ? address : LOCATE_HOP_UNKNOWN;
		if (hop > n)
			n = (int)hop;
	}
	for (int i = 0; i < n; i++)
		if (!hv[i])
			hv[i] = LOCATE_HOP_UNKNOWN;
	return n;
}

/* A path's loss series (NULL: none) as the scorer's lossy: 1 over the
 * bound, 0 clean (nothing lost), -1 lost under the bound. */
static int path_loss(json_t *loss)
{
	double ratio = loss ? value_of(loss) : 0;

	return ratio > LOCATE_LOSS_RATIO ? 1 : ratio > 0 ? -1 : 0;
}

/*
 * The mesh paths: every flow whose hops are known, and every flow that
 * lost, with its loss, hops in their order and when its loss began. The
 * agent exports a flow's loss only while it stands out and the hops of
 * every flow of such a peer (docs/mesh.md): a flow with hops and no loss
 * series lost nothing.
 */
static int build_paths(struct evidence *e)
{
	json_t *hops = index_paths(e->hops), *onsets = index_paths(e->loss_onsets);
	json_t *loss = index_paths(e->loss), *keys = json_object(), *clean = json_object();
	char pair[1024];
	size_t n = 0, cap = json_array_size(e->hops) + json_array_size(e->loss);
	const char *key;
	json_t *v;
	int r = -ENOMEM;

	e->paths = calloc(cap + 1, sizeof(*e->paths));
	e->hopv = calloc((cap + 1) * LOCATE_HOPS_MAX, sizeof(*e->hopv));
	if (!e->paths || !e->hopv || !hops || !onsets || !loss || !keys || !clean)
		goto out;
	/* the paths' keys: those with hops, then those with loss alone */
	json_object_foreach(hops, key,
			    v) if (json_object_set(keys, key, json_array_get(v, 0)) < 0) goto out;
	json_object_foreach(loss, key,
			    v) if (!json_object_get(keys, key) &&
				   json_object_set(keys, key, json_array_get(v, 0)) < 0) goto out;
	json_object_foreach(keys, key, v)
	{
		json_t *l = json_array_get(json_object_get(loss, key), 0);
		struct locate_path *p = &e->paths[n];
		const char **hv = e->hopv + n * LOCATE_HOPS_MAX;

		*p = (struct locate_path){ .reporter = label(v, "instance"),
					   .peer = label(v, "peer"),
					   .hops = hv,
					   .lossy = path_loss(l),
					   .first_ms = first_point_ms(json_array_get(
						   json_object_get(onsets, key), 0)) };
		p->nhops = path_hops(hops, key, hv);
		n++;
	}
	/* which node-peer pairs have a flow that lost nothing */
	for (size_t i = 0; i < n; i++) {
		struct locate_path *p = &e->paths[i];

		snprintf(pair, sizeof(pair), "%s|%s", p->reporter, p->peer);
		if (!p->lossy && json_object_set_new(clean, pair, json_true()) < 0)
			goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct locate_path *p = &e->paths[i];

		snprintf(pair, sizeof(pair), "%s|%s", p->reporter, p->peer);
		p->sibling_clean = json_object_get(clean, pair) != NULL;
	}
	e->in.paths = e->paths;
	e->in.npaths = (int)n;
	r = 0;
out:
	json_decref(clean);
	json_decref(keys);
	json_decref(loss);
	json_decref(hops);
	json_decref(onsets);
	return r;
}

static void evidence_release(struct evidence *e)
{
	json_decref(e->nodes);
	json_decref(e->blames);
	json_decref(e->port_errors);
	json_decref(e->port_onsets);
	json_decref(e->lldp);
	json_decref(e->loss);
	json_decref(e->loss_onsets);
	json_decref(e->hops);
	free(e->b);
	free(e->p);
	free(e->paths);
	free(e->hopv);
	free(e->neighbor);
	free(e->peer);
}

/* What a suspect's evidence says, in words. */
static void evidence_text(const struct locate_suspect *s, char *buf, size_t len)
{
	if (s->by_paths)
		snprintf(buf, len, "on %d of %d lossy paths, on %d clean ones", s->failing, s->of,
			 s->clean);
	else if (s->kind == LOCATE_PORT)
		snprintf(buf, len, "%.0f errors on its node's own counters", s->errors);
	else if (s->self)
		snprintf(buf, len,
			 "its own node: its applications stopped reading; named by events on "
			 "%d of %d nodes, itself among them",
			 s->failing, s->of);
	else
		snprintf(buf, len, "named by events on %d of %d other nodes", s->failing, s->of);
}

/* json_dump_callback's writer: into a strbuf (jansson's own strings
 * would come from json_arena's chunks). */
static int dump_to(const char *buf, size_t len, void *sb)
{
	strbuf_add(sb, buf, len);
	return 0;
}

static void print(const struct locate_args *a, const struct locate_suspect *s, int n, int nodes,
		  int queries)
{
	char since[40], until[40], first[40], ev[160];
	struct strbuf sb;

	strbuf_init(&sb);
	time_format_rfc3339(a->since_ms, since, sizeof(since));
	time_format_rfc3339(a->until_ms, until, sizeof(until));
	if (a->cm.format == CLI_JSON) {
		json_t *list = json_array();
		json_t *o = json_pack("{s:s,s:s,s:i,s:i,s:o}", "since", since, "until", until,
				      "nodes", nodes, "queries", queries, "suspects", list);

		for (int i = 0; o && i < n; i++) {
			json_t *tied = json_array();

			for (int k = 0; tied && s[i].tie && k < n; k++)
				if (k != i && s[k].tie == s[i].tie)
					json_array_append_new(tied, json_integer(k + 1));
			time_format_rfc3339(s[i].first_ms, first, sizeof(first));
			evidence_text(&s[i], ev, sizeof(ev));
			json_array_append_new(
				list,
				json_pack("{s:i,s:s,s:s,s:f,s:{s:i,s:i,s:s},s:s,s:s?,s:o}", "rank",
					  i + 1, "kind", locate_kind_names[s[i].kind], "suspect",
					  s[i].name, "score", s[i].score, "evidence", "failing",
					  s[i].failing, "of", s[i].of, "text", ev, "reported_by",
					  s[i].reporters, "first_seen",
					  s[i].first_ms ? first : NULL, "tied_with", tied));
		}
		if (!o || json_dump_callback(o, dump_to, &sb, JSON_COMPACT) < 0)
			sb.failed = 1;
		strbuf_addch(&sb, '\n');
		json_decref(o);
	} else if (a->cm.format == CLI_CSV) {
		strbuf_addstr(&sb,
			      "rank,score,kind,suspect,failing,of,first_seen,reported_by,tie\n");
		for (int i = 0; i < n; i++) {
			time_format_rfc3339(s[i].first_ms, first, sizeof(first));
			strbuf_addf(&sb, "%d,%.3f,%s,", i + 1, s[i].score,
				    locate_kind_names[s[i].kind]);
			cli_csv_field(&sb, s[i].name);
			strbuf_addf(&sb, ",%d,%d,%s,", s[i].failing, s[i].of,
				    s[i].first_ms ? first : "");
			cli_csv_field(&sb, s[i].reporters);
			strbuf_addf(&sb, ",%d\n", s[i].tie);
		}
	} else {
		strbuf_addf(&sb, "suspects from %s to %s, %d nodes reporting (%d queries)\n", since,
			    until, nodes, queries);
		if (!n)
			strbuf_addstr(&sb, "no suspect: no host, port or hop is implicated\n");
		else
			strbuf_addf(&sb, "%4s  %5s  %-4s  %-32s  %-42s  %-24s  %s\n", "RANK",
				    "SCORE", "KIND", "SUSPECT", "EVIDENCE", "FIRST SEEN",
				    "REPORTED BY");
		for (int i = 0; i < n; i++) {
			if (s[i].first_ms)
				time_format_rfc3339(s[i].first_ms, first, sizeof(first));
			else
				snprintf(first, sizeof(first), "-");
			evidence_text(&s[i], ev, sizeof(ev));
			strbuf_addf(&sb, "%4d  %5.2f  %-4s  %-32s  %-42s  %-24s  %s\n", i + 1,
				    s[i].score, locate_kind_names[s[i].kind], s[i].name, ev, first,
				    s[i].reporters);
		}
		for (int i = 0; i < n; i++)
			if (s[i].tie && (i == 0 || s[i - 1].tie != s[i].tie)) {
				strbuf_addf(&sb, "cannot tell apart: %s", s[i].name);
				for (int k = i + 1; k < n && s[k].tie == s[i].tie; k++)
					strbuf_addf(&sb, ", %s", s[k].name);
				strbuf_addstr(&sb, " (the same evidence; all are listed)\n");
			}
	}
	cli_print("locate", &sb);
}

int locate_main(int argc, char **argv)
{
	struct locate_args a = { .cm = { .since = "15m", .until = "now" } };
	struct evidence e = { 0 };
	struct prom_client *c = NULL;
	struct locate_suspect *s = NULL;
	int n = 0, r;

	r = parse_args(argc, argv, &a);
	if (r)
		return r == 1 ? 0 : r;
	if (read_password(&a))
		return 1;
	json_arena_use();
	c = prom_client_new(&a.po);
	if (!c) {
		fprintf(stderr, "fabmon locate: unable to start the HTTP client\n");
		r = 1;
		goto out;
	}
	r = ask(c, &a, &e);
	if (r < 0) {
		fprintf(stderr, "fabmon locate: asking %s: %s\n", a.po.url, prom_client_error(c));
		r = 1;
		goto out;
	}
	e.in.nodes = (int)value_of(json_array_get(e.nodes, 0));
	r = build_blames(&e, &a);
	if (!r)
		r = build_ports(&e);
	if (!r)
		r = build_paths(&e);
	if (!r)
		r = locate_score(&e.in, &s, &n);
	if (r < 0) {
		fprintf(stderr, "fabmon locate: out of memory\n");
		r = 1;
		goto out;
	}
	print(&a, s, n, e.in.nodes, prom_client_queries(c));
	r = 0;
out:
	free(s);
	evidence_release(&e);
	prom_client_free(c);
	json_arena_release();
	free(a.password);
	return r;
}
