/* SPDX-License-Identifier: MIT */
/*
 * drops: the packets the kernel freed as dropped (skb:kfree_skb, counted
 * per CPU by reason in fm_drops), summed and named by the running kernel's
 * reasons (collector/bpf/drop_reasons.h).
 */
#include <stdio.h>

#include "bpf/fabmon.h"
#include "collector/bpf/drop_reasons.h"
#include "collector/bpf/state.h"

void bpf_drops_emit(const struct bpf_state *st, struct sample_sink *out)
{
	static const struct metric_desc d = {
		.name = "fabmon_kernel_drops_total",
		.help = "Packets the kernel freed as dropped, by reason (skb:kfree_skb).",
		.type = METRIC_COUNTER
	};
	const struct map_reader *r = &st->dropm;

	for (unsigned i = 0; i < r->count; i++) {
		__u32 reason = *(const __u32 *)map_reader_key(r, i);
		const uint64_t *v = map_reader_val(r, i);
		const char *name = st->reasons ? drop_reasons_name(st->reasons, reason) : NULL;
		char num[16];
		uint64_t sum = 0;
		struct label l = { "reason", name };

		for (int c = 0; c < st->ncpus; c++)
			sum += v[c];
		if (!sum)
			continue;
		if (!name) {
			snprintf(num, sizeof(num), "%u", reason);
			l.value = num;
		}
		(void)sample_counter(out, &d, &l, 1, sum);
	}
}
