/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/bpf/tc_lock.h"
#include "suites.h"
#include "testutil.h"

/* A fresh directory for the lock files (the test process goes, it stays:
 * /tmp's is the system's to clean). */
static void lock_dir(char *dir, size_t len)
{
	snprintf(dir, len, "/tmp/fabmon-lock-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

/*
 * The first handle takes the lock; a second one (another agent) is refused
 * with -EBUSY, naming the holder's pid; doctor's read sees that pid and the
 * holder's note; once the holder lets go the file is gone and the second
 * takes it.
 */
START_TEST(test_take_busy_free)
{
	struct bpf_tc_lock *a, *b;
	char dir[64], sub[96], err[512], note[128];
	pid_t pid = 123;

	lock_dir(dir, sizeof(dir));
	/* the directory is made if it is missing */
	snprintf(sub, sizeof(sub), "%s/run", dir);
	a = bpf_tc_lock_new(sub);
	b = bpf_tc_lock_new(sub);
	ck_assert(a && b);
	ck_assert_int_eq(bpf_tc_lock_holder(b, &pid, note, sizeof(note)), -ENOENT);
	ck_assert_int_eq(bpf_tc_lock_take(a, err, sizeof(err)), 0);
	ck_assert_int_eq(bpf_tc_lock_take(a, err, sizeof(err)), 0); /* held already */
	ck_assert_int_eq(bpf_tc_lock_rival(a), 0);
	ck_assert_int_eq(strncmp(bpf_tc_lock_path(a), sub, strlen(sub)), 0);

	ck_assert_int_eq(bpf_tc_lock_take(b, err, sizeof(err)), -EBUSY);
	ck_assert_int_eq(bpf_tc_lock_rival(b), getpid());
	ck_assert_msg(strstr(err, "fabmon agent pid ") && strstr(err, bpf_tc_lock_path(a)),
		      "err: %s", err);

	bpf_tc_lock_note(a, "attached to 2 interface(s)");
	ck_assert_int_eq(bpf_tc_lock_holder(b, &pid, note, sizeof(note)), 0);
	ck_assert_int_eq(pid, getpid());
	ck_assert_str_eq(note, "attached to 2 interface(s)");
	/* a note on a handle that does not hold the lock writes nothing */
	bpf_tc_lock_note(b, "not mine");
	ck_assert_int_eq(bpf_tc_lock_holder(b, &pid, note, sizeof(note)), 0);
	ck_assert_str_eq(note, "attached to 2 interface(s)");

	bpf_tc_lock_free(a);
	ck_assert_int_eq(access(bpf_tc_lock_path(b), F_OK), -1);
	ck_assert_int_eq(bpf_tc_lock_take(b, err, sizeof(err)), 0);
	ck_assert_int_eq(bpf_tc_lock_rival(b), 0);
	bpf_tc_lock_free(b);
	ck_assert_int_eq(rmdir(sub), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/*
 * A lock file a killed agent left holds its pid, but no lock: doctor sees
 * no holder, and the next agent takes it and writes its own pid.
 */
START_TEST(test_dead_holder)
{
	struct bpf_tc_lock *a, *doctor;
	char dir[64], err[512], note[128];
	pid_t pid = 123;
	FILE *f;

	lock_dir(dir, sizeof(dir));
	a = bpf_tc_lock_new(dir);
	ck_assert_ptr_nonnull(a);
	f = fopen(bpf_tc_lock_path(a), "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "999999\nattached to 1 interface(s)\n");
	fclose(f);
	ck_assert_int_eq(bpf_tc_lock_holder(a, &pid, note, sizeof(note)), 0);
	ck_assert_int_eq(pid, 0);
	ck_assert_str_eq(note, "");
	ck_assert_int_eq(bpf_tc_lock_take(a, err, sizeof(err)), 0);
	/* another handle reads as doctor does: the new holder, no note yet */
	doctor = bpf_tc_lock_new(dir);
	ck_assert_ptr_nonnull(doctor);
	ck_assert_int_eq(bpf_tc_lock_holder(doctor, &pid, note, sizeof(note)), 0);
	ck_assert_int_eq(pid, getpid());
	ck_assert_str_eq(note, "");
	bpf_tc_lock_free(doctor);
	bpf_tc_lock_free(a);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* A directory that cannot be made is an error naming it, not a hang or a crash. */
START_TEST(test_no_dir)
{
	struct bpf_tc_lock *a = bpf_tc_lock_new("/proc/fabmon-no-such-dir");
	char err[512];
	int r;

	ck_assert_ptr_nonnull(a);
	r = bpf_tc_lock_take(a, err, sizeof(err));
	ck_assert_int_lt(r, 0);
	ck_assert_int_ne(r, -EBUSY);
	ck_assert_int_eq(bpf_tc_lock_rival(a), 0);
	ck_assert_str_eq(err, "unable to make '/proc/fabmon-no-such-dir'");
	bpf_tc_lock_free(a);
}
END_TEST

Suite *bpf_tc_lock_suite(void)
{
	const struct testutil_case cases[] = {
		{ "take_busy_free", test_take_busy_free, 0 },
		{ "dead_holder", test_dead_holder, 0 },
		{ "no_dir", test_no_dir, 0 },
	};

	return TESTUTIL_SUITE("bpf_tc_lock", cases);
}
