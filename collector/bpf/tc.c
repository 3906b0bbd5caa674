/* SPDX-License-Identifier: MIT */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collector/bpf/tc.h"

/*
 * Every fabmon filter has this handle and priority, on every hook: that is
 * how a later fabmon finds the ones an earlier one left, with no state kept
 * on disk. The priority is high on purpose, so the probe runs late: it
 * returns TC_ACT_OK, which ends the filter chain, and must not cut short the
 * filters other tools add. tc(8) numbers those from 49152 (0xc000) down when
 * they name no priority.
 */
#define BPF_TC_HANDLE 0xfab0
#define BPF_TC_PRIORITY 0xfab0
/* Program names are cut to BPF_OBJ_NAME_LEN - 1 = 15 characters: this survives. */
#define BPF_TC_PREFIX "fabmon_"
#define BPF_TC_WHY_MAX 1024

enum { TC_INGRESS, TC_EGRESS, TC_POINTS };

static const enum bpf_tc_attach_point tc_points[TC_POINTS] = { BPF_TC_INGRESS, BPF_TC_EGRESS };
static const char *const tc_point_names[TC_POINTS] = { "ingress", "egress" };

/* One interface with both filters attached, or with them lost. */
struct tc_link {
	int ifindex;
	char name[IF_NAMESIZE];
	__u32 prog_id[TC_POINTS]; /* what we attached, so that we detach only that */
	/* 0 while attached; else when (CLOCK_MONOTONIC) its filters were found
	 * gone or last failed to go back */
	int64_t lost_ms;
};

struct bpf_tc {
	int prog_fd[TC_POINTS];
	struct tc_link *links;
	unsigned n, cap;
	char why[BPF_TC_WHY_MAX];
	char news[BPF_TC_WHY_MAX];
};

struct bpf_tc *bpf_tc_new(int ingress_fd, int egress_fd)
{
	struct bpf_tc *tc = calloc(1, sizeof(*tc));

	if (!tc)
		return NULL;
	tc->prog_fd[TC_INGRESS] = ingress_fd;
	tc->prog_fd[TC_EGRESS] = egress_fd;
	return tc;
}

static int64_t tc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* 1 if program id's name starts with BPF_TC_PREFIX, 0 if not (or it is
 * gone), -errno if it cannot be told (reading a program's name needs
 * CAP_SYS_ADMIN). */
static int tc_prog_is_ours(__u32 id)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);
	int fd = bpf_prog_get_fd_by_id(id), ours;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	memset(&info, 0, sizeof(info));
	ours = bpf_obj_get_info_by_fd(fd, &info, &len) < 0
		       ? -errno
		       : strncmp(info.name, BPF_TC_PREFIX, strlen(BPF_TC_PREFIX)) == 0;
	close(fd);
	return ours;
}

/*
 * The program of the filter at our handle and priority on one hook, into
 * *ret_id. Returns 0, -ENOENT if there is no such filter, or -errno.
 */
static int tc_query(int ifindex, int point, __u32 *ret_id)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = tc_points[point]);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = BPF_TC_HANDLE, .priority = BPF_TC_PRIORITY);
	int r = bpf_tc_query(&hook, &opts);

	/* the kernel's answer for a hook with no filter chain at all (no
	 * filter left, or no clsact qdisc): none of ours either */
	if (r == -EINVAL)
		r = -ENOENT;
	if (r == 0)
		*ret_id = opts.prog_id;
	return r;
}

/*
 * Detaches the filter at our handle and priority on one hook if it is ours:
 * program prog_id, or with prog_id 0 any program named BPF_TC_PREFIX*.
 * Returns 1 if it did, 0 if there is none, it is someone else's or the
 * detach failed.
 */
static int tc_detach_ours(int ifindex, int point, __u32 prog_id)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = tc_points[point]);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = BPF_TC_HANDLE, .priority = BPF_TC_PRIORITY);
	__u32 id = 0;

	if (tc_query(ifindex, point, &id) < 0)
		return 0;
	if (prog_id ? id != prog_id : tc_prog_is_ours(id) <= 0)
		return 0;
	return bpf_tc_detach(&hook, &opts) == 0;
}

/* Attaches both programs to ifindex into *l. Returns 0 or -errno, with the
 * failing step in *ret_what; nothing stays attached on failure. */
static int tc_attach(const struct bpf_tc *tc, int ifindex, struct tc_link *l, const char **ret_what)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
		    .attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS);
	int r, p;

	/* the clsact qdisc may be there already, from us or another tool */
	r = bpf_tc_hook_create(&hook);
	if (r < 0 && r != -EEXIST) {
		*ret_what = "unable to add a clsact qdisc";
		return r;
	}
	for (p = 0; p < TC_POINTS; p++) {
		LIBBPF_OPTS(bpf_tc_opts, opts, .handle = BPF_TC_HANDLE, .priority = BPF_TC_PRIORITY,
			    .prog_fd = tc->prog_fd[p]);

		hook.attach_point = tc_points[p];
		r = bpf_tc_attach(&hook, &opts);
		if (r < 0) {
			*ret_what = r == -EEXIST ? "a filter already holds fabmon's handle and "
						   "priority (another fabmon running?)"
				    : p == TC_INGRESS ? "unable to attach to ingress"
						      : "unable to attach to egress";
			goto cleanup;
		}
		l->prog_id[p] = opts.prog_id;
	}
	l->ifindex = ifindex;
	return 0;
cleanup:
	while (p-- > 0)
		(void)tc_detach_ours(ifindex, p, l->prog_id[p]);
	return r;
}

/* Appends the printf-style text to buf (len bytes), after sep unless buf is empty. */
__attribute__((format(printf, 4, 5))) static void tc_cat(char *buf, size_t len, const char *sep,
							 const char *fmt, ...)
{
	size_t used = strlen(buf);
	va_list ap;

	if (used)
		used += (size_t)snprintf(buf + used, len - used, "%s", sep);
	if (used >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
}

/* Appends "name: what: strerror(-err)" to tc->why. */
static void tc_why_add(struct bpf_tc *tc, const char *name, const char *what, int err)
{
	tc_cat(tc->why, sizeof(tc->why), "; ", "%s: %s: %s", name, what, strerror(-err));
}

static struct tc_link *tc_find(const struct bpf_tc *tc, int ifindex)
{
	for (unsigned i = 0; i < tc->n; i++)
		if (tc->links[i].ifindex == ifindex)
			return &tc->links[i];
	return NULL;
}

/* Attaches to interface ifindex called name. Returns 0 or -errno (tc->why says why). */
static int tc_link_add(struct bpf_tc *tc, int ifindex, const char *name)
{
	const char *what = NULL;
	struct tc_link *l;
	int r;

	if (tc->n == tc->cap) {
		unsigned cap = tc->cap ? 2 * tc->cap : 16;
		struct tc_link *links = realloc(tc->links, cap * sizeof(*links));

		if (!links) {
			tc_why_add(tc, name, "unable to track the interface", -ENOMEM);
			return -ENOMEM;
		}
		tc->links = links;
		tc->cap = cap;
	}
	l = &tc->links[tc->n];
	memset(l, 0, sizeof(*l));
	r = tc_attach(tc, ifindex, l, &what);
	if (r < 0) {
		tc_why_add(tc, name, what, r);
		return r;
	}
	snprintf(l->name, sizeof(l->name), "%s", name);
	tc->n++;
	return 0;
}

static void tc_link_detach(const struct tc_link *l)
{
	for (int p = 0; p < TC_POINTS; p++)
		(void)tc_detach_ours(l->ifindex, p, l->prog_id[p]);
}

/* The hooks of attached link l whose filter is no longer the program we
 * attached there, as a bit mask (1 << point); 0 if none is, or if the hooks
 * cannot be read now. */
static unsigned tc_link_gone(const struct tc_link *l)
{
	unsigned gone = 0;

	for (int p = 0; p < TC_POINTS; p++) {
		__u32 id = 0;
		int r = tc_query(l->ifindex, p, &id);

		if (r == -ENOENT || (r == 0 && id != l->prog_id[p]))
			gone |= 1u << p;
	}
	return gone;
}

/*
 * Looks whether attached link l still has its filters. When one is gone
 * (tc filter del, its clsact qdisc deleted, another program put in its
 * place), takes the other away too, so that an interface is counted whole
 * or not at all, and marks it lost; a lost link's filters go back once
 * retry_ms has passed. Says what changed in tc->news, and that the link is
 * lost in tc->why.
 */
static void tc_link_check(struct bpf_tc *tc, struct tc_link *l, int64_t retry_ms, int64_t now_ms)
{
	/* by tc_link_gone()'s mask */
	static const char *const gone_names[] = { "", "ingress filter is", "egress filter is",
						  "ingress and egress filters are" };
	const char *what = NULL;
	unsigned gone;
	int r;

	if (!l->lost_ms) {
		gone = tc_link_gone(l);
		if (!gone)
			return;
		tc_link_detach(l);
		l->lost_ms = now_ms;
		tc_cat(tc->news, sizeof(tc->news), "; ",
		       "%s: fabmon's %s gone (removed by someone else: tc filter del?)", l->name,
		       gone_names[gone]);
	} else if (now_ms - l->lost_ms >= retry_ms) {
		r = tc_attach(tc, l->ifindex, l, &what);
		if (r == 0) {
			l->lost_ms = 0;
			tc_cat(tc->news, sizeof(tc->news), "; ", "%s: attached again", l->name);
			return;
		}
		l->lost_ms = now_ms;
		tc_why_add(tc, l->name, what, r);
	}
	tc_cat(tc->why, sizeof(tc->why), "; ",
	       "%s: fabmon's filters are gone; attaching again every %lld s (collector_retry)",
	       l->name, (long long)(retry_ms / 1000));
}

/* The name of ifindex in ifs, or NULL if it is not there. */
static const char *tc_ifname(const struct if_nameindex *ifs, int ifindex)
{
	for (; ifs->if_index; ifs++)
		if ((int)ifs->if_index == ifindex)
			return ifs->if_name;
	return NULL;
}

int bpf_tc_sync(struct bpf_tc *tc, const struct collector_env *env)
{
	/* if_nameindex() asks rtnetlink: the interfaces of our netns, whatever /sys shows */
	struct if_nameindex *ifs = if_nameindex();
	int64_t now_ms = tc_now_ms();
	int first_err = 0;
	unsigned n;

	if (!ifs)
		return -errno;
	tc->why[0] = tc->news[0] = '\0';
	for (unsigned i = 0; i < tc->n;) {
		struct tc_link *l = &tc->links[i];
		const char *name = tc_ifname(ifs, l->ifindex);

		if (name && collector_want_interface(env, name)) {
			/* a rename keeps ifindex and filters */
			snprintf(l->name, sizeof(l->name), "%s", name);
			tc_link_check(tc, l, env->retry_ms, now_ms);
			i++;
			continue;
		}
		/* a vanished interface took its filters along */
		if (name)
			tc_link_detach(l);
		*l = tc->links[--tc->n];
	}
	for (const struct if_nameindex *it = ifs; it->if_index; it++) {
		int r;

		if (tc_find(tc, (int)it->if_index) || !collector_want_interface(env, it->if_name))
			continue;
		r = tc_link_add(tc, (int)it->if_index, it->if_name);
		if (r < 0 && !first_err)
			first_err = r;
	}
	if_freenameindex(ifs);
	n = bpf_tc_count(tc);
	return n == 0 && first_err ? first_err : (int)n;
}

int bpf_tc_remove_stale(void)
{
	struct if_nameindex *ifs = if_nameindex();
	int removed = 0;

	if (!ifs)
		return -errno;
	for (const struct if_nameindex *it = ifs; it->if_index; it++)
		for (int p = 0; p < TC_POINTS; p++)
			removed += tc_detach_ours((int)it->if_index, p, 0);
	if_freenameindex(ifs);
	return removed;
}

int bpf_tc_survey(const struct collector_env *env, char *would, size_t would_len, char *found,
		  size_t found_len)
{
	struct if_nameindex *ifs = if_nameindex();
	int n = 0;

	if (!ifs)
		return -errno;
	would[0] = found[0] = '\0';
	for (const struct if_nameindex *it = ifs; it->if_index && n >= 0; it++) {
		if (collector_want_interface(env, it->if_name))
			tc_cat(would, would_len, ", ", "%s", it->if_name);
		for (int p = 0; p < TC_POINTS && n >= 0; p++) {
			__u32 id = 0;
			int ours =
				tc_query((int)it->if_index, p, &id) == 0 ? tc_prog_is_ours(id) : 0;

			if (ours > 0)
				tc_cat(found, found_len, ", ", "%s %s", it->if_name,
				       tc_point_names[p]);
			n = ours < 0 ? ours : n + ours;
		}
	}
	if_freenameindex(ifs);
	return n;
}

const char *bpf_tc_why(const struct bpf_tc *tc)
{
	return tc->why;
}

const char *bpf_tc_news(const struct bpf_tc *tc)
{
	return tc->news;
}

unsigned bpf_tc_count(const struct bpf_tc *tc)
{
	unsigned n = 0;

	for (unsigned i = 0; i < tc->n; i++)
		n += !tc->links[i].lost_ms;
	return n;
}

unsigned bpf_tc_lost(const struct bpf_tc *tc)
{
	return tc->n - bpf_tc_count(tc);
}

void bpf_tc_free(struct bpf_tc *tc)
{
	if (!tc)
		return;
	for (unsigned i = 0; i < tc->n; i++)
		tc_link_detach(&tc->links[i]);
	free(tc->links);
	free(tc);
}
