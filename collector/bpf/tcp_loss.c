/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "collector/bpf/tcp_loss.h"

/* By receiver, then sender. */
static int pair_cmp(const struct tcp_loss_pair *a, uint8_t family, const uint8_t *daddr,
		    const uint8_t *saddr)
{
	int c = (int)a->family - (int)family;

	if (c == 0)
		c = memcmp(a->daddr, daddr, sizeof(a->daddr));
	if (c == 0 && saddr)
		c = memcmp(a->saddr, saddr, sizeof(a->saddr));
	return c;
}

static int pair_order(const void *a, const void *b)
{
	const struct tcp_loss_pair *pb = b;

	return pair_cmp(a, pb->family, pb->daddr, pb->saddr);
}

/* An entry of sorted p[0..n) with the receiver daddr, and the sender saddr
 * unless that is NULL; NULL if none. */
static const struct tcp_loss_pair *pair_find(const struct tcp_loss_pair *p, size_t n,
					     uint8_t family, const uint8_t *daddr,
					     const uint8_t *saddr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = pair_cmp(&p[mid], family, daddr, saddr);

		if (c == 0)
			return &p[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

void tcp_loss_attribute(struct tcp_loss_pair *p, size_t n)
{
	size_t start = 0;

	/* qsort()'s array must not be NULL, even empty (C11 7.22.5), and a
	 * collector with no loss yet has none */
	if (n == 0)
		return;
	qsort(p, n, sizeof(p[0]), pair_order);
	/* each receiver's run: how many distinct senders lost towards it */
	for (size_t i = 1; i <= n; i++) {
		unsigned senders = 1;

		if (i < n && pair_cmp(&p[i], p[start].family, p[start].daddr, NULL) == 0)
			continue;
		for (size_t j = start + 1; j < i; j++)
			senders += memcmp(p[j].saddr, p[j - 1].saddr, sizeof(p[j].saddr)) != 0;
		for (size_t j = start; j < i; j++)
			p[j].senders_in = senders;
		start = i;
	}
	for (size_t i = 0; i < n; i++) {
		/* the sender as a receiver: who lost towards it, less this
		 * pair's receiver (whose own losses towards it are the same
		 * two ports' exchange) */
		const struct tcp_loss_pair *in = pair_find(p, n, p[i].family, p[i].saddr, NULL);
		unsigned others = in ? in->senders_in : 0;

		if (others && pair_find(p, n, p[i].family, p[i].saddr, p[i].daddr))
			others--;
		p[i].senders_port = others > 0;
	}
}
