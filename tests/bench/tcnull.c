/* SPDX-License-Identifier: MIT */
/*
 * tcnull: an empty tc program on both clsact hooks of one interface, the
 * floor under the probe-cost benchmark. With kernel.bpf_stats_enabled the
 * kernel times every run of every program; that timing has a cost of its
 * own, counted in run_time_ns, which an empty program shows alone. On the
 * same packets as fabmon's probe, it tells the probe's own work apart from
 * what any program would be charged.
 *
 * Usage: tcnull DEV SECONDS
 * Prints "ingress_id=N egress_id=M" once both are attached, holds them until
 * SIGTERM/SIGINT or SECONDS, detaches them (and the clsact qdisc, if it made
 * it) and exits; exit status 1 if it could not attach. Each hook gets a
 * program of its own, so that the kernel's counts stay apart.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <net/if.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nullprog.h"

#define TCNULL_HANDLE 0xfa00
#define TCNULL_PRIORITY 0xfa00
#define TCNULL_MAX_S 3600

enum { TCNULL_INGRESS, TCNULL_EGRESS, TCNULL_POINTS };

static const enum bpf_tc_attach_point tcnull_points[TCNULL_POINTS] = { BPF_TC_INGRESS,
								       BPF_TC_EGRESS };

static volatile sig_atomic_t tcnull_stop;

static void on_signal(int sig)
{
	(void)sig;
	tcnull_stop = 1;
}

/* Removes our filter from one hook; errors are of no use to anyone here. */
static void tcnull_detach(int ifindex, int point)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = tcnull_points[point]);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = TCNULL_HANDLE, .priority = TCNULL_PRIORITY);

	(void)bpf_tc_detach(&hook, &opts);
}

int main(int argc, char **argv)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS);
	struct sigaction sa = { .sa_handler = on_signal };
	struct timespec nap = { .tv_nsec = 100 * 1000000L };
	__u32 ids[TCNULL_POINTS] = { 0 };
	int fds[TCNULL_POINTS] = { -1, -1 };
	int attached = 0, created = 0, r = 0;
	unsigned long seconds;
	unsigned ifindex;
	time_t end;
	char *rest;

	if (argc != 3) {
		fprintf(stderr, "usage: tcnull DEV SECONDS\n");
		return 2;
	}
	seconds = strtoul(argv[2], &rest, 10);
	ifindex = if_nametoindex(argv[1]);
	if (*rest || seconds == 0 || seconds > TCNULL_MAX_S || ifindex == 0) {
		fprintf(stderr, "tcnull: bad interface '%s' or duration '%s'\n", argv[1], argv[2]);
		return 2;
	}
	(void)sigaction(SIGTERM, &sa, NULL);
	(void)sigaction(SIGINT, &sa, NULL);
	for (int i = 0; i < TCNULL_POINTS && r >= 0; i++)
		r = fds[i] = nullprog_load("bench_tc_null");
	if (r < 0) {
		fprintf(stderr, "tcnull: unable to load the program: %s\n", strerror(-r));
		goto out;
	}
	hook.ifindex = (int)ifindex;
	/* clsact may be there already (another tool's); then it is not ours to remove */
	r = bpf_tc_hook_create(&hook);
	if (r < 0 && r != -EEXIST) {
		fprintf(stderr, "tcnull: unable to add clsact on '%s': %s\n", argv[1],
			strerror(-r));
		goto out;
	}
	created = r == 0;
	for (; attached < TCNULL_POINTS; attached++) {
		LIBBPF_OPTS(bpf_tc_hook, point, .ifindex = (int)ifindex,
			    .attach_point = tcnull_points[attached]);
		LIBBPF_OPTS(bpf_tc_opts, opts, .prog_fd = fds[attached], .handle = TCNULL_HANDLE,
			    .priority = TCNULL_PRIORITY);

		r = bpf_tc_attach(&point, &opts);
		if (r < 0) {
			fprintf(stderr, "tcnull: unable to attach on '%s': %s\n", argv[1],
				strerror(-r));
			goto out;
		}
		ids[attached] = opts.prog_id;
	}
	printf("ingress_id=%u egress_id=%u\n", ids[TCNULL_INGRESS], ids[TCNULL_EGRESS]);
	fflush(stdout);
	end = time(NULL) + (time_t)seconds;
	while (!tcnull_stop && time(NULL) < end)
		(void)nanosleep(&nap, NULL);
	r = 0;
out:
	while (attached > 0)
		tcnull_detach((int)ifindex, --attached);
	if (created)
		(void)bpf_tc_hook_destroy(&hook);
	for (int i = 0; i < TCNULL_POINTS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return r < 0;
}
