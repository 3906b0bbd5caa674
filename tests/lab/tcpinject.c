/* SPDX-License-Identifier: MIT */
/*
 * tcpinject: writes one TCP connection entry into the fm_tcp map of the
 * fabmon agent PID, as its tracepoints
 * would have left it: data in flight, no ack progress for WAIT_MS, no event
 * of any kind for QUIET_MS. Lets a test put the collector in front of states
 * that a live kernel reaches only by chance, such as a connection that went
 * away without a close the probes saw.
 *
 * usage: tcpinject PID DADDR WAIT_MS QUIET_MS
 *   the entry is 127.0.0.1:40000 -> DADDR:5201 (IPv4), 100000 bytes in
 *   flight; prints "injected map ID". Needs CAP_BPF (root). Raw bpf(2)
 *   calls: the lab tools link no library.
 */
#include <errno.h>
#include <linux/bpf.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bpf/fabmon.h"

#define TOOL "tcpinject"

static long sys_bpf(enum bpf_cmd cmd, union bpf_attr *attr)
{
	return syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

/* An fd of process pid's map named fm_tcp with fabmon's key and value
 * sizes (its /proc fdinfo names the maps it holds), and its id in *ret_id;
 * -ENOENT if it holds none. */
static int find_map(const char *pid, __u32 *ret_id)
{
	char path[300], line[128];
	struct dirent *de;
	int best = -ENOENT;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%s/fdinfo", pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while (best < 0 && (de = readdir(d))) {
		struct bpf_map_info info;
		union bpf_attr a;
		unsigned id = 0;
		FILE *f;
		int fd;

		snprintf(path, sizeof(path), "/proc/%s/fdinfo/%s", pid, de->d_name);
		f = de->d_name[0] != '.' ? fopen(path, "r") : NULL;
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "map_id: %u", &id) == 1)
				break;
		fclose(f);
		if (!id)
			continue;
		memset(&a, 0, sizeof(a));
		a.map_id = id;
		fd = (int)sys_bpf(BPF_MAP_GET_FD_BY_ID, &a);
		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		memset(&a, 0, sizeof(a));
		a.info.bpf_fd = (__u32)fd;
		a.info.info_len = sizeof(info);
		a.info.info = (__u64)(unsigned long)&info;
		if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a) == 0 && strcmp(info.name, "fm_tcp") == 0 &&
		    info.key_size == sizeof(struct fm_tcp_key) &&
		    info.value_size == sizeof(struct fm_tcp_val)) {
			best = fd;
			*ret_id = id;
		} else {
			close(fd);
		}
	}
	closedir(d);
	return best;
}

int main(int argc, char **argv)
{
	struct fm_tcp_key key = { .sport = 40000, .dport = 5201, .family = FM_FAMILY_IPV4 };
	struct fm_tcp_val val = { .probes = 1, .in_flight = 100000, .snd_una = 1 };
	const __u32 lo = htonl(INADDR_LOOPBACK);
	struct timespec ts;
	union bpf_attr a;
	__u64 now, wait_ns, quiet_ns;
	__u32 id = 0;
	int fd;

	if (argc != 5 || inet_pton(AF_INET, argv[2], key.daddr) != 1) {
		fprintf(stderr, "usage: " TOOL " PID DADDR WAIT_MS QUIET_MS\n");
		return 2;
	}
	memcpy(key.saddr, &lo, sizeof(lo));
	wait_ns = strtoull(argv[3], NULL, 10) * 1000000ull;
	quiet_ns = strtoull(argv[4], NULL, 10) * 1000000ull;
	/* bpf_ktime_get_ns() is CLOCK_MONOTONIC */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
	if (wait_ns >= now || quiet_ns > wait_ns) {
		fprintf(stderr, TOOL ": want QUIET_MS <= WAIT_MS < the time since boot\n");
		return 2;
	}
	val.progress_ns = val.read_ns = now - wait_ns;
	val.last_ns = now - quiet_ns;
	val.snd_wnd = 1u << 20;
	fd = find_map(argv[1], &id);
	if (fd < 0) {
		fprintf(stderr,
			TOOL
			": process %s holds no fm_tcp map (a fabmon agent with the bpf collector?)\n",
			argv[1]);
		return 1;
	}
	memset(&a, 0, sizeof(a));
	a.map_fd = (__u32)fd;
	a.key = (__u64)(unsigned long)&key;
	a.value = (__u64)(unsigned long)&val;
	a.flags = BPF_ANY;
	if (sys_bpf(BPF_MAP_UPDATE_ELEM, &a) < 0) {
		fprintf(stderr, TOOL ": map %u: %s\n", id, strerror(errno));
		return 1;
	}
	printf("injected map %u\n", id);
	close(fd);
	return 0;
}
