/* SPDX-License-Identifier: MIT */
#ifndef FABMON_WEB_PAGE_H
#define FABMON_WEB_PAGE_H

/* agent/http/page.html, built in by agent/http/embed.sh: the page GET / serves. */
extern const char web_page[];
extern const unsigned long web_page_len;

#endif
