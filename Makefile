# SPDX-License-Identifier: MIT
# fabmon: one non-recursive Makefile. `make help` lists the targets.

VERSION    := 0.1.0
BUILD      := build
PREFIX     ?= /usr/local
DESTDIR    ?=

# Debian packages the build, the tests and the benchmarks need (make deps).
DEB_PKGS := gcc make pkg-config libc6-dev libmicrohttpd-dev libsqlite3-dev sqlite3 \
	libinih-dev libnl-3-dev libnl-route-3-dev check prometheus prometheus-node-exporter \
	iproute2 iputils-ping netcat-openbsd curl clang-format ethtool procps \
	clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev nftables chromium \
	libpcap-dev tshark tcpdump lldpd libclang-rt-14-dev jq libjansson-dev e2fsprogs \
	libcap-ng-dev dpkg-dev lintian systemd python3-yaml adduser \
	libyaml-dev libgnutls28-dev libcrypt-dev openssl apache2-utils wrk time \
	iperf3 stress-ng

PKG_LIBS := libmicrohttpd sqlite3 inih libnl-3.0 libnl-route-3.0 libbpf libpcap jansson libcap-ng \
	yaml-0.1 gnutls libxcrypt

CC      ?= cc
WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror
CFLAGS  ?= -O2 -g
CPPFLAGS += -D_GNU_SOURCE -DFABMON_VERSION='"$(VERSION)"' -I$(BUILD)/bpf
CLANG   ?= clang
BPFTOOL ?= bpftool
# The probes' target arch for CO-RE's PT_REGS and syscall wrappers.
BPF_ARCH := $(shell uname -m | sed 's/x86_64/x86/; s/aarch64/arm64/')
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -Wall -Werror -I$(BUILD) -Ibpf
PKG_CFLAGS = $(shell pkg-config --cflags $(PKG_LIBS) 2>/dev/null)
PKG_LDLIBS = $(shell pkg-config --libs $(PKG_LIBS) 2>/dev/null)
LDLIBS  += $(PKG_LDLIBS) -lpthread -lm

ifeq ($(V),1)
Q :=
msg = @true
else
Q := @
msg = @printf '  %-8s %s\n' $(1) $(2)
endif

.DELETE_ON_ERROR:
.SUFFIXES:
.PHONY: all help deps run test unit-test san-runner bench fuzz install deb format format-check clean

LIB_SRCS := $(filter-out agent/main.c,$(wildcard agent/*.c)) $(wildcard collector/*.c) \
	$(wildcard collector/mesh/*.c)
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o) $(BUILD)/schema/schema.o $(BUILD)/web/page.o
MAIN_OBJ := $(BUILD)/agent/main.o
SCHEMA_SQL := $(sort $(wildcard schema/[0-9]*.sql))

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_SKELS := $(BPF_SRCS:bpf/%.bpf.c=$(BUILD)/bpf/%.skel.h)

TEST_SRCS := $(wildcard tests/unit/*.c)
TEST_OBJS := $(TEST_SRCS:%.c=$(BUILD)/%.o)
LAB_SRCS := $(wildcard tests/lab/*.c)
LAB_BINS := $(LAB_SRCS:tests/lab/%.c=$(BUILD)/lab/%)
# libFuzzer harnesses over the packet path, built with clang's sanitizers.
FUZZ_SRCS := $(wildcard tests/fuzz/*.c)
FUZZ_BINS := $(FUZZ_SRCS:tests/fuzz/%.c=$(BUILD)/fuzz/%)
FUZZ_LIB  := collector/packet.c collector/capture.c collector/kmap.c collector/lldp.c
# The agent's parsers' harnesses (config file, sysfs values, API query
# parameters, packed samples) link the whole library, built the same way.
FUZZ_AGENT := $(addprefix $(BUILD)/fuzz/,fuzz_config fuzz_sysfs fuzz_http_query fuzz_pack \
	fuzz_stage)
FUZZ_OBJS := $(LIB_SRCS:%.c=$(BUILD)/fuzz/obj/%.o)
FUZZ_SAN  := -g -O1 -fno-sanitize-recover=all
FUZZ_SECS ?= 300
BENCH_SRCS := $(wildcard tests/bench/*.c)
BENCH_BINS := $(BENCH_SRCS:tests/bench/%.c=$(BUILD)/bench/%)

all: $(BUILD)/fabmon

help:
	@echo 'fabmon $(VERSION) targets:'
	@echo '  make deps          install the Debian packages build, tests and benches need (apt-get)'
	@echo '  make all           build $(BUILD)/fabmon (default)'
	@echo '  make run           deps + build + run the agent here: ./var/fabmon.db, 127.0.0.1:9478'
	@echo '  make test          deps + build + every test (unit, metrics lint, HTTP, store, lab)'
	@echo '  make san-runner    the unit suite built with ASan and UBSan into $(BUILD)/san/ (make test runs it)'
	@echo '  make bench         deps + build + benchmarks that print figures (not asserted)'
	@echo '  make fuzz          deps + libFuzzer on the packet, capture, config, sysfs, API query and pack parsers and the stage's replay, FUZZ_SECS each'
	@echo '  make install       install the binary, config and unit under $$(DESTDIR)$$(PREFIX)'
	@echo '  make deb           build $(BUILD)/fabmon_VERSION-1_ARCH.deb (dpkg-deb; no debhelper)'
	@echo '  make format        reformat the C sources with .clang-format'
	@echo '  make format-check  fail if clang-format would change a C source'
	@echo '  make clean         remove $(BUILD)/'
	@echo 'Options: V=1 shows full commands; CI=true is set by .ci/run.'

# Installs only what is missing, so a second run takes seconds.
deps:
	@missing=$$(for p in $(DEB_PKGS); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed$$' || echo $$p; \
	done); \
	if [ -n "$$missing" ]; then \
		echo "deps: installing:" $$missing; \
		if [ "$$(id -u)" != 0 ]; then echo "deps: need root to apt-get install" >&2; exit 1; fi; \
		DEBIAN_FRONTEND=noninteractive apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	else echo "deps: all $(words $(DEB_PKGS)) packages present"; fi

$(BUILD)/%.o: %.c
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(PKG_CFLAGS) $(CFLAGS) $(WARN) -MMD -MP -c $< -o $@

# vmlinux.h: every kernel type, from the running kernel's BTF (CO-RE
# relocates field offsets at load time, so the probes run on other kernels).
$(BUILD)/vmlinux.h:
	$(call msg,GEN,$@)
	@mkdir -p $(@D)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) $(BUILD)/vmlinux.h
	$(call msg,BPF,$<)
	@mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/bpf/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(call msg,GENSKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

# C that includes a skeleton waits for all of them.
$(LIB_OBJS) $(MAIN_OBJ) $(TEST_OBJS): | $(BPF_SKELS)

# The numbered migrations are compiled into the binary so that a database is
# migrated by the program that will use it, with nothing to find at run time.
$(BUILD)/schema/schema.c: $(SCHEMA_SQL) schema/embed.sh
	$(call msg,GEN,$@)
	@mkdir -p $(@D)
	$(Q)sh schema/embed.sh $(SCHEMA_SQL) > $@

$(BUILD)/schema/schema.o: $(BUILD)/schema/schema.c
	$(call msg,CC,$<)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -Iagent -c $< -o $@

# The timeline page GET / serves, built into the binary.
$(BUILD)/web/page.c: web/index.html web/embed.sh
	$(call msg,GEN,$@)
	@mkdir -p $(@D)
	$(Q)sh web/embed.sh web/index.html > $@

$(BUILD)/web/page.o: $(BUILD)/web/page.c
	$(call msg,CC,$<)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -Iagent -c $< -o $@

$(BUILD)/fabmon: $(MAIN_OBJ) $(LIB_OBJS)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/unit/runner: $(TEST_OBJS) $(LIB_OBJS)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS) $(shell pkg-config --libs check 2>/dev/null)

# Lab tools: traffic generators the lab tests run inside their namespaces.
$(BUILD)/lab/%: tests/lab/%.c bpf/roce.h $(wildcard tests/lab/*.h)
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -o $@ $<

$(BUILD)/fuzz/%: tests/fuzz/%.c $(FUZZ_LIB) $(wildcard collector/*.h bpf/*.h)
	$(call msg,FUZZ,$@)
	@mkdir -p $(@D)
	$(Q)$(CLANG) -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all $(WARN) -o $@ $< $(FUZZ_LIB) -lpcap

$(BUILD)/fuzz/obj/%.o: %.c | $(BPF_SKELS)
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CLANG) $(CPPFLAGS) $(PKG_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer-no-link,address,undefined \
		$(WARN) -Wno-gnu-variable-sized-type-not-at-end -MMD -MP -c $< -o $@

$(BUILD)/fuzz/libfabmon.a: $(FUZZ_OBJS) $(BUILD)/schema/schema.o $(BUILD)/web/page.o
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(FUZZ_AGENT): $(BUILD)/fuzz/%: tests/fuzz/%.c $(BUILD)/fuzz/libfabmon.a
	$(call msg,FUZZ,$@)
	$(Q)$(CLANG) $(CPPFLAGS) $(PKG_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer,address,undefined $(WARN) \
		-o $@ $< $(BUILD)/fuzz/libfabmon.a $(LDLIBS)

$(BUILD)/bench/%: tests/bench/%.c $(LIB_OBJS)
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(PKG_CFLAGS) $(CFLAGS) $(WARN) -o $@ $^ $(LDLIBS)

run: deps
	$(Q)$(MAKE) --no-print-directory all
	@mkdir -p var
	./$(BUILD)/fabmon agent --db var/fabmon.db --listen 127.0.0.1:9478

test: deps
	$(Q)$(MAKE) --no-print-directory all $(BUILD)/tests/unit/runner $(LAB_BINS) $(FUZZ_BINS) \
		san-runner $(BUILD)/bench/ingest
	$(Q)FABMON=$(CURDIR)/$(BUILD)/fabmon UNIT_RUNNER=$(CURDIR)/$(BUILD)/tests/unit/runner \
		BENCH_DIR=$(CURDIR)/$(BUILD)/bench \
		SAN_RUNNER=$(CURDIR)/$(BUILD)/san/tests/unit/runner \
		LAB_BIN=$(CURDIR)/$(BUILD)/lab FUZZ_BIN=$(CURDIR)/$(BUILD)/fuzz \
		SHARED_FIXTURES=$(CURDIR)/../shared/fixtures sh tests/run.sh

# The unit suite once more, built in its own tree with AddressSanitizer and
# UndefinedBehaviorSanitizer (tests/unit/t_sanitizers.sh runs it): an
# overrun or a misaligned read that the plain build survives fails there.
SAN_CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
san-runner:
	$(Q)$(MAKE) --no-print-directory BUILD=$(BUILD)/san CFLAGS="$(SAN_CFLAGS)" \
		$(BUILD)/san/tests/unit/runner

unit-test: $(BUILD)/tests/unit/runner
	$(Q)SHARED_FIXTURES=$(CURDIR)/../shared/fixtures ./$<

bench: deps
	$(Q)$(MAKE) --no-print-directory all $(BENCH_BINS) $(LAB_BINS)
	$(Q)FABMON=$(CURDIR)/$(BUILD)/fabmon BENCH_DIR=$(CURDIR)/$(BUILD)/bench sh tests/bench/run.sh

# Each harness for FUZZ_SECS (default 300) from the committed seeds; what it
# finds new goes to build/fuzz/corpus/NAME, a crash to build/fuzz/.
fuzz: deps
	$(Q)$(MAKE) --no-print-directory $(FUZZ_BINS)
	$(Q)FUZZ_BIN=$(CURDIR)/$(BUILD)/fuzz FUZZ_SECS=$(FUZZ_SECS) sh tests/fuzz/run.sh

# The unit names /usr/bin/fabmon (the package's); here it runs $(PREFIX)'s.
# An edited config is kept, as dpkg keeps a conffile. Into the live system
# (no DESTDIR), the package's postinst makes the unit's user "fabmon".
install: all
	install -D -m 0755 $(BUILD)/fabmon $(DESTDIR)$(PREFIX)/bin/fabmon
	[ -e $(DESTDIR)/etc/fabmon/fabmon.conf ] || \
		install -D -m 0644 packaging/fabmon.conf $(DESTDIR)/etc/fabmon/fabmon.conf
	sed 's#^ExecStart=/usr/bin/fabmon #ExecStart=$(PREFIX)/bin/fabmon #' \
		packaging/fabmon.service >$(BUILD)/fabmon.service
	install -D -m 0644 $(BUILD)/fabmon.service $(DESTDIR)/lib/systemd/system/fabmon.service
	install -D -m 0644 packaging/fabmon.1 $(DESTDIR)$(PREFIX)/share/man/man1/fabmon.1
	install -d -m 0750 $(DESTDIR)/var/lib/fabmon
	install -d $(DESTDIR)$(PREFIX)/share/fabmon/grafana $(DESTDIR)$(PREFIX)/share/fabmon/prometheus
	install -m 0644 dashboards/grafana/*.json $(DESTDIR)$(PREFIX)/share/fabmon/grafana/
	install -m 0644 dashboards/prometheus/*.rules.yml packaging/prometheus/* \
		$(DESTDIR)$(PREFIX)/share/fabmon/prometheus/
	[ -n "$(DESTDIR)" ] || sh packaging/deb/postinst configure

# Version from the binary (fabmon version); packaging/deb/build.sh says how.
deb: all
	$(call msg,DEB,$(BUILD)/fabmon_$(VERSION)-1_$(shell dpkg --print-architecture).deb)
	$(Q)sh packaging/deb/build.sh $(BUILD)/fabmon $(BUILD) >/dev/null

C_FILES = $(shell git ls-files '*.c' '*.h' 2>/dev/null)

format:
	clang-format -i $(C_FILES)

format-check:
	$(Q)bad=0; for f in $(C_FILES); do \
		clang-format --dry-run --Werror $$f >/dev/null 2>&1 || { echo "format-check: $$f"; bad=1; }; \
	done; exit $$bad

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
