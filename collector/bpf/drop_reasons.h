/* SPDX-License-Identifier: MIT */
#ifndef FABMON_BPF_DROP_REASONS_H
#define FABMON_BPF_DROP_REASONS_H

/*
 * The names of the running kernel's packet drop reasons (enum skb_drop_reason,
 * include/net/dropreason-core.h), read from its BTF, to label the counts of
 * skb:kfree_skb by reason. The values differ between kernels, hence no table
 * of our own.
 */

struct btf;
struct drop_reasons;

/*
 * Reads the reasons from the kernel's BTF (/sys/kernel/btf/vmlinux). Returns
 * 0 and *ret_reasons (the caller frees it with drop_reasons_free()); -ENOENT
 * if the kernel has no BTF or no enum skb_drop_reason (before 5.17); or
 * another -errno.
 */
int drop_reasons_load(struct drop_reasons **ret_reasons);

/* As drop_reasons_load(), from btf, which stays the caller's (tests build their own). */
int drop_reasons_from_btf(const struct btf *btf, struct drop_reasons **ret_reasons);

/*
 * The name of reason value without its enumerator prefix: "NO_SOCKET" for
 * SKB_DROP_REASON_NO_SOCKET, "CONSUMED" for SKB_CONSUMED. NULL if the kernel
 * has no such value. The string lives as long as reasons.
 */
const char *drop_reasons_name(const struct drop_reasons *reasons, unsigned value);

/* The value of the reason named as drop_reasons_name() names it: 0 and
 * *ret_value, or -ENOENT. */
int drop_reasons_value(const struct drop_reasons *reasons, const char *name, unsigned *ret_value);

/* Frees reasons; NULL is a no-op. */
void drop_reasons_free(struct drop_reasons *reasons);

#endif
