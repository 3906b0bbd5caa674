/* SPDX-License-Identifier: MIT */
#ifndef FABMON_BENCH_NULLPROG_H
#define FABMON_BENCH_NULLPROG_H

/*
 * The empty tc program both probe-cost benchmarks hold fabmon's probe
 * against (tcnull.c on a live stream, probe_run.c through
 * bpf_prog_test_run): whatever it costs is what any program is charged.
 */
#include <bpf/bpf.h>
#include <errno.h>

/* include/uapi/linux/pkt_cls.h: "use the default action", so a filter
 * behind it still runs; TC_ACT_OK would end the chain. */
#define NULLPROG_ACT_UNSPEC (-1)

/* Loads r0 = TC_ACT_UNSPEC; exit (two instructions, no helper, no map) as a
 * SCHED_CLS program called name. Returns its fd, or -errno. */
static inline int nullprog_load(const char *name)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K,
		  .dst_reg = BPF_REG_0,
		  .imm = NULLPROG_ACT_UNSPEC },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd = bpf_prog_load(BPF_PROG_TYPE_SCHED_CLS, name, "Dual MIT/GPL", insns,
			       sizeof(insns) / sizeof(insns[0]), NULL);

	return fd < 0 ? -errno : fd;
}

#endif
