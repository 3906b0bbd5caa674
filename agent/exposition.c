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
};

static int render_one(struct series *s, void *arg)
{
	struct render_state *st = arg;
	struct strbuf *out = st->out;

	if (!st->family || strcmp(st->family, s->name) != 0) {
		strbuf_addf(out, "# HELP %s ", s->name);
		add_help(out, s->help);
		strbuf_addf(out, "\n# TYPE %s %s\n", s->name,
			    s->type == METRIC_COUNTER ? "counter" : "gauge");
		st->family = s->name;
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
