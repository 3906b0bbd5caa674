/* SPDX-License-Identifier: MIT */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cli/events.h"
#include "agent/cli/export.h"
#include "agent/cli/history.h"
#include "agent/cli/locate.h"
#include "agent/cli/ping.h"
#include "agent/cli/replay.h"
#include "agent/cli/snapshot.h"
#include "agent/cli/top.h"
#include "agent/config.h"
#include "agent/daemon/config_check.h"
#include "agent/daemon/doctor.h"
#include "agent/daemon/tick.h"
#include "agent/http/web_config.h"
#include "agent/lib/log.h"

/* Exit statuses (DESIGN.md): 0 ok, 1 runtime failure, 2 usage error. */
#define EXIT_USAGE 2

static const char agent_usage[] =
	"usage: fabmon agent [OPTION]...\n"
	"Samples this host's network counters every tick, stores them in SQLite and\n"
	"serves them on /metrics. Every option is also a key of the [agent] section\n"
	"of the config file (--sysfs-root is sysfs_root); options win over the file.\n"
	"\n"
	"  --config FILE          config file (default " CONFIG_DEFAULT_PATH ", optional)\n"
	"  --listen ADDR:PORT     HTTP listen address (default " CONFIG_DEFAULT_LISTEN ")\n"
	"  --db PATH              SQLite database (default " CONFIG_DEFAULT_DB ")\n"
	"  --interval DURATION    tick interval, 100ms to 1h (default 1s)\n"
	"  --sysfs-root DIR       where sysfs is (default /sys): netdev and rdma read their\n"
	"                         counters there and ethtool its interfaces; qdisc, bpf and\n"
	"                         pcap work on this host's interfaces whatever it says, so\n"
	"                         another root leaves bpf and pcap off unless --collectors\n"
	"                         or collectors names them\n"
	"  --procfs-root DIR      where procfs is (default /proc): pressure reads\n"
	"                         DIR/pressure/{cpu,io,memory} there\n"
	"  --collectors LIST      comma-separated: netdev,ethtool,rdma,qdisc,pressure,bpf,\n"
	"                         pcap,topology,mesh\n"
	"                         (default all; mesh once it has targets)\n"
	"  --interfaces REGEX     only interfaces whose whole name matches (default all)\n"
	"  --ethtool-include REGEX  also export these raw ethtool stats\n"
	"  --pcap-interfaces REGEX  mirror (SPAN) ports to capture RoCEv2 on (default none)\n"
	"  --pcap-link-speed MBPS  the mirrored link's speed, which captured PFC and\n"
	"                         PAUSE frames are timed at (default 0: the port's own)\n"
	"  --lldp-interfaces REGEX  where to listen for LLDP (default: the physical NICs\n"
	"                         --interfaces selects)\n"
	"  --topology-file FILE   static topology (hosts, racks, rails, leaves, links) this\n"
	"                         node exports its own line of (default none)\n"
	"  --topology-host NAME   this node's name in it (default: the host name)\n"
	"  --max-series N         bound on series held (default 100000)\n"
	"  --retention DURATION   keep raw samples this long (default 48h)\n"
	"  --rollup-retention DURATION  keep 1-minute rollups this long (default 30d)\n"
	"  --event-retention DURATION  keep events this long after they end (default 90d)\n"
	"  --db-cap-mb N          past this size the oldest samples go first (default 8192;\n"
	"                         0: no cap)\n"
	"  --series-expiry DURATION  forget series unseen this long (default 5m)\n"
	"  --collector-retry DURATION  look again this often for an absent source, and put\n"
	"                         back a tc filter someone removed this long after (default 30s)\n"
	"  --sockets-interval DURATION  the sockets collector reads this host's TCP\n"
	"                         connections at most this often (default 500ms)\n"
	"  --event-open-ticks N, --event-close-ticks N  ticks over a threshold before an\n"
	"                         event opens, under before it closes (defaults 2, 3)\n"
	"  --stall-after DURATION  data in flight without ack progress this long is a stall\n"
	"                         (default 500ms)\n"
	"  --host-stall-after DURATION  data a peer acked and its application has not read\n"
	"                         for this long is a host_stall (default 1500ms)\n"
	"  --pfc-paused-percent N  a port paused this share of the time is in a PFC storm\n"
	"                         (default 50)\n"
	"  --hotspot-util-percent N  a congested link this full of its capacity is a hotspot\n"
	"                         (default 80)\n"
	"  --lossy-link-ppm N     a port under hotspot-util-percent with errors on this many\n"
	"                         packets in a million over lossy-link-for is a lossy link\n"
	"                         (defaults 10, 2s)\n"
	"  --incast-percent N     an all-to-all peer whose path delivers under this share of\n"
	"                         the other peers' median is an incast (default 25)\n"
	"  --incast-for DURATION  once it has done so this long (default 1500ms)\n"
	"  --straggler-percent N  a ring peer whose path delivers under this share is a\n"
	"                         straggler (default 60)\n"
	"  --handoff-slow-percent N  a hand-off taking this share of its own baseline is slow\n"
	"                         (default 300)\n"
	"  --handoff-slow-extra DURATION  and this much longer than it (default 50ms)\n"
	"  --path-window DURATION  peers compared if they took data this recently (default 10s)\n"
	"  --bpf-max-flows N      entries of each eBPF flow map (default 16384)\n"
	"  --bpf-top-peers N      per-peer series kept, the rest as peer=\"other\" (default 32)\n"
	"  --bpf-flow-idle DURATION  delete flows idle this long from the maps (default 2m)\n"
	"  --bpf-netns FILE,...   TCP probes count only these network namespaces\n"
	"                         (/run/netns/NAME, /proc/PID/ns/net; default: all)\n"
	"  --roce-pmtu N          RoCE path MTU an RDMA READ is counted by until its\n"
	"                         READ responses show one: 256..4096 (default 4096)\n"
	"  --http-connection-limit N, --http-per-ip-limit N, --http-timeout SECONDS\n"
	"                         HTTP bounds (defaults 1024, 16, 10)\n"
	"  --web-config-file FILE  TLS and basic auth, in exporter-toolkit's YAML form\n"
	"                         (default none: plain HTTP, no authentication)\n"
	"  --api-max-points N     values one /api/v1/query_range answer may hold (11000)\n"
	"  --api-timeout DURATION  an API query not answered in this long is a 503 (5s)\n"
	"  --api-concurrency N    API queries run at once, as many more wait; beyond, a 503\n"
	"                         with Retry-After (default 4)\n"
	"  --user NAME            started as root, run as this user once the probes, sockets\n"
	"                         and database are open, keeping only the capabilities the\n"
	"                         collectors need (default: stay as started)\n"
	"  --mesh-targets FILE    probe these peers (Prometheus file_sd JSON, re-read when it\n"
	"                         changes); given, it or --mesh-peers turns the mesh on\n"
	"  --mesh-peers ADDR,...  probe these IPv4 addresses too\n"
	"  --mesh-listen ADDR:PORT  the mesh responder, and the peers' port (default :9479)\n"
	"  --mesh-interval DURATION  each peer probed on every flow this often (default 1s)\n"
	"  --mesh-flows N         source ports each peer is probed from (default 8)\n"
	"  --mesh-dscp N          DSCP of the probes (default 0)\n"
	"  --mesh-pps N           probes a second at most, every peer (default 10000)\n"
	"  --mesh-source-pps N    probes a second answered from one source (default 100)\n"
	"  --mesh-allow CIDR,...  answer these sources too, not only the targets\n"
	"  --mesh-path-interval DURATION  learn each flow's hops this often (default 5m)\n"
	"  --mesh-max-series N    mesh series at most; the rest are counted (default 50000)\n"
	"  --check-config         check the configuration and what a start would find (the\n"
	"                         user exists, the database's directory is writable by\n"
	"                         whoever runs this and reachable by --user, sysfs_root\n"
	"                         is a directory, the web config), print\n"
	"                         'configuration OK', exit\n"
	"  -v, --verbose          debug logging\n"
	"  -h, --help             this help\n"
	"\n"
	"Signals: SIGTERM/SIGINT finish the current tick and exit 0; SIGHUP reloads\n"
	"the config file beside the ticks (a bad one is reported and the running one\n"
	"kept). Config files must be regular files: a FIFO is refused, not waited on.\n"
	"Exit status: 0 stopped cleanly, 1 runtime failure, 2 usage or config error.\n";

static const char doctor_usage[] =
	"usage: fabmon doctor [OPTION]...\n"
	"Tells which collectors work on this host and why the others do not, and\n"
	"whether the database is usable. Takes the same options as 'fabmon agent'.\n"
	"Exit status: 0 report printed, 1 the database exists but is unusable,\n"
	"2 usage or config error.\n";

static const char main_usage[] =
	"usage: fabmon COMMAND [OPTION]...\n"
	"fabric telemetry and congestion monitoring agent\n"
	"\n"
	"commands:\n"
	"  agent     run the agent (collect, store, serve /metrics)\n"
	"  doctor    tell which collectors work on this host, and why not\n"
	"  events    list the events the detectors raised, from the database\n"
	"  export    write the stored history as OpenMetrics (backfill Prometheus)\n"
	"  history   one metric's stored samples over a window, per step\n"
	"  locate    ask Prometheus which host, switch port or hop the nodes implicate\n"
	"  ping      probe a peer's mesh responder on every flow: RTT, loss, hops\n"
	"  replay    count a capture file's traffic (RoCEv2 per queue pair, per peer)\n"
	"  snapshot  copy the database consistently, while the agent writes\n"
	"  top       links and peers ranked by time in congestion over a window\n"
	"  version   print the version\n"
	"\n"
	"'fabmon COMMAND --help' describes each command.\n";

enum { OPT_CHECK_CONFIG = 256, OPT_CONFIG };

static const struct option config_options[] = {
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "listen", required_argument, NULL, 0 },
	{ "db", required_argument, NULL, 0 },
	{ "interval", required_argument, NULL, 0 },
	{ "sysfs-root", required_argument, NULL, 0 },
	{ "procfs-root", required_argument, NULL, 0 },
	{ "collectors", required_argument, NULL, 0 },
	{ "interfaces", required_argument, NULL, 0 },
	{ "ethtool-include", required_argument, NULL, 0 },
	{ "pcap-interfaces", required_argument, NULL, 0 },
	{ "pcap-link-speed", required_argument, NULL, 0 },
	{ "lldp-interfaces", required_argument, NULL, 0 },
	{ "topology-file", required_argument, NULL, 0 },
	{ "topology-host", required_argument, NULL, 0 },
	{ "max-series", required_argument, NULL, 0 },
	{ "retention", required_argument, NULL, 0 },
	{ "event-retention", required_argument, NULL, 0 },
	{ "rollup-retention", required_argument, NULL, 0 },
	{ "db-cap-mb", required_argument, NULL, 0 },
	{ "series-expiry", required_argument, NULL, 0 },
	{ "collector-retry", required_argument, NULL, 0 },
	{ "sockets-interval", required_argument, NULL, 0 },
	{ "event-open-ticks", required_argument, NULL, 0 },
	{ "event-close-ticks", required_argument, NULL, 0 },
	{ "stall-after", required_argument, NULL, 0 },
	{ "host-stall-after", required_argument, NULL, 0 },
	{ "pfc-paused-percent", required_argument, NULL, 0 },
	{ "hotspot-util-percent", required_argument, NULL, 0 },
	{ "lossy-link-ppm", required_argument, NULL, 0 },
	{ "lossy-link-for", required_argument, NULL, 0 },
	{ "incast-percent", required_argument, NULL, 0 },
	{ "incast-for", required_argument, NULL, 0 },
	{ "straggler-percent", required_argument, NULL, 0 },
	{ "path-window", required_argument, NULL, 0 },
	{ "handoff-slow-percent", required_argument, NULL, 0 },
	{ "handoff-slow-extra", required_argument, NULL, 0 },
	{ "bpf-max-flows", required_argument, NULL, 0 },
	{ "bpf-top-peers", required_argument, NULL, 0 },
	{ "bpf-flow-idle", required_argument, NULL, 0 },
	{ "bpf-netns", required_argument, NULL, 0 },
	{ "roce-pmtu", required_argument, NULL, 0 },
	{ "http-connection-limit", required_argument, NULL, 0 },
	{ "http-per-ip-limit", required_argument, NULL, 0 },
	{ "http-timeout", required_argument, NULL, 0 },
	{ "web-config-file", required_argument, NULL, 0 },
	{ "api-max-points", required_argument, NULL, 0 },
	{ "api-timeout", required_argument, NULL, 0 },
	{ "api-concurrency", required_argument, NULL, 0 },
	{ "user", required_argument, NULL, 0 },
	{ "mesh-targets", required_argument, NULL, 0 },
	{ "mesh-peers", required_argument, NULL, 0 },
	{ "mesh-listen", required_argument, NULL, 0 },
	{ "mesh-interval", required_argument, NULL, 0 },
	{ "mesh-flows", required_argument, NULL, 0 },
	{ "mesh-dscp", required_argument, NULL, 0 },
	{ "mesh-pps", required_argument, NULL, 0 },
	{ "mesh-source-pps", required_argument, NULL, 0 },
	{ "mesh-allow", required_argument, NULL, 0 },
	{ "mesh-path-interval", required_argument, NULL, 0 },
	{ "mesh-max-series", required_argument, NULL, 0 },
	{ "check-config", no_argument, NULL, OPT_CHECK_CONFIG },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Flag names become config keys: --sysfs-root is sysfs_root. */
static char *flag_key(const char *flag)
{
	char *k = strdup(flag);

	for (char *p = k; p && *p; p++)
		if (*p == '-')
			*p = '_';
	return k;
}

/*
 * Parses the options agent and doctor share into src. Returns 0, 1 if --help
 * was printed, or EXIT_USAGE.
 */
static int parse_options(int argc, char **argv, const char *usage, struct config_source *src,
			 int *check_config)
{
	int c, idx;

	optind = 1;
	while ((c = getopt_long(argc, argv, "vh", config_options, &idx)) != -1) {
		switch (c) {
		case 0:
			if (src->nflags == CONFIG_MAX_FLAGS) {
				fprintf(stderr, "fabmon: too many options\n");
				return EXIT_USAGE;
			}
			src->flags[src->nflags].key = flag_key(config_options[idx].name);
			src->flags[src->nflags].value = optarg;
			src->nflags++;
			break;
		case OPT_CONFIG:
			src->path = optarg;
			src->path_explicit = 1;
			break;
		case OPT_CHECK_CONFIG:
			if (!check_config) {
				fprintf(stderr, "fabmon: --check-config is for 'fabmon agent'\n");
				return EXIT_USAGE;
			}
			*check_config = 1;
			break;
		case 'v':
			log_set_level(LOG_LEVEL_DEBUG);
			break;
		case 'h':
			fputs(usage, stdout);
			return 1;
		default:
			fprintf(stderr, "%s", usage);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "fabmon: unexpected argument '%s'\n%s", argv[optind], usage);
		return EXIT_USAGE;
	}
	return 0;
}

static void free_source(struct config_source *src)
{
	for (unsigned i = 0; i < src->nflags; i++)
		free((char *)src->flags[i].key);
}

static int cmd_agent_or_doctor(int argc, char **argv, int doctor)
{
	struct config_source src = { 0 };
	struct config cfg;
	char err[1024];
	int check = 0, r;

	r = parse_options(argc, argv, doctor ? doctor_usage : agent_usage, &src,
			  doctor ? NULL : &check);
	if (r) {
		free_source(&src);
		return r == 1 ? EXIT_SUCCESS : r;
	}
	r = config_build(&src, &cfg, err, sizeof(err));
	if (r == 0 && !doctor)
		r = web_config_check(cfg.web_config_file, err, sizeof(err));
	if (r == 0 && check)
		r = config_check_host(&cfg, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "fabmon: %s\n", err);
		r = EXIT_USAGE;
	} else if (check) {
		printf("configuration OK\n");
		r = EXIT_SUCCESS;
	} else {
		r = doctor ? doctor_run(&cfg, stdout) : agent_run(&src, &cfg);
	}
	free_source(&src);
	return r;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	if (!cmd) {
		fputs(main_usage, stderr);
		return EXIT_USAGE;
	}
	if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
		fputs(main_usage, stdout);
		return EXIT_SUCCESS;
	}
	if (strcmp(cmd, "agent") == 0)
		return cmd_agent_or_doctor(argc - 1, argv + 1, 0);
	if (strcmp(cmd, "doctor") == 0)
		return cmd_agent_or_doctor(argc - 1, argv + 1, 1);
	if (strcmp(cmd, "events") == 0)
		return events_main(argc - 1, argv + 1);
	if (strcmp(cmd, "export") == 0)
		return export_main(argc - 1, argv + 1);
	if (strcmp(cmd, "history") == 0)
		return history_main(argc - 1, argv + 1);
	if (strcmp(cmd, "locate") == 0)
		return locate_main(argc - 1, argv + 1);
	if (strcmp(cmd, "ping") == 0)
		return ping_main(argc - 1, argv + 1);
	if (strcmp(cmd, "top") == 0)
		return top_main(argc - 1, argv + 1);
	if (strcmp(cmd, "snapshot") == 0)
		return snapshot_main(argc - 1, argv + 1);
	if (strcmp(cmd, "replay") == 0)
		return replay_main(argc - 1, argv + 1);
	if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
		if (argc > 2 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
			printf("usage: fabmon version\nPrints the version of fabmon.\n");
			return EXIT_SUCCESS;
		}
		if (argc > 2) {
			fprintf(stderr, "usage: fabmon version\n");
			return EXIT_USAGE;
		}
		printf("fabmon %s\n", FABMON_VERSION);
		return EXIT_SUCCESS;
	}
	fprintf(stderr, "fabmon: unknown command '%s'\n%s", cmd, main_usage);
	return EXIT_USAGE;
}
