/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/cli/replay.h"
#include "agent/cli/replay_tick.h"
#include "agent/config.h"
#include "agent/lib/clock.h"
#include "agent/lib/strbuf.h"
#include "agent/lib/timefmt.h"
#include "collector/pcap/capfile.h"
#include "collector/pcap/capture.h"

#define EXIT_USAGE 2
/* Frames whose parse failed that are named one by one; the rest are counted. */
#define REPLAY_PROBLEMS_MAX 10
/* Entries of each table (flows, QPs); a capture with more counts the rest
 * in flows_full / qps_full. */
#define REPLAY_MAX_ENTRIES_DEFAULT 1000000u
/* A progress line on a terminal for files this large, this often. */
#define REPLAY_PROGRESS_BYTES (64LL << 20)
#define REPLAY_PROGRESS_S 0.25
#define REPLAY_READ_BUFFER (4 << 20)

static const char replay_usage[] =
	"usage: fabmon replay [OPTION]... FILE\n"
	"Reads a capture file (pcap or pcapng; Ethernet, Linux cooked SLL or SLL2) as\n"
	"fast as it can and counts its traffic the way the agent's tc probe does:\n"
	"per RoCEv2 queue pair (operation classes, CNPs, AETH ACKs and NAKs, ECN CE,\n"
	"PSN gaps, duplicates and late PSNs with 24-bit wrap) and per peer address;\n"
	"and its PFC and PAUSE frames per priority, with the pause time they asked\n"
	"and, given the link's speed, the time they paused it.\n"
	"\n"
	"Then it runs the agent's detectors in the capture's own time, a tick every\n"
	"--interval of packet time, and lists the events they raised.\n"
	"\n"
	"  --json                 one JSON object on stdout instead of tables\n"
	"  --interval DURATION    tick length in capture time, 100ms to 1h (default 1s)\n"
	"  --db PATH              also store each tick's series and the events in this\n"
	"                         SQLite database, stamped with capture time\n"
	"  --config FILE          detector thresholds and hysteresis, and roce_pmtu, from\n"
	"                         the agent's config file (default: built-in defaults)\n"
	"  --max-entries N        flows and queue pairs kept (default 1000000)\n"
	"  --link-speed MBPS      the captured link's speed in Mb/s (as its\n"
	"                         /sys/class/net/IF/speed gives it, e.g. 100000): PFC and\n"
	"                         PAUSE frames ask a pause in bit times, so the time\n"
	"                         paused, and pfc_storm, need it (default: unknown)\n"
	"  -q, --quiet            no progress line on stderr\n"
	"  -h, --help             this help\n"
	"\n"
	"Frames that do not parse (cut by the snap length, garbage headers), and UDP\n"
	"4791 frames cut before their BTH, AETH or RETH, are counted and the first ten named\n"
	"by packet number. Where the timestamps step back (captures concatenated), the\n"
	"summary says how often; the detectors' clock never goes back.\n"
	"Exit status: 0 the whole file was read, 1 it could not be read or broke\n"
	"part-way (what came before is reported, with the packet where it broke),\n"
	"2 usage error.\n";

struct problem {
	uint64_t packet; /* 1-based, as tshark numbers frames */
	char why[160];
};

/* One address's share of the capture: what it sent and what it received. */
struct peer_key {
	uint8_t family;
	uint8_t pad[3];
	uint8_t addr[16];
};

struct peer_totals {
	uint64_t tx_packets, tx_bytes, rx_packets, rx_bytes;
	uint64_t rx_ce; /* CE-marked packets that reached it */
	uint64_t cnps_sent; /* it told a sender to slow down: it is a congested receiver */
	uint64_t roce_rx_bytes;
};

struct replay {
	const char *file;
	int json, quiet;
	unsigned max_entries;
	/* the file: read by capfile if it is plain pcap, else by libpcap */
	struct capfile *cf;
	pcap_t *pcap;
	char *iobuf; /* libpcap's stdio buffer */
	int linktype;
	struct capture *cap;
	uint64_t min_ns, max_ns; /* the capture's span, as capinfos gives it */
	uint64_t end_at; /* the last packet's time on the detectors' clock */
	struct problem problems[REPLAY_PROBLEMS_MAX];
	unsigned nproblems;
	int broken; /* the file broke part-way */
	char broken_why[PCAP_ERRBUF_SIZE + 64];
	struct kmap *peers;
	struct config cfg; /* thresholds, interval, db */
	int db;
	struct replay_ticks *ticks;
};

static const char *link_name(int linktype)
{
	switch (linktype) {
	case PACKET_LINK_ETHERNET:
		return "Ethernet";
	case PACKET_LINK_LINUX_SLL:
		return "Linux cooked (SLL)";
	case PACKET_LINK_LINUX_SLL2:
		return "Linux cooked (SLL2)";
	}
	return "unsupported";
}

static void addr_str(uint8_t family, const uint8_t *addr, char *buf, size_t len)
{
	if (!inet_ntop(family == FM_FAMILY_IPV4 ? AF_INET : AF_INET6, addr, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

static void progress(struct replay *r, uint64_t packets, long long size, int done)
{
	FILE *f = r->pcap ? pcap_file(r->pcap) : NULL;
	long long pos = r->cf ? capfile_offset(r->cf) : f ? ftell(f) : -1;

	if (done) {
		fputs("\r\033[K", stderr);
		return;
	}
	if (pos >= 0)
		fprintf(stderr, "\rreplay: %3lld%% %llu packets", pos * 100 / size,
			(unsigned long long)packets);
}

/* The next record of the file: 1, 0 at its end, or -EIO where it breaks. */
static int replay_next(struct replay *r, struct pcap_pkthdr *ret_hdr, const u_char **ret_data)
{
	struct pcap_pkthdr *h;
	int rc;

	if (r->cf)
		return capfile_next(r->cf, ret_hdr, ret_data);
	rc = pcap_next_ex(r->pcap, &h, ret_data);
	if (rc == 1)
		*ret_hdr = *h;
	return rc == 1 ? 1 : rc == PCAP_ERROR_BREAK ? 0 : -EIO;
}

/* Reads every record; returns 0, or -EIO if the file broke part-way. */
static int replay_read(struct replay *r)
{
	struct pcap_pkthdr hdr, *h = &hdr;
	const u_char *data;
	struct packet pkt;
	const char *why;
	struct stat st;
	long long size = stat(r->file, &st) == 0 ? (long long)st.st_size : 0;
	/* on a terminal only: a log or a pipe gets the result, not a bar */
	int show = !r->quiet && isatty(STDERR_FILENO) && size >= REPLAY_PROGRESS_BYTES;
	double next_progress = clock_mono_s();
	uint64_t n = 0;
	int rc;

	while ((rc = replay_next(r, h, &data)) == 1) {
		/* nanoseconds: capfile gives them, and libpcap opened with PCAP_TSTAMP_PRECISION_NANO */
		uint64_t ts = (uint64_t)h->ts.tv_sec * 1000000000ULL + (uint64_t)h->ts.tv_usec;
		uint64_t at;

		n++;
		if (n == 1 || ts < r->min_ns)
			r->min_ns = ts;
		if (ts > r->max_ns)
			r->max_ns = ts;
		at = replay_ticks_advance(r->ticks, r->cap, ts);
		r->end_at = at;
		/* a frame cut before its BTH, AETH or RETH is counted, and named too */
		if ((capture_packet(r->cap, 0, r->linktype, data, h->caplen, h->len, at, &pkt,
				    &why) < 0 ||
		     pkt.roce_unparsed) &&
		    r->nproblems < REPLAY_PROBLEMS_MAX) {
			r->problems[r->nproblems].packet = n;
			snprintf(r->problems[r->nproblems].why, sizeof(r->problems[0].why),
				 "%s (%u of %u bytes captured)", why, h->caplen, h->len);
			r->nproblems++;
		}
		if (show && !(n & 0xffff) && clock_mono_s() >= next_progress) {
			progress(r, n, size, 0);
			next_progress = clock_mono_s() + REPLAY_PROGRESS_S;
		}
	}
	if (show)
		progress(r, n, size, 1);
	replay_ticks_finish(r->ticks, r->cap);
	if (rc == 0)
		return 0;
	r->broken = 1;
	snprintf(r->broken_why, sizeof(r->broken_why), "packet %llu: %s", (unsigned long long)n + 1,
		 r->cf ? capfile_error(r->cf) : pcap_geterr(r->pcap));
	return -EIO;
}

/* The totals of one address (made zero on first use), or NULL if full. */
static struct peer_totals *peer_at(struct replay *r, uint8_t family, const uint8_t *addr)
{
	struct peer_key pk;
	int created;

	memset(&pk, 0, sizeof(pk));
	pk.family = family;
	memcpy(pk.addr, addr, sizeof(pk.addr));
	return kmap_put(r->peers, &pk, &created);
}

/* Adds one flow to its two ends' totals. */
static int peer_add_flow(const void *key, void *val, void *arg)
{
	const struct fm_flow_key *k = key;
	const struct fm_flow_val *v = val;
	struct peer_totals *t;

	if ((t = peer_at(arg, k->family, k->saddr))) {
		t->tx_packets += v->packets;
		t->tx_bytes += v->bytes;
	}
	if ((t = peer_at(arg, k->family, k->daddr))) {
		t->rx_packets += v->packets;
		t->rx_bytes += v->bytes;
		t->rx_ce += v->ce;
		if (k->proto == IPPROTO_UDP && k->dport == ROCE_UDP_PORT)
			t->roce_rx_bytes += v->bytes;
	}
	return 1;
}

/* Adds one QP's CNPs to the address that sent them. */
static int peer_add_qp(const void *key, void *val, void *arg)
{
	const struct fm_qp_key *k = key;
	const struct fm_qp_val *v = val;
	struct peer_totals *t = peer_at(arg, k->family, k->saddr);

	if (t)
		t->cnps_sent += v->by_class[ROCE_CLASS_CNP];
	return 1;
}

/* A table's entries as an array, sorted by bytes (most first), then by key
 * (addresses, QP number), so that the same file always prints the same. */
struct row {
	const void *key;
	const void *val;
	uint64_t bytes;
	size_t key_size;
};

struct rows {
	struct row *v;
	size_t n, max;
	size_t bytes_off; /* offset of the uint64_t bytes field in a value */
	size_t key_size;
};

static int rows_add(const void *key, void *val, void *arg)
{
	struct rows *rs = arg;

	if (rs->n < rs->max)
		rs->v[rs->n++] = (struct row){ key, val,
					       *(const uint64_t *)(const void *)((const char *)val +
										 rs->bytes_off),
					       rs->key_size };
	return 1;
}

static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	return memcmp(x->key, y->key, x->key_size);
}

static int rows_of(struct kmap *m, size_t key_size, size_t bytes_off, struct rows *rs)
{
	rs->max = kmap_count(m);
	rs->n = 0;
	rs->bytes_off = bytes_off;
	rs->key_size = key_size;
	rs->v = calloc(rs->max ? rs->max : 1, sizeof(*rs->v));
	if (!rs->v)
		return -ENOMEM;
	kmap_sweep(m, rows_add, rs);
	qsort(rs->v, rs->n, sizeof(*rs->v), row_cmp);
	return 0;
}

/* The QP counters the output names, in order. */
static const struct {
	const char *name;
	size_t off;
} qp_fields[] = {
#define QP_FIELD(name, f)                                                                          \
	{                                                                                          \
		name, offsetof(struct fm_qp_val, f)                                                \
	}
	QP_FIELD("packets", packets),
	QP_FIELD("bytes", bytes),
	QP_FIELD("send", by_class[ROCE_CLASS_SEND]),
	QP_FIELD("write", by_class[ROCE_CLASS_WRITE]),
	QP_FIELD("read_request", by_class[ROCE_CLASS_READ_REQUEST]),
	QP_FIELD("read_response", by_class[ROCE_CLASS_READ_RESPONSE]),
	QP_FIELD("ack", by_class[ROCE_CLASS_ACK]),
	QP_FIELD("atomic", by_class[ROCE_CLASS_ATOMIC]),
	QP_FIELD("cnp", by_class[ROCE_CLASS_CNP]),
	QP_FIELD("ud_send", by_class[ROCE_CLASS_UD_SEND]),
	QP_FIELD("other", by_class[ROCE_CLASS_OTHER]),
	QP_FIELD("acks", acks),
	QP_FIELD("naks_psn_sequence", nak_psn),
	QP_FIELD("naks_rnr", nak_rnr),
	QP_FIELD("naks_invalid_request", nak_invalid),
	QP_FIELD("naks_remote_access", nak_access),
	QP_FIELD("naks_remote_operation", nak_operation),
	QP_FIELD("naks_other", nak_other),
	QP_FIELD("ecn_ce", ce),
	QP_FIELD("psn_gaps", psn_gaps),
	QP_FIELD("psn_missing", psn_missing),
	QP_FIELD("psn_duplicates", psn_dups),
	QP_FIELD("psn_behind", psn_behind),
#undef QP_FIELD
};

static uint64_t qp_field(const struct fm_qp_val *v, size_t i)
{
	return *(const uint64_t *)(const void *)((const char *)v + qp_fields[i].off);
}

static const struct {
	const char *name;
	size_t off;
} peer_fields[] = {
#define PEER_FIELD(name, f)                                                                        \
	{                                                                                          \
		name, offsetof(struct peer_totals, f)                                              \
	}
	PEER_FIELD("rx_packets", rx_packets), PEER_FIELD("rx_bytes", rx_bytes),
	PEER_FIELD("tx_packets", tx_packets), PEER_FIELD("tx_bytes", tx_bytes),
	PEER_FIELD("rx_ecn_ce", rx_ce),	      PEER_FIELD("roce_rx_bytes", roce_rx_bytes),
	PEER_FIELD("cnps_sent", cnps_sent),
#undef PEER_FIELD
};

static uint64_t peer_field(const struct peer_totals *t, size_t i)
{
	return *(const uint64_t *)(const void *)((const char *)t + peer_fields[i].off);
}

static void json_events(struct replay *r, struct strbuf *sb)
{
	const struct event *ev;
	size_t n = replay_ticks_events(r->ticks, &ev);
	uint64_t store_errors;
	const char *store_err;
	uint64_t ticks = replay_ticks_count(r->ticks, &store_errors, &store_err);
	char t[40];

	strbuf_addf(sb, ",\"interval_seconds\":%.3f,\"ticks\":%llu", r->cfg.interval_ms / 1000.0,
		    (unsigned long long)ticks);
	if (r->db) {
		strbuf_addstr(sb, ",\"db\":");
		strbuf_addjson(sb, r->cfg.db_path);
		strbuf_addf(sb, ",\"ticks_not_stored\":%llu", (unsigned long long)store_errors);
	}
	strbuf_addstr(sb, ",\"events\":[");
	for (size_t i = 0; i < n; i++) {
		strbuf_addf(sb, "%s{\"kind\":\"%s\",\"subject\":", i ? "," : "",
			    event_kind_name(ev[i].kind));
		strbuf_addjson(sb, ev[i].subject);
		time_format_rfc3339(ev[i].start_ms, t, sizeof(t));
		strbuf_addf(sb, ",\"start\":\"%s\"", t);
		if (ev[i].end_ms) {
			time_format_rfc3339(ev[i].end_ms, t, sizeof(t));
			strbuf_addf(sb, ",\"end\":\"%s\"", t);
		} else {
			strbuf_addstr(sb, ",\"end\":null");
		}
		/* evidence is a JSON object the detector wrote */
		strbuf_addf(sb, ",\"peak_score\":%.3f,\"evidence\":%s}", ev[i].peak,
			    ev[i].evidence[0] ? ev[i].evidence : "{}");
	}
	strbuf_addch(sb, ']');
}

/* Slot i's time paused up to the capture's end, in seconds, as JSON: null
 * while the link's speed is unknown. */
static void json_paused(struct strbuf *sb, const struct replay *r, unsigned i)
{
	const struct capture_pause *p = &capture_stats(r->cap)->pause;

	if (r->cfg.pcap_link_mbps)
		strbuf_addf(sb, "%.9f", (double)capture_pause_paused_ns(p, i, r->end_at) / 1e9);
	else
		strbuf_addstr(sb, "null");
}

/* The PAUSE and PFC frames, per priority (an array of 8) and the link's:
 * ,"pfc_frames":[...],"pfc_quanta":[...],"pfc_paused_seconds":[...],
 * "link_pause_frames":N,"link_pause_quanta":N,"link_paused_seconds":S,
 * "link_speed_mbps":N, then ,"errors":[ to go on. */
static void json_pause(struct strbuf *sb, const struct replay *r)
{
	const struct capture_pause *p = &capture_stats(r->cap)->pause;
	const uint64_t *col[2] = { p->frames, p->quanta };

	for (unsigned k = 0; k < 2; k++) {
		strbuf_addstr(sb, k ? "],\"pfc_quanta\":[" : "\"pfc_frames\":[");
		for (unsigned i = 0; i < PACKET_PAUSE_LINK; i++)
			strbuf_addf(sb, "%s%llu", i ? "," : "", (unsigned long long)col[k][i]);
	}
	strbuf_addstr(sb, "],\"pfc_paused_seconds\":[");
	for (unsigned i = 0; i < PACKET_PAUSE_LINK; i++) {
		strbuf_addstr(sb, i ? "," : "");
		json_paused(sb, r, i);
	}
	strbuf_addf(sb,
		    "],\"link_pause_frames\":%llu,\"link_pause_quanta\":%llu,"
		    "\"link_paused_seconds\":",
		    (unsigned long long)p->frames[PACKET_PAUSE_LINK],
		    (unsigned long long)p->quanta[PACKET_PAUSE_LINK]);
	json_paused(sb, r, PACKET_PAUSE_LINK);
	if (r->cfg.pcap_link_mbps)
		strbuf_addf(sb, ",\"link_speed_mbps\":%u,\"errors\":[", r->cfg.pcap_link_mbps);
	else
		strbuf_addstr(sb, ",\"link_speed_mbps\":null,\"errors\":[");
}

static void json_out(struct replay *r, struct rows *qps, struct rows *peers, FILE *out)
{
	const struct capture_stats *s = capture_stats(r->cap);
	uint64_t back_max, back = replay_ticks_steps_back(r->ticks, &back_max);
	struct strbuf sb;
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];

	strbuf_init(&sb);
	strbuf_addstr(&sb, "{\"file\":");
	strbuf_addjson(&sb, r->file);
	strbuf_addf(&sb,
		    ",\"link_type\":\"%s\",\"packets\":%llu,\"bytes\":%llu,\"roce_packets\":%llu,"
		    "\"roce_unparsed\":%llu,\"roce_cut_before_bth\":%llu,"
		    "\"roce_cut_after_bth\":%llu,\"unparsed\":%llu,\"lldp_frames\":%llu,"
		    "\"flows_not_counted\":%llu,\"qps_not_counted\":%llu,\"duration_seconds\":%.9f,"
		    "\"time_steps_back\":%llu,\"time_step_back_max_seconds\":%.9f,"
		    "\"complete\":%s,",
		    link_name(r->linktype), (unsigned long long)s->packets,
		    (unsigned long long)s->bytes, (unsigned long long)s->roce,
		    (unsigned long long)(s->roce_cut_bth + s->roce_cut_after_bth),
		    (unsigned long long)s->roce_cut_bth, (unsigned long long)s->roce_cut_after_bth,
		    (unsigned long long)s->unparsed, (unsigned long long)s->lldp,
		    (unsigned long long)s->flows_full, (unsigned long long)s->qps_full,
		    (double)(r->max_ns - r->min_ns) / 1e9, (unsigned long long)back,
		    (double)back_max / 1e9, r->broken ? "false" : "true");
	json_pause(&sb, r);
	for (unsigned i = 0; i < r->nproblems; i++) {
		strbuf_addf(&sb, "%s{\"packet\":%llu,\"error\":", i ? "," : "",
			    (unsigned long long)r->problems[i].packet);
		strbuf_addjson(&sb, r->problems[i].why);
		strbuf_addch(&sb, '}');
	}
	if (r->broken) {
		strbuf_addf(&sb, "%s{\"packet\":%llu,\"error\":", r->nproblems ? "," : "",
			    (unsigned long long)s->packets + 1);
		strbuf_addjson(&sb, r->broken_why);
		strbuf_addch(&sb, '}');
	}
	strbuf_addstr(&sb, "],\"qps\":[");
	for (size_t i = 0; i < qps->n; i++) {
		const struct fm_qp_key *k = qps->v[i].key;

		addr_str(k->family, k->saddr, a, sizeof(a));
		addr_str(k->family, k->daddr, b, sizeof(b));
		strbuf_addf(&sb, "%s{\"source\":\"%s\",\"destination\":\"%s\",\"dest_qp\":%u",
			    i ? "," : "", a, b, k->dest_qp);
		for (size_t f = 0; f < sizeof(qp_fields) / sizeof(qp_fields[0]); f++)
			strbuf_addf(&sb, ",\"%s\":%llu", qp_fields[f].name,
				    (unsigned long long)qp_field(qps->v[i].val, f));
		strbuf_addch(&sb, '}');
	}
	strbuf_addstr(&sb, "],\"peers\":[");
	for (size_t i = 0; i < peers->n; i++) {
		const struct peer_key *k = peers->v[i].key;

		addr_str(k->family, k->addr, a, sizeof(a));
		strbuf_addf(&sb, "%s{\"peer\":\"%s\"", i ? "," : "", a);
		for (size_t f = 0; f < sizeof(peer_fields) / sizeof(peer_fields[0]); f++)
			strbuf_addf(&sb, ",\"%s\":%llu", peer_fields[f].name,
				    (unsigned long long)peer_field(peers->v[i].val, f));
		strbuf_addch(&sb, '}');
	}
	strbuf_addch(&sb, ']');
	json_events(r, &sb);
	strbuf_addstr(&sb, "}\n");
	if (sb.failed)
		fprintf(stderr, "fabmon replay: out of memory writing JSON\n");
	else
		fwrite(sb.buf, 1, sb.len, out);
	strbuf_release(&sb);
}

static void text_events(struct replay *r, FILE *out)
{
	const struct event *ev;
	size_t n = replay_ticks_events(r->ticks, &ev);
	uint64_t store_errors;
	const char *store_err;
	uint64_t ticks = replay_ticks_count(r->ticks, &store_errors, &store_err);
	char a[40], b[40];

	fprintf(out, "\nevents: %zu (detectors over %llu ticks of %.3f s of capture time)\n", n,
		(unsigned long long)ticks, r->cfg.interval_ms / 1000.0);
	for (size_t i = 0; i < n; i++) {
		time_format_rfc3339(ev[i].start_ms, a, sizeof(a));
		if (ev[i].end_ms)
			time_format_rfc3339(ev[i].end_ms, b, sizeof(b));
		else
			snprintf(b, sizeof(b), "(open at the end)");
		fprintf(out, "%s  %-24s  %-12s %-32s peak %.2f  %s\n", a, b,
			event_kind_name(ev[i].kind), ev[i].subject, ev[i].peak, ev[i].evidence);
	}
	if (r->db)
		fprintf(out, "stored in %s: %llu ticks%s\n", r->cfg.db_path,
			(unsigned long long)(ticks - store_errors),
			store_errors ? " (some could not be written: see stderr)" : "");
}

/* A line for the PAUSE and PFC frames, if any: what froze which priority,
 * and for how long where the link's speed is given. */
static void print_pause(FILE *out, const struct replay *r)
{
	const struct capture_pause *p = &capture_stats(r->cap)->pause;
	const char *sep = "";

	for (unsigned i = 0; i < PACKET_PAUSE_SLOTS; i++) {
		if (!p->frames[i])
			continue;
		fprintf(out, "%s", *sep ? sep : "pause frames: ");
		if (i == PACKET_PAUSE_LINK)
			fprintf(out, "link (802.3x PAUSE) %llu", (unsigned long long)p->frames[i]);
		else
			fprintf(out, "priority %u (PFC) %llu", i, (unsigned long long)p->frames[i]);
		fprintf(out, " asking %llu quanta", (unsigned long long)p->quanta[i]);
		if (r->cfg.pcap_link_mbps)
			fprintf(out, ", paused %.6f s",
				(double)capture_pause_paused_ns(p, i, r->end_at) / 1e9);
		sep = "; ";
	}
	if (!*sep)
		return;
	if (r->cfg.pcap_link_mbps)
		fprintf(out, " (at %u Mb/s)\n", r->cfg.pcap_link_mbps);
	else
		fprintf(out, "\n(the time paused, and so pfc_storm, needs --link-speed)\n");
}

static void text_out(struct replay *r, struct rows *qps, struct rows *peers, FILE *out)
{
	const struct capture_stats *s = capture_stats(r->cap);
	uint64_t back_max, back = replay_ticks_steps_back(r->ticks, &back_max);
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];

	fprintf(out, "%s: %s, %llu packets, %llu bytes over %.6f s of capture time%s\n", r->file,
		link_name(r->linktype), (unsigned long long)s->packets,
		(unsigned long long)s->bytes, (double)(r->max_ns - r->min_ns) / 1e9,
		r->broken ? " (up to where the file broke)" : "");
	if (back)
		fprintf(out,
			"time stepped back %llu time%s, by at most %.6f s: the detectors' clock went "
			"on from the packet before each step\n",
			(unsigned long long)back, back == 1 ? "" : "s", (double)back_max / 1e9);
	fprintf(out,
		"RoCEv2 packets %llu (%llu of them cut before their AETH or RETH), UDP 4791 frames cut "
		"before their BTH %llu, unparsed frames %llu, LLDP frames %llu\n",
		(unsigned long long)s->roce, (unsigned long long)s->roce_cut_after_bth,
		(unsigned long long)s->roce_cut_bth, (unsigned long long)s->unparsed,
		(unsigned long long)s->lldp);
	print_pause(out, r);
	if (s->flows_full || s->qps_full)
		fprintf(out, "not counted: %llu frames per flow, %llu per QP (--max-entries %u)\n",
			(unsigned long long)s->flows_full, (unsigned long long)s->qps_full,
			r->max_entries);
	fprintf(out, "\nqueue pairs: %zu\n", qps->n);
	if (qps->n)
		fprintf(out, "%-24s %-24s %8s %10s %12s %6s %8s %8s %8s %8s %8s %8s %8s\n",
			"source", "destination", "qp", "packets", "bytes", "cnp", "acks", "naks",
			"rnr", "ecn_ce", "gaps", "dups", "behind");
	for (size_t i = 0; i < qps->n; i++) {
		const struct fm_qp_key *k = qps->v[i].key;
		const struct fm_qp_val *v = qps->v[i].val;

		addr_str(k->family, k->saddr, a, sizeof(a));
		addr_str(k->family, k->daddr, b, sizeof(b));
		fprintf(out,
			"%-24s %-24s %8u %10llu %12llu %6llu %8llu %8llu %8llu %8llu %8llu %8llu %8llu\n",
			a, b, k->dest_qp, (unsigned long long)v->packets,
			(unsigned long long)v->bytes,
			(unsigned long long)v->by_class[ROCE_CLASS_CNP],
			(unsigned long long)v->acks,
			(unsigned long long)(v->nak_psn + v->nak_invalid + v->nak_access +
					     v->nak_operation + v->nak_other),
			(unsigned long long)v->nak_rnr, (unsigned long long)v->ce,
			(unsigned long long)v->psn_gaps, (unsigned long long)v->psn_dups,
			(unsigned long long)v->psn_behind);
	}
	fprintf(out, "\npeers: %zu\n", peers->n);
	if (peers->n)
		fprintf(out, "%-40s %10s %12s %10s %12s %8s %8s\n", "peer", "rx_packets",
			"rx_bytes", "tx_packets", "tx_bytes", "rx_ce", "cnps_sent");
	for (size_t i = 0; i < peers->n; i++) {
		const struct peer_key *k = peers->v[i].key;
		const struct peer_totals *t = peers->v[i].val;

		addr_str(k->family, k->addr, a, sizeof(a));
		fprintf(out, "%-40s %10llu %12llu %10llu %12llu %8llu %8llu\n", a,
			(unsigned long long)t->rx_packets, (unsigned long long)t->rx_bytes,
			(unsigned long long)t->tx_packets, (unsigned long long)t->tx_bytes,
			(unsigned long long)t->rx_ce, (unsigned long long)t->cnps_sent);
	}
	text_events(r, out);
}

static int report(struct replay *r)
{
	struct rows qps = { 0 }, peers = { 0 };
	const struct capture_stats *s = capture_stats(r->cap);
	/* the frames named one by one, and the rest */
	unsigned long long problems = s->unparsed + s->roce_cut_bth + s->roce_cut_after_bth;
	uint64_t store_errors;
	const char *store_err;
	int err;

	/* every flow has two ends */
	r->peers = kmap_new(sizeof(struct peer_key), sizeof(struct peer_totals),
			    2 * kmap_count(capture_flows(r->cap)) + 1);
	if (!r->peers)
		return -ENOMEM;
	kmap_sweep(capture_flows(r->cap), peer_add_flow, r);
	kmap_sweep(capture_qps(r->cap), peer_add_qp, r);
	err = rows_of(capture_qps(r->cap), sizeof(struct fm_qp_key),
		      offsetof(struct fm_qp_val, bytes), &qps);
	if (!err)
		err = rows_of(r->peers, sizeof(struct peer_key),
			      offsetof(struct peer_totals, rx_bytes), &peers);
	if (!err) {
		if (r->json)
			json_out(r, &qps, &peers, stdout);
		else
			text_out(r, &qps, &peers, stdout);
	}
	for (unsigned i = 0; i < r->nproblems; i++)
		fprintf(stderr, "fabmon replay: %s: packet %llu: %s\n", r->file,
			(unsigned long long)r->problems[i].packet, r->problems[i].why);
	if (problems > r->nproblems && r->nproblems)
		fprintf(stderr,
			"fabmon replay: %s: %llu frames in all unparsed or cut before their BTH "
			"or AETH\n",
			r->file, problems);
	if (r->broken)
		fprintf(stderr, "fabmon replay: %s: the file breaks at %s\n", r->file,
			r->broken_why);
	if (replay_ticks_count(r->ticks, &store_errors, &store_err) && store_errors)
		fprintf(stderr, "fabmon replay: %s: %llu ticks not stored: %s\n", r->cfg.db_path,
			(unsigned long long)store_errors, store_err);
	free(qps.v);
	free(peers.v);
	return err;
}

static int parse_args(struct replay *r, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "interval", required_argument, NULL, 'i' },
		{ "db", required_argument, NULL, 'd' },
		{ "config", required_argument, NULL, 'c' },
		{ "max-entries", required_argument, NULL, 'm' },
		{ "link-speed", required_argument, NULL, 's' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *interval = NULL, *config = NULL, *speed = NULL;
	char *end, err[512];
	unsigned long v;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			r->json = 1;
			break;
		case 'i':
			interval = optarg;
			break;
		case 'd':
			r->db = 1;
			snprintf(r->cfg.db_path, sizeof(r->cfg.db_path), "%s", optarg);
			break;
		case 'c':
			config = optarg;
			break;
		case 'm':
			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || *end || !*optarg || v < 1 || v > 100000000) {
				fprintf(stderr,
					"fabmon replay: --max-entries: expected an integer "
					"from 1 to 100000000, got '%s'\n",
					optarg);
				return EXIT_USAGE;
			}
			r->max_entries = (unsigned)v;
			break;
		case 's':
			speed = optarg;
			break;
		case 'q':
			r->quiet = 1;
			break;
		case 'h':
			fputs(replay_usage, stdout);
			return 1;
		default:
			fputs(replay_usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		fprintf(stderr, "fabmon replay: %s\n%s",
			optind == argc ? "no capture file given" : "one capture file at a time",
			replay_usage);
		return EXIT_USAGE;
	}
	r->file = argv[optind];
	/* defaults, then the file, then the flags, as the agent has it */
	if (config) {
		char db[sizeof(r->cfg.db_path)];

		memcpy(db, r->cfg.db_path, sizeof(db));
		if (config_load(&r->cfg, config, err, sizeof(err)) < 0) {
			fprintf(stderr, "fabmon replay: %s\n",
				err[0] ? err : "the config file cannot be read");
			return EXIT_USAGE;
		}
		memcpy(r->cfg.db_path, db, sizeof(db));
	}
	if (interval && config_set(&r->cfg, "interval", interval, err, sizeof(err)) < 0) {
		fprintf(stderr, "fabmon replay: --interval: %s\n", err);
		return EXIT_USAGE;
	}
	if (speed && config_set(&r->cfg, "pcap_link_speed", speed, err, sizeof(err)) < 0) {
		fprintf(stderr, "fabmon replay: --link-speed: %s\n", err);
		return EXIT_USAGE;
	}
	return 0;
}

/* Opens r->file, with capfile if it is plain pcap, else with libpcap.
 * Returns 0, or -1 after saying why. */
static int replay_open(struct replay *r)
{
	char errbuf[PCAP_ERRBUF_SIZE];
	FILE *f;

	if (capfile_open(r->file, &r->cf) == 0) {
		r->linktype = capfile_linktype(r->cf);
		return 0;
	}
	/* libpcap reads record by record through stdio: a large buffer turns
	 * hundreds of thousands of 4 KiB reads into a few hundred. It is ours:
	 * glibc's setvbuf() ignores the size when it is to allocate the buffer
	 * itself. Without it, stdio's own buffer does, slower. */
	f = fopen(r->file, "rb");
	if (!f) {
		fprintf(stderr, "fabmon replay: %s: %s\n", r->file, strerror(errno));
		return -1;
	}
	r->iobuf = malloc(REPLAY_READ_BUFFER);
	if (r->iobuf)
		(void)setvbuf(f, r->iobuf, _IOFBF, REPLAY_READ_BUFFER);
	r->pcap = pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_NANO, errbuf);
	if (!r->pcap) {
		fprintf(stderr, "fabmon replay: %s: %s\n", r->file, errbuf);
		fclose(f);
		return -1;
	}
	r->linktype = pcap_datalink(r->pcap);
	if (r->linktype != PACKET_LINK_ETHERNET && r->linktype != PACKET_LINK_LINUX_SLL &&
	    r->linktype != PACKET_LINK_LINUX_SLL2) {
		fprintf(stderr,
			"fabmon replay: %s: link type %s (%d) is not read; Ethernet, Linux "
			"cooked SLL and SLL2 are\n",
			r->file, pcap_datalink_val_to_name(r->linktype) ?: "unknown", r->linktype);
		return -1;
	}
	return 0;
}

int replay_main(int argc, char **argv)
{
	struct replay r = { .max_entries = REPLAY_MAX_ENTRIES_DEFAULT };
	char errbuf[PCAP_ERRBUF_SIZE];
	int rc;

	config_defaults(&r.cfg);
	rc = parse_args(&r, argc, argv);
	if (rc)
		return rc == 1 ? 0 : rc;
	rc = 1;
	if (replay_open(&r) < 0)
		goto out;
	/* the series track every entry the capture can hold */
	r.cfg.bpf_max_flows = r.max_entries;
	r.cap = capture_new(r.max_entries, r.cfg.roce_pmtu, r.cfg.pcap_link_mbps);
	if (!r.cap) {
		fprintf(stderr, "fabmon replay: out of memory for %u entries\n", r.max_entries);
		goto out;
	}
	if (replay_ticks_new(&r.cfg, r.db, &r.ticks, errbuf, sizeof(errbuf)) < 0) {
		fprintf(stderr, "fabmon replay: %s\n", errbuf);
		goto out;
	}
	rc = replay_read(&r) < 0 ? 1 : 0;
	if (report(&r) < 0) {
		fprintf(stderr, "fabmon replay: out of memory for the report\n");
		rc = 1;
	}
out:
	replay_ticks_free(r.ticks);
	kmap_free(r.peers);
	capture_free(r.cap);
	capfile_free(r.cf);
	if (r.pcap)
		pcap_close(r.pcap);
	/* after the stream that used it is closed */
	free(r.iobuf);
	return rc;
}
