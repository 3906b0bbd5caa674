/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/cli/ping.h"
#include "agent/config.h"
#include "agent/lib/timefmt.h"
#include "collector/mesh/mesh_engine.h"

#define EXIT_USAGE 2

static const char ping_usage[] =
	"usage: fabmon ping [OPTION]... PEER\n"
	"Probes PEER's fabmon mesh responder once on every flow (a fixed UDP source\n"
	"port each, so each flow keeps its ECMP path) and traces each flow's hops with\n"
	"TTL-limited probes of the same 5-tuple. Prints each flow's round trip or its\n"
	"loss, and its hops ('*' where no hop answered). Needs no privilege.\n"
	"\n"
	"  --flows N             flows (source ports), 1..64 (default 8)\n"
	"  --port PORT           the peer's mesh port (default 9479)\n"
	"  --dscp N              DSCP of the probes, 0..63 (default 0)\n"
	"  --timeout DURATION    a probe unanswered this long is lost (default 1s)\n"
	"  -h, --help            this help\n"
	"\n"
	"Exit status: 0 every flow answered, 1 a flow lost or the probe failed,\n"
	"2 usage error.\n";

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Prints the result; returns the number of flows answered. */
static unsigned ping_print(const struct mesh_engine *e, struct mesh_peer *p, unsigned flows,
			   const char *name)
{
	unsigned answered = 0;

	for (unsigned f = 0; f < flows; f++) {
		const struct mesh_flow *fl = &p->flow[f];

		printf("flow %u sport %u: ", f, mesh_engine_flow_port(e, f));
		if (fl->answered) {
			printf("rtt %.3f ms", fl->rtt_last * 1e3);
			answered++;
		} else {
			printf("lost");
		}
		printf("  hops");
		for (unsigned h = 0; h < fl->path.n; h++) {
			char addr[INET_ADDRSTRLEN] = "*";
			struct in_addr a = { htonl(fl->path.hop[h]) };

			if (fl->path.hop[h])
				inet_ntop(AF_INET, &a, addr, sizeof(addr));
			printf(" %s", addr);
		}
		if (!fl->path.n)
			printf(" none answered");
		printf("\n");
	}
	printf("%s: %u flows, %u answered, %u lost", name, flows, answered, flows - answered);
	if (p->answered)
		printf(", rtt avg %.3f ms of which the responder's %.3f ms",
		       (double)p->rtt_sum_ns / (double)p->answered * 1e-6,
		       (double)p->delay_sum_ns / (double)p->answered * 1e-6);
	printf("\n");
	return answered;
}

int ping_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "flows", required_argument, NULL, 'f' },
		{ "port", required_argument, NULL, 'p' },
		{ "dscp", required_argument, NULL, 'd' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_DGRAM }, *res = NULL;
	struct config cfg;
	struct mesh_engine *e = NULL;
	struct mesh_flow flows[MESH_FLOWS_MAX];
	const struct mesh_peer *p;
	struct mesh_peer copy;
	size_t n;
	int64_t timeout_ms = 1000, deadline;
	char why[512], err[256];
	uint32_t addr;
	int c, r = EXIT_USAGE;

	config_defaults(&cfg);
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		const char *key = c == 'f' ? "mesh_flows" : c == 'd' ? "mesh_dscp" : NULL;
		char listen[32];

		if (c == 'h') {
			fputs(ping_usage, stdout);
			return EXIT_SUCCESS;
		}
		if (c == 'p') {
			snprintf(listen, sizeof(listen), ":%.8s", optarg);
			key = "mesh_listen";
		}
		if ((c == 't' && duration_parse(optarg, &timeout_ms) < 0) ||
		    (key &&
		     config_set(&cfg, key, c == 'p' ? listen : optarg, err, sizeof(err)) < 0) ||
		    c == '?') {
			fprintf(stderr, "fabmon ping: bad option%s%s\n%s", c == '?' ? "" : ": ",
				c == '?' ? "" : (c == 't' ? "--timeout" : err), ping_usage);
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "fabmon ping: expected one PEER\n%s", ping_usage);
		return EXIT_USAGE;
	}
	if (getaddrinfo(argv[optind], NULL, &hints, &res) != 0 || !res) {
		fprintf(stderr, "fabmon ping: no IPv4 address for '%s'\n", argv[optind]);
		return EXIT_FAILURE;
	}
	addr = ntohl(((const struct sockaddr_in *)(const void *)res->ai_addr)->sin_addr.s_addr);
	freeaddrinfo(res);
	/* one round: the next would come an interval later */
	cfg.mesh.interval_ms = 2 * timeout_ms + 1000;
	r = mesh_engine_new(&cfg.mesh, 0, &e, why, sizeof(why));
	if (r == 0)
		r = mesh_engine_set_peers(e, &addr, 1);
	if (r < 0) {
		fprintf(stderr, "fabmon ping: %s\n", r == -ENOMEM ? "out of memory" : why);
		r = EXIT_FAILURE;
		goto out;
	}
	deadline = mono_ns() + timeout_ms * 1000000LL;
	while (mono_ns() < deadline)
		mesh_engine_step(e, 20);
	r = EXIT_FAILURE;
	mesh_engine_lock(e);
	p = mesh_engine_peers(e, &n);
	if (n) {
		copy = *p;
		memcpy(flows, p->flow, cfg.mesh.flows * sizeof(flows[0]));
		copy.flow = flows;
	}
	mesh_engine_unlock(e);
	if (!n) {
		fprintf(stderr, "fabmon ping: '%s' is this host\n", argv[optind]);
		goto out;
	}
	/* what is unanswered by now is lost, and the traces end */
	(void)mesh_peer_expire(&copy, cfg.mesh.flows, INT64_MAX, 0);
	r = ping_print(e, &copy, cfg.mesh.flows, argv[optind]) == cfg.mesh.flows ? EXIT_SUCCESS
										 : EXIT_FAILURE;
out:
	mesh_engine_free(e);
	return r;
}
