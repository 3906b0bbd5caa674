/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "suites.h"
#include "testutil.h"

#include "agent/config.h"
#include "collector/mesh/mesh_engine.h"

/* The agent's defaults with these changes. */
static struct mesh_conf conf_with(const char *listen, const char *allow, unsigned source_pps)
{
	struct config cfg;

	config_defaults(&cfg);
	snprintf(cfg.mesh.listen, sizeof(cfg.mesh.listen), "%s", listen);
	snprintf(cfg.mesh.allow, sizeof(cfg.mesh.allow), "%s", allow);
	cfg.mesh.source_pps = source_pps;
	cfg.mesh.flows = 4;
	return cfg.mesh;
}

static struct mesh_engine *engine(const struct mesh_conf *conf, int respond)
{
	struct mesh_engine *e = NULL;
	char why[256] = "";

	ck_assert_msg(mesh_engine_new(conf, respond, &e, why, sizeof(why)) == 0, "%s", why);
	return e;
}

/* A plain UDP socket on addr, port 0. */
static int client(const char *addr)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	ck_assert_int_ge(fd, 0);
	inet_pton(AF_INET, addr, &sa.sin_addr);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static void send_to(int fd, const char *addr, unsigned port, const void *buf, size_t len)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, addr, &sa.sin_addr);
	ck_assert_int_eq(sendto(fd, buf, len, 0, (struct sockaddr *)&sa, sizeof(sa)), (ssize_t)len);
}

static void send_probe(int fd, unsigned port, uint32_t seq)
{
	struct mesh_msg m = { .type = MESH_PROBE, .seq = seq, .send_ns = 42 };
	uint8_t buf[MESH_WIRE_LEN];

	mesh_wire_encode(&m, buf);
	send_to(fd, "127.0.0.1", port, buf, sizeof(buf));
}

static ssize_t recv_now(int fd, void *buf, size_t len)
{
	return recv(fd, buf, len, MSG_DONTWAIT);
}

static struct mesh_responder_stats responder_stats(struct mesh_engine *e)
{
	struct mesh_responder_stats s;

	mesh_engine_lock(e);
	s = *mesh_engine_responder(e);
	mesh_engine_unlock(e);
	return s;
}

/* A probe from a source that is neither a target nor in mesh_allow is
 * refused, counted, and draws nothing back. */
START_TEST(test_refuses_unknown_source)
{
	struct mesh_conf conf = conf_with("127.0.0.1:0", "10.0.0.0/8", 100);
	struct mesh_engine *r = engine(&conf, 1);
	int fd = client("127.0.0.1");
	uint8_t buf[64];

	send_probe(fd, mesh_engine_port(r), 1);
	mesh_engine_step(r, 50);
	ck_assert_uint_eq(responder_stats(r).refused_source, 1);
	ck_assert_uint_eq(responder_stats(r).answered, 0);
	ck_assert_int_lt(recv_now(fd, buf, sizeof(buf)), 0);
	close(fd);
	mesh_engine_free(r);
}
END_TEST

/* Truncated, oversized and non-probe datagrams are refused; a probe is
 * answered with a reply of its own size holding the responder's times. */
START_TEST(test_malformed_and_answer)
{
	struct mesh_conf conf = conf_with("127.0.0.1:0", "127.0.0.0/8", 100);
	struct mesh_engine *r = engine(&conf, 1);
	int fd = client("127.0.0.1");
	unsigned port = mesh_engine_port(r);
	struct mesh_msg m = { .type = MESH_REPLY, .seq = 5 };
	uint8_t buf[200] = { 0 };
	ssize_t n;

	mesh_wire_encode(&m, buf);
	send_to(fd, "127.0.0.1", port, buf, 20);
	send_to(fd, "127.0.0.1", port, buf, sizeof(buf));
	send_to(fd, "127.0.0.1", port, buf, MESH_WIRE_LEN); /* a reply, not a probe */
	send_probe(fd, port, 77);
	mesh_engine_step(r, 50);
	ck_assert_uint_eq(responder_stats(r).refused_malformed, 3);
	ck_assert_uint_eq(responder_stats(r).answered, 1);
	n = recv_now(fd, buf, sizeof(buf));
	ck_assert_int_eq(n, MESH_WIRE_LEN);
	ck_assert_int_eq(mesh_wire_decode(buf, (size_t)n, &m), 0);
	ck_assert_int_eq(m.type, MESH_REPLY);
	ck_assert_uint_eq(m.seq, 77);
	ck_assert_uint_eq(m.send_ns, 42);
	ck_assert_uint_gt(m.rx_ns, 0);
	ck_assert_uint_ge(m.tx_ns, m.rx_ns);
	ck_assert_int_lt(recv_now(fd, buf, sizeof(buf)), 0);
	close(fd);
	mesh_engine_free(r);
}
END_TEST

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A flood from one source is answered at its rate and no faster. */
START_TEST(test_flood_is_rate_limited)
{
	struct mesh_conf conf = conf_with("127.0.0.1:0", "127.0.0.0/8", 10);
	struct mesh_engine *r = engine(&conf, 1);
	int fd = client("127.0.0.1");
	double t0 = mono_s();
	struct mesh_responder_stats s;

	/* in bursts the socket's buffer holds */
	for (int burst = 0; burst < 20; burst++) {
		for (int i = 0; i < 100; i++)
			send_probe(fd, mesh_engine_port(r), (uint32_t)(burst * 100 + i));
		for (int i = 0; i < 3; i++)
			mesh_engine_step(r, 1);
	}
	s = responder_stats(r);
	ck_assert_uint_le(s.answered, 10 + (unsigned)((mono_s() - t0) * 10) + 1);
	ck_assert_uint_ge(s.rate_limited, 1500);
	close(fd);
	mesh_engine_free(r);
}
END_TEST

/* While a flood comes in, the engine's thread never holds its state for
 * long: the agent's tick, which reads it under the lock, is not delayed. */
START_TEST(test_flood_does_not_hold_the_tick)
{
	struct mesh_conf conf = conf_with("127.0.0.1:0", "127.0.0.0/8", 10);
	struct mesh_engine *r = engine(&conf, 1);
	char why[256];
	double worst = 0, end;
	int go[2];
	char c = 0;
	pid_t child;

	/* the flooder forks before the engine's thread starts: a child forked
	 * while another thread holds a lock (the sanitizers' allocator's) can
	 * wait on it for ever; it starts once told */
	ck_assert_int_eq(pipe(go), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		int fd = client("127.0.0.1");

		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		end = mono_s() + 1.5;
		for (uint32_t i = 0; mono_s() < end; i++)
			send_probe(fd, mesh_engine_port(r), i);
		_exit(0);
	}
	close(go[0]);
	ck_assert_int_eq(mesh_engine_start(r, why, sizeof(why)), 0);
	ck_assert_int_eq(write(go[1], &c, 1), 1);
	close(go[1]);
	end = mono_s() + 1.0;
	while (mono_s() < end) {
		double t = mono_s();

		mesh_engine_lock(r);
		mesh_engine_unlock(r);
		if (mono_s() - t > worst)
			worst = mono_s() - t;
		usleep(1000);
	}
	ck_assert_int_eq(waitpid(child, NULL, 0), child);
	ck_assert_uint_gt(responder_stats(r).rate_limited, 1000);
	/* a turn reads at most 64 datagrams a socket, well under a ms; an
	 * engine that drained the flood under its lock would hold it for the
	 * flood's 1.5 s. The bound leaves room for a loaded machine's
	 * preemption of the lock's holder: a quarter of the default tick. */
	ck_assert_msg(worst < 0.25, "the tick waited %.3f s for the mesh's lock", worst);
	mesh_engine_free(r);
}
END_TEST

/* A sender and a responder over loopback: every flow answered, each flow's
 * path found (the peer itself, one hop away). */
START_TEST(test_probe_every_flow)
{
	struct mesh_conf rc = conf_with(":0", "127.0.0.0/8", 100), sc;
	struct mesh_engine *r = engine(&rc, 1), *s;
	uint32_t peer = 0x7f000002; /* 127.0.0.2: not one of this host's own addresses */
	const struct mesh_peer *p;
	struct mesh_flow flows[4];
	struct mesh_peer copy;
	char listen[32];
	size_t n;

	snprintf(listen, sizeof(listen), ":%u", mesh_engine_port(r));
	sc = conf_with(listen, "", 100);
	s = engine(&sc, 0);
	ck_assert_int_eq(mesh_engine_set_peers(s, &peer, 1), 0);
	for (int i = 0; i < 50; i++) {
		mesh_engine_step(s, 2);
		mesh_engine_step(r, 2);
	}
	mesh_engine_lock(s);
	p = mesh_engine_peers(s, &n);
	ck_assert_uint_eq(n, 1);
	copy = *p;
	memcpy(flows, p->flow, sizeof(flows));
	copy.flow = flows;
	ck_assert_uint_eq(mesh_engine_stats(s)->replies_invalid, 0);
	mesh_engine_unlock(s);
	(void)mesh_peer_expire(&copy, 4, INT64_MAX, 0);
	ck_assert_uint_eq(copy.sent, 4);
	ck_assert_uint_eq(copy.answered, 4);
	ck_assert_uint_eq(copy.lost, 0);
	for (unsigned f = 0; f < 4; f++) {
		ck_assert_uint_eq(copy.flow[f].answered, 1);
		ck_assert_uint_eq(copy.flow[f].path.n, 1);
		ck_assert_uint_eq(copy.flow[f].path.hop[0], peer);
		ck_assert_uint_ne(mesh_engine_flow_port(s, f), 0);
	}
	mesh_engine_free(s);
	mesh_engine_free(r);
}
END_TEST

/* A reply with a sequence number no probe carried is not an answer. */
START_TEST(test_wrong_sequence_reply)
{
	int fake = client("127.0.0.2");
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	struct mesh_conf sc;
	struct mesh_engine *s;
	uint32_t peer = 0x7f000002;
	char listen[32];
	uint8_t buf[64];
	unsigned replied = 0;
	size_t n;

	ck_assert_int_eq(getsockname(fake, (struct sockaddr *)&sa, &len), 0);
	snprintf(listen, sizeof(listen), ":%u", ntohs(sa.sin_port));
	sc = conf_with(listen, "", 100);
	s = engine(&sc, 0);
	ck_assert_int_eq(mesh_engine_set_peers(s, &peer, 1), 0);
	mesh_engine_step(s, 2);
	usleep(20000);
	for (int i = 0; i < 100; i++) {
		struct sockaddr_in from;
		socklen_t flen = sizeof(from);
		struct mesh_msg m;
		ssize_t got = recvfrom(fake, buf, sizeof(buf), MSG_DONTWAIT,
				       (struct sockaddr *)&from, &flen);

		if (got < 0)
			break;
		if (mesh_wire_decode(buf, (size_t)got, &m) < 0 || m.ttl)
			continue;
		m.type = MESH_REPLY;
		m.seq += 1000;
		mesh_wire_encode(&m, buf);
		ck_assert_int_eq(
			sendto(fake, buf, MESH_WIRE_LEN, 0, (struct sockaddr *)&from, flen),
			MESH_WIRE_LEN);
		replied++;
	}
	ck_assert_uint_eq(replied, 4);
	mesh_engine_step(s, 20);
	mesh_engine_lock(s);
	ck_assert_uint_eq(mesh_engine_stats(s)->replies_invalid, 4);
	ck_assert_uint_eq(mesh_engine_peers(s, &n)->answered, 0);
	mesh_engine_unlock(s);
	mesh_engine_free(s);
	close(fake);
}
END_TEST

Suite *mesh_engine_suite(void)
{
	const struct testutil_case cases[] = {
		{ "refuses_unknown_source", test_refuses_unknown_source, 20 },
		{ "malformed_and_answer", test_malformed_and_answer, 20 },
		{ "flood_is_rate_limited", test_flood_is_rate_limited, 20 },
		{ "flood_does_not_hold_the_tick", test_flood_does_not_hold_the_tick, 20 },
		{ "probe_every_flow", test_probe_every_flow, 20 },
		{ "wrong_sequence_reply", test_wrong_sequence_reply, 20 },
	};

	return TESTUTIL_SUITE("mesh_engine", cases);
}
