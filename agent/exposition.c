/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "exposition.h"

void exposition_format_value(struct strbuf *out, double v)
{
	if (isnan(v))
		strbuf_addstr(out, "NaN");
	else if (isinf(v))
		strbuf_addstr(out, v > 0 ? "+Inf" : "-Inf");
	else if (v == floor(v) && fabs(v) < 9007199254740992.0) /* 2^53: exact in a double */
		strbuf_addf(out, "%.0f", v);
	else
		strbuf_addf(out, "%.15g", v);
}

/* HELP text escapes backslash and newline (text format 0.0.4). */
static void add_help(struct strbuf *out, const char *help)
{
	for (; *help; help++) {
		if (*help == '\\')
			strbuf_add(out, "\\\\", 2);
		else if (*help == '\n')
			strbuf_add(out, "\\n", 2);
		else
			strbuf_addch(out, *help);
	}
}

struct render_state {
	struct strbuf *out;
	const char *family;
	size_t family_len;
};

/* The family a series belongs to: its name, less _bucket, _sum or _count
 * for a histogram's series. */
static size_t family_len(const struct series *s)
{
	static const char *const parts[] = { "_bucket", "_sum", "_count" };
	size_t n = strlen(s->name);

	if (s->type != METRIC_HISTOGRAM)
		return n;
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		size_t p = strlen(parts[i]);

		if (n > p && strcmp(s->name + n - p, parts[i]) == 0)
			return n - p;
	}
	return n;
}

static int render_one(struct series *s, void *arg)
{
	static const char *const types[] = { [METRIC_COUNTER] = "counter",
					     [METRIC_GAUGE] = "gauge",
					     [METRIC_HISTOGRAM] = "histogram" };
	struct render_state *st = arg;
	struct strbuf *out = st->out;
	size_t len = family_len(s);

	if (!st->family || st->family_len != len || strncmp(st->family, s->name, len) != 0) {
		strbuf_addf(out, "# HELP %.*s ", (int)len, s->name);
		add_help(out, s->help);
		strbuf_addf(out, "\n# TYPE %.*s %s\n", (int)len, s->name, types[s->type]);
		st->family = s->name;
		st->family_len = len;
	}
	strbuf_addstr(out, s->name);
	if (*s->labels) {
		strbuf_addch(out, '{');
		strbuf_addstr(out, s->labels);
		strbuf_addch(out, '}');
	}
	strbuf_addch(out, ' ');
	exposition_format_value(out, s->value);
	strbuf_addch(out, '\n');
	return 0;
}

int exposition_render(struct registry *reg, struct strbuf *out)
{
	struct render_state st = { .out = out };

	(void)registry_foreach(reg, render_one, &st);
	return out->failed ? -ENOMEM : 0;
}
