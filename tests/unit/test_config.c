/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/config.h"
#include "agent/daemon/reload.h"
#include "agent/lib/file_read.h"
#include "agent/lib/timefmt.h"
#include "suites.h"
#include "testutil.h"

static const char *write_conf(const char *text)
{
	static char path[64];
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "/tmp/fabmon-conf-XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
	return path;
}

START_TEST(test_durations)
{
	int64_t ms;

	ck_assert_int_eq(duration_parse("1s", &ms), 0);
	ck_assert_int_eq(ms, 1000);
	ck_assert_int_eq(duration_parse("100ms", &ms), 0);
	ck_assert_int_eq(ms, 100);
	ck_assert_int_eq(duration_parse("48h", &ms), 0);
	ck_assert_int_eq(ms, 48LL * 3600000);
	ck_assert_int_eq(duration_parse("1.5m", &ms), 0);
	ck_assert_int_eq(ms, 90000);
	ck_assert_int_eq(duration_parse("2", &ms), 0);
	ck_assert_int_eq(ms, 2000);
	ck_assert_int_eq(duration_parse("fast", &ms), -EINVAL);
	ck_assert_int_eq(duration_parse("-1s", &ms), -EINVAL);
	ck_assert_int_eq(duration_parse("1 parsec", &ms), -EINVAL);
}
END_TEST

START_TEST(test_listen)
{
	char host[64];
	unsigned port;

	ck_assert_int_eq(config_parse_listen(":9478", host, sizeof(host), &port), 0);
	ck_assert_str_eq(host, "");
	ck_assert_uint_eq(port, 9478);
	ck_assert_int_eq(config_parse_listen("127.0.0.1:80", host, sizeof(host), &port), 0);
	ck_assert_str_eq(host, "127.0.0.1");
	ck_assert_int_eq(config_parse_listen("[::1]:9478", host, sizeof(host), &port), 0);
	ck_assert_str_eq(host, "::1");
	ck_assert_int_eq(config_parse_listen("9478", host, sizeof(host), &port), -EINVAL);
	ck_assert_int_eq(config_parse_listen("::1:9478", host, sizeof(host), &port), -EINVAL);
	ck_assert_int_eq(config_parse_listen("h:70000", host, sizeof(host), &port), -EINVAL);
}
END_TEST

START_TEST(test_file_ok)
{
	struct config_source src = { .path = write_conf("# comment\n[agent]\ninterval = 250ms\n"
							"listen = 127.0.0.1:1234\n"
							"collectors = netdev, rdma\n"
							"roce_pmtu = 1024\n"),
				     .path_explicit = 1 };
	struct config cfg;
	char err[512];

	src.flags[0].key = "interval";
	src.flags[0].value = "2s";
	src.nflags = 1;
	ck_assert_int_eq(config_build(&src, &cfg, err, sizeof(err)), 0);
	ck_assert_int_eq(cfg.interval_ms, 2000); /* the flag wins */
	ck_assert_str_eq(cfg.listen, "127.0.0.1:1234");
	ck_assert_uint_eq(cfg.roce_pmtu, 1024);
	unlink(src.path);
}
END_TEST

START_TEST(test_file_errors)
{
	const struct {
		const char *text;
		const char *want;
	} bad[] = {
		{ "[agent]\n\nspeed = 3\n", ":3: unknown key 'speed'" },
		{ "[agent]\ninterval = soon\n",
		  ":2: bad value 'soon' for 'interval': expected a duration" },
		{ "[agent]\ninterval = 10ms\n", "expected a duration from 100ms" },
		{ "[agnet]\ndb = x\n", ":2: unknown section [agnet]" },
		{ "[agent]\nthis is not ini\n", ":2: syntax error" },
		{ "[agent]\ncollectors = netdev,bogus\n",
		  ":2: bad value 'netdev,bogus' for 'collectors'" },
		{ "[agent]\ncollectors = netdev,bogus\n", "topology, mesh (no collector 'bogus')" },
		{ "[agent]\nmesh_allow = 198.18.0.0/40\n",
		  ":2: bad value '198.18.0.0/40' for 'mesh_allow': expected a comma-separated list of "
		  "IPv4 CIDRs" },
		{ "[agent]\nmesh_peers = 198.18.0.0/15\n",
		  "bad value '198.18.0.0/15' for 'mesh_peers'" },
		{ "[agent]\nmesh_flows = 65\n", "bad value '65' for 'mesh_flows'" },
		{ "[agent]\ninterfaces = eth(\n",
		  ":2: bad value 'eth(' for 'interfaces': expected a POSIX" },
		{ "[agent]\nmax_series = -5\n", "bad value '-5' for 'max_series'" },
		{ "[agent]\nstall_read_after = 300ms\n",
		  ":2: key 'stall_read_after' was removed: a reader that stops is a host_stall" },
		/* IBTA path MTUs are powers of two from 256 to 4096 */
		{ "[agent]\nroce_pmtu = 1500\n",
		  ":2: bad value '1500' for 'roce_pmtu': expected a power of two from 256 to 4096" },
		{ "[agent]\nroce_pmtu = 8192\n", "bad value '8192' for 'roce_pmtu'" },
		{ "[agent]\nroce_pmtu = 128\n", "bad value '128' for 'roce_pmtu'" },
		{ "[agent]\ninterval = 1s\n\ninterval = 2s\n",
		  ":4: duplicate key 'interval' (first at " },
		{ "[agent]\ninterval = 1s\n\ninterval = 2s\n", ":2): expected each key once" },
	};
	struct config cfg;
	char err[512];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct config_source src = { .path = write_conf(bad[i].text), .path_explicit = 1 };

		ck_assert_int_eq(config_build(&src, &cfg, err, sizeof(err)), -EINVAL);
		ck_assert_msg(strstr(err, bad[i].want) && strstr(err, src.path), "%zu: '%s'", i,
			      err);
		unlink(src.path);
	}
}
END_TEST

START_TEST(test_missing)
{
	struct config_source src = { .path = "/nonexistent/fabmon.conf", .path_explicit = 1 };
	struct config cfg;
	char err[512];

	ck_assert_int_eq(config_build(&src, &cfg, err, sizeof(err)), -ENOENT);
	ck_assert(strstr(err, "unable to open '/nonexistent/fabmon.conf'"));
	src.path_explicit = 0; /* the default path may be absent */
	ck_assert_int_eq(config_build(&src, &cfg, err, sizeof(err)), 0);
	ck_assert_int_eq(cfg.interval_ms, 1000);
	ck_assert_str_eq(cfg.listen, ":9478");
	ck_assert_str_eq(cfg.db_path, "/var/lib/fabmon/fabmon.db");
	ck_assert_uint_eq(cfg.roce_pmtu, 4096);
}
END_TEST

START_TEST(test_shipped_config)
{
	struct config_source src = { .path = "packaging/fabmon.conf", .path_explicit = 1 };
	struct config cfg;
	char err[512];

	ck_assert_msg(config_build(&src, &cfg, err, sizeof(err)) == 0, "%s", err);
}
END_TEST

/* Another sysfs_root leaves bpf and pcap off, unless collectors names them
 * (the default list too, as the shipped config and the DaemonSet write it). */
START_TEST(test_sysfs_root_collectors)
{
	struct config_source src = { .path = "/nonexistent/fabmon.conf" };
	struct config cfg;
	char err[512];

	src.flags[src.nflags].key = "sysfs_root";
	src.flags[src.nflags++].value = "/tmp";
	ck_assert_int_eq(config_build(&src, &cfg, err, sizeof(err)), 0);
	ck_assert_str_eq(cfg.collectors, "netdev,ethtool,rdma,qdisc,pressure,topology");
	ck_assert_int_eq(cfg.host_collectors_off, 1);
	src.flags[src.nflags].key = "collectors";
	src.flags[src.nflags++].value = "netdev,bpf";
	ck_assert_int_eq(config_build(&src, &cfg, err, sizeof(err)), 0);
	ck_assert_str_eq(cfg.collectors, "netdev,bpf");
	ck_assert_int_eq(cfg.host_collectors_off, 0);
	src.nflags = 1;
	src.path = write_conf("[agent]\ncollectors = netdev,ethtool,rdma,qdisc,bpf,pcap\n");
	ck_assert_int_eq(config_build(&src, &cfg, err, sizeof(err)), 0);
	ck_assert_str_eq(cfg.collectors, "netdev,ethtool,rdma,qdisc,bpf,pcap");
	ck_assert_int_eq(cfg.host_collectors_off, 0);
	unlink(src.path);
	src.path = "/nonexistent/fabmon.conf";
	src.flags[0].value = "/sys";
	ck_assert_int_eq(config_build(&src, &cfg, err, sizeof(err)), 0);
	ck_assert_str_eq(cfg.collectors,
			 "netdev,ethtool,rdma,qdisc,pressure,bpf,pcap,sockets,topology");
	ck_assert_int_eq(cfg.host_collectors_off, 0);
}
END_TEST

/* Probing is off until it has targets, and on once it has, unless
 * collectors says otherwise. */
START_TEST(test_mesh_on_with_targets)
{
	struct config_source src = { .path = "/nonexistent/fabmon.conf" };
	struct config cfg;
	char err[512];

	ck_assert_int_eq(config_build(&src, &cfg, err, sizeof(err)), 0);
	ck_assert_ptr_null(strstr(cfg.collectors, "mesh"));
	ck_assert_str_eq(cfg.mesh.listen, ":9479");
	ck_assert_uint_eq(cfg.mesh.flows, 8);
	src.flags[src.nflags].key = "mesh_peers";
	src.flags[src.nflags++].value = "198.18.1.2,198.18.1.3";
	ck_assert_int_eq(config_build(&src, &cfg, err, sizeof(err)), 0);
	ck_assert_str_eq(cfg.collectors,
			 "netdev,ethtool,rdma,qdisc,pressure,bpf,pcap,sockets,topology,mesh");
	src.flags[src.nflags].key = "collectors";
	src.flags[src.nflags++].value = "netdev";
	ck_assert_int_eq(config_build(&src, &cfg, err, sizeof(err)), 0);
	ck_assert_str_eq(cfg.collectors, "netdev");
}
END_TEST

/* A FIFO or a directory is refused before a byte is read (a FIFO would
 * block until a writer came), a file over the bound as such. */
START_TEST(test_file_read)
{
	char path[] = "/tmp/fabmon-fifo-XXXXXX", *text = NULL;
	const char *big;
	size_t len;
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(path));
	ck_assert_int_eq(file_read(path, &text, &len), -EINVAL);
	ck_assert_str_eq(file_read_strerror(-EINVAL), "not a regular file");
	ck_assert_int_eq(rmdir(path), 0);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert_int_eq(file_read(path, &text, &len), -EINVAL);
	ck_assert_int_eq(unlink(path), 0);
	big = write_conf("");
	f = fopen(big, "w");
	ck_assert_int_eq(fseek(f, FILE_READ_MAX, SEEK_SET), 0);
	fputc('x', f);
	fclose(f);
	ck_assert_int_eq(file_read(big, &text, &len), -EFBIG);
	ck_assert_int_eq(truncate(big, 3), 0);
	ck_assert_int_eq(file_read(big, &text, &len), 0);
	ck_assert_uint_eq(len, 3);
	ck_assert_int_eq(text[3], '\0');
	free(text);
	unlink(big);
}
END_TEST

/* Waits (5 s at most) for the reload thread's result and takes it. */
static int reload_wait(struct reload *r, struct config *cfg, char *err, size_t len)
{
	struct pollfd p = { .fd = reload_fd(r), .events = POLLIN };

	ck_assert_int_eq(poll(&p, 1, 5000), 1);
	return reload_take(r, cfg, err, len);
}

/* SIGHUP's read: in a thread, taken once; a FIFO refused at once; a
 * request during a read drops that read for a fresh one. */
START_TEST(test_reload)
{
	struct config_source src = { .path_explicit = 1 };
	struct reload *r;
	struct config cfg;
	char path[64], err[512];

	snprintf(path, sizeof(path), "%s", write_conf("[agent]\ninterval = 250ms\n"));
	src.path = path;
	r = reload_new(&src);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(reload_take(r, &cfg, err, sizeof(err)), 0);
	reload_request(r);
	ck_assert_int_eq(reload_wait(r, &cfg, err, sizeof(err)), 1);
	ck_assert_int_eq(cfg.interval_ms, 250);
	ck_assert_int_eq(reload_take(r, &cfg, err, sizeof(err)), 0);
	reload_request(r);
	reload_request(r);
	ck_assert_int_eq(reload_wait(r, &cfg, err, sizeof(err)), 0);
	ck_assert_int_eq(reload_wait(r, &cfg, err, sizeof(err)), 1);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	reload_request(r);
	ck_assert_int_eq(reload_wait(r, &cfg, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "not a regular file"), "%s", err);
	reload_free(r);
	unlink(path);
}
END_TEST

Suite *config_suite(void)
{
	const struct testutil_case cases[] = {
		{ "durations", test_durations, 0 },
		{ "listen", test_listen, 0 },
		{ "file_ok", test_file_ok, 0 },
		{ "file_errors", test_file_errors, 0 },
		{ "missing", test_missing, 0 },
		{ "shipped_config", test_shipped_config, 0 },
		{ "sysfs_root_collectors", test_sysfs_root_collectors, 0 },
		{ "mesh_on_with_targets", test_mesh_on_with_targets, 0 },
		{ "file_read", test_file_read, 0 },
		{ "reload", test_reload, 0 },
	};

	return TESTUTIL_SUITE("config", cases);
}
