/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "agent/registry/label_text.h"
#include "suites.h"
#include "testutil.h"

/* Every outcome of a look-up, buf "" on each failure. */
START_TEST(test_label_value)
{
	static const struct {
		const char *text, *key;
		size_t len;
		int want;
		const char *value;
	} cases[] = {
		{ "peer=\"198.18.0.2\"", "peer", 48, 0, "198.18.0.2" },
		{ "interface=\"eth0\",direction=\"tx\",peer=\"198.18.0.2\"", "direction", 8, 0,
		  "tx" },
		{ "interface=\"eth0\",direction=\"tx\",peer=\"198.18.0.2\"", "peer", 48, 0,
		  "198.18.0.2" },
		{ "a=\"\",b=\"x\"", "a", 4, 0, "" },
		{ "", "peer", 48, -ENOENT, "" },
		{ "peer=\"x\"", "pe", 48, -ENOENT, "" },
		/* a key that another label's name starts with */
		{ "port_id=\"p1\",port=\"1\"", "port", 8, 0, "1" },
		{ "port_id=\"p1\"", "port", 8, -ENOENT, "" },
		/* exactly len - 1 fits, len does not */
		{ "k=\"1234567\"", "k", 8, 0, "1234567" },
		{ "k=\"12345678\"", "k", 8, -ENAMETOOLONG, "" },
		/* a comma or an escaped quote in a value is the value's: the
		 * label after it is the real one (LLDP names are the peer's) */
		{ "system_name=\"a,port_id=\\\"evil\\\"\",port_id=\"eth3\"", "port_id", 16, 0,
		  "eth3" },
		{ "system_name=\"sw \\\"leaf\\\" 1\"", "system_name", 32, 0, "sw \\\"leaf\\\" 1" },
		{ "k=\"a\\\\\",j=\"b\"", "j", 8, 0, "b" },
		{ "k=\"a\\\\\",j=\"b\"", "k", 8, 0, "a\\\\" },
		/* not label text: no quote, no end, no comma between */
		{ "peer=198.18.0.2", "peer", 48, -EINVAL, "" },
		{ "peer=\"198.18.0.2", "peer", 48, -EINVAL, "" },
		{ "a=\"1\"b=\"2\"", "b", 8, -EINVAL, "" },
		{ "=\"1\"", "a", 8, -EINVAL, "" },
		{ "a=\"1\",junk", "b", 8, -EINVAL, "" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char buf[64];

		memset(buf, 'X', sizeof(buf));
		ck_assert_int_eq(label_value(cases[i].text, cases[i].key, buf, cases[i].len),
				 cases[i].want);
		ck_assert_str_eq(buf, cases[i].value);
	}
}
END_TEST

Suite *label_text_suite(void)
{
	const struct testutil_case cases[] = {
		{ "label_value", test_label_value, 0 },
	};

	return TESTUTIL_SUITE("label_text", cases);
}
