# SPDX-License-Identifier: GPL-2.0-only
#
# ORFS / MXBD / knet / regcache: remote storage over RDMA.
#
#   make             modules for one kernel, the server, unit tests and test programs
#   make deps        install everything needed (apt-get; idempotent)
#   make demo        build, boot a guest, show the suite at work
#   make check       unit tests, static checks, in-guest tests on 6.12 (each script
#                    once, over soft-RoCE, soft-iWARP or TCP) and on 6.1 (what 6.1
#                    builds differently), as each script's "# lanes:" line says
#   make check-all   make check with every in-guest test on every kernel and transport
#   make check-quick what needs no guest: builds for both kernels with sparse, unit
#                    tests (also under ASan/UBSan), checkpatch, kernel-doc, shellcheck
#   make check-iwarp make check-all's soft-iWARP lanes
#   make check-tcp   make check-all's lanes over knet's TCP transport
#   make debug-kernel  build (once) the 6.12 debug kernel: KASAN, lockdep, kmemleak...
#   make check-debug the in-guest tests on the debug kernel, over rxe and siw
#   make bench       benchmarks in the guest (BENCH=<name> for one)
#   make lint        checkpatch and kernel-doc over our kernel code, shellcheck,
#                    man --warnings over the manual pages
#   make sparse      sparse over our kernel code, every installed kernel
#   make fuzz        the server's decoding under libFuzzer (FUZZ_SECONDS=30)
#   make deb         Debian packages orfs-dkms, orfs-server, orfs-client (build/deb/)
#   make install     server, tools, man pages, systemd units, modules (DESTDIR=);
#                    install-user without the modules, for DKMS (make dkms-src)
#
# KVER=<version> or KDIR=<kernel build dir> picks the kernel; the default is
# the newest installed Debian headers. STRICT=1 makes warnings errors and
# runs sparse on every file it compiles, its warnings errors too (so an
# object built with STRICT=1 has passed both; make sparse checks them all). Modules for kernel V are built in
# build/kmod/V/, so several kernels never clash.

SHELL := /bin/bash
.SUFFIXES:

KVER ?= $(shell . scripts/lib-kernel.sh && resolve_kernel "")
KDIR ?= /lib/modules/$(KVER)/build
# The release the kernel reports (uname -r); Debian's kernel.release differs.
KREL := $(shell sed -n 's/^\#define UTS_RELEASE "\(.*\)"/\1/p' \
	$(KDIR)/include/generated/utsrelease.h 2>/dev/null)
KOUT := build/kmod/$(KREL)

# Kernel sources, copied into $(KOUT) (Kbuild writes next to the sources).
KSRC := Kbuild $(wildcard knet/Kbuild knet/*.[ch] knet/uapi/*.h mxbd/uapi/*.h orfs/uapi/*.h \
	tests/kmod/Kbuild tests/kmod/*.[ch] \
	regcache/Kbuild regcache/*.[ch] orfs/Kbuild orfs/*.[ch] \
	mxbd/Kbuild mxbd/*.[ch])

CC ?= cc
# EXTRA_CFLAGS and EXTRA_LDFLAGS: a packager's flags (debian/rules passes
# dpkg-buildflags' hardening ones).
USER_CFLAGS := -std=c11 -Wall -Wextra -Werror -O2 -g -D_GNU_SOURCE \
	-I. -fno-strict-aliasing $(EXTRA_CFLAGS)
BIN := build/bin

# Userspace programs: the server, the unit tests and the test programs
# (tests/src/, never installed). tools/ holds what make install installs.
# The protocol, authentication and libfabric helpers the server and the test
# programs share, built once into a static library both link.
COMMON_SRC := server/proto.c server/auth.c server/fab.c
COMMON_LIB := build/lib/libknetuser.a
# The server's code the unit tests and the fuzzer build too (with proto.c and
# auth.c: they build without libfabric).
SERVER_CORE_SRC := server/dispatch.c server/block.c server/sched.c server/config.c server/fsvc.c \
	server/siphash.c server/replay.c server/fdcache.c server/locks.c
SERVER_LIB_SRC := server/proto.c server/auth.c $(SERVER_CORE_SRC)
UNIT_SRC := $(wildcard tests/unit/*.c)
USER_HDR := $(wildcard knet/uapi/*.h mxbd/uapi/*.h orfs/uapi/*.h server/*.h tests/unit/*.h tests/src/sockio.h)

# The suite's version: dkms.conf's.
VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
# What DKMS builds from: the modules' sources and their build glue.
DKMS_SRC := dkms.conf Makefile Kbuild scripts/lib-kernel.sh $(wildcard knet/Kbuild knet/*.[ch] \
	knet/uapi/*.h regcache/Kbuild regcache/*.[ch] orfs/Kbuild orfs/*.[ch] orfs/uapi/*.h \
	mxbd/Kbuild mxbd/*.[ch] mxbd/uapi/*.h)

.PHONY: all modules modules-all userspace deb dkms-src install-user install-server install-client install-modules deps demo check check-all check-quick check-tcp check-iwarp check-debug debug-kernel siw bench lint sparse clean help install
all: modules userspace

help:
	@sed -n '3,/^$$/p' Makefile | sed 's/^# \{0,1\}//'

modules:
	@[ -n "$(KREL)" ] || { echo "no kernel headers at '$(KDIR)': run 'make deps' or set KVER/KDIR" >&2; exit 2; }
	@mkdir -p $(KOUT)
	@cp -pu --parents $(KSRC) $(KOUT)/
	$(MAKE) -C $(KDIR) M=$(CURDIR)/$(KOUT) W=1 \
		$(if $(STRICT),KCFLAGS=-Werror C=$(or $(C),1) CHECK="sparse -Wsparse-error") modules

# Modules for every installed kernel (what the guest tests need).
modules-all:
	@set -e; for v in $$(. scripts/lib-kernel.sh && list_kernels); do \
		$(MAKE) --no-print-directory modules KVER=$$v KDIR=/lib/modules/$$v/build; \
	done

userspace: $(BIN)/unit-tests $(BIN)/orfs-server $(BIN)/knet-ping $(BIN)/knet-load $(BIN)/knet-fs \
	$(BIN)/knet-test $(BIN)/regcache-test $(BIN)/orfs-fstest $(BIN)/orfs-fsx $(BIN)/folio-count \
	$(BIN)/log-replay $(BIN)/tcp-peer

SERVER_SRC := server/main.c server/conn.c server/exports.c server/reload.c server/shard.c \
	server/fabric.c server/hotplug.c server/fault.c server/engine.c server/splice.c server/workers.c \
	server/tcp.c

$(COMMON_LIB): $(COMMON_SRC) $(USER_HDR)
	@mkdir -p build/lib/obj
	@set -e; for f in $(COMMON_SRC); do \
		$(CC) $(USER_CFLAGS) -c -o build/lib/obj/$$(basename $$f .c).o $$f; done
	@rm -f $@
	ar rcs $@ $(patsubst server/%.c,build/lib/obj/%.o,$(COMMON_SRC))

$(BIN)/orfs-server: $(SERVER_SRC) $(SERVER_CORE_SRC) $(COMMON_LIB) $(USER_HDR)
	@mkdir -p $(BIN)
	$(CC) $(USER_CFLAGS) -pthread -o $@ $(SERVER_SRC) $(SERVER_CORE_SRC) $(COMMON_LIB) \
		$(EXTRA_LDFLAGS) -lfabric -lrdmacm -libverbs -lcrypto

KCLIENT_SRC := tests/src/kclient.c $(COMMON_LIB)

$(BIN)/knet-ping: tests/src/knet-ping.c $(KCLIENT_SRC) $(USER_HDR) tests/src/kclient.h
	@mkdir -p $(BIN)
	$(CC) $(USER_CFLAGS) -o $@ tests/src/knet-ping.c $(KCLIENT_SRC) -lfabric -lrdmacm -lcrypto

$(BIN)/knet-fs: tests/src/knet-fs.c $(KCLIENT_SRC) $(USER_HDR) tests/src/kclient.h
	@mkdir -p $(BIN)
	$(CC) $(USER_CFLAGS) -o $@ tests/src/knet-fs.c $(KCLIENT_SRC) -lfabric -lrdmacm -lcrypto

$(BIN)/tcp-peer: tests/src/tcp-peer.c $(COMMON_LIB) $(USER_HDR)
	@mkdir -p $(BIN)
	$(CC) $(USER_CFLAGS) -o $@ tests/src/tcp-peer.c $(COMMON_LIB)

$(BIN)/knet-test: tests/src/knet-test.c tests/src/ktest.c tests/src/ktest.h $(COMMON_LIB) $(USER_HDR)
	@mkdir -p $(BIN)
	$(CC) $(USER_CFLAGS) -o $@ tests/src/knet-test.c tests/src/ktest.c $(COMMON_LIB)

$(BIN)/orfs-fsx: tests/src/orfs-fsx.c
	@mkdir -p $(BIN)
	$(CC) $(USER_CFLAGS) -o $@ tests/src/orfs-fsx.c -luring

$(BIN)/folio-count: tests/src/folio-count.c
	@mkdir -p $(BIN)
	$(CC) $(USER_CFLAGS) -o $@ tests/src/folio-count.c

$(BIN)/log-replay: tests/src/log-replay.c
	@mkdir -p $(BIN)
	$(CC) $(USER_CFLAGS) -o $@ tests/src/log-replay.c

$(BIN)/orfs-fstest: tests/src/orfs-fstest.c
	@mkdir -p $(BIN)
	$(CC) $(USER_CFLAGS) -o $@ tests/src/orfs-fstest.c

$(BIN)/regcache-test: tests/src/regcache-test.c tests/src/ktest.c tests/src/ktest.h $(COMMON_LIB) \
		$(USER_HDR)
	@mkdir -p $(BIN)
	$(CC) $(USER_CFLAGS) -o $@ tests/src/regcache-test.c tests/src/ktest.c $(COMMON_LIB) -lpthread

$(BIN)/knet-load: tests/src/knet-load.c $(KCLIENT_SRC) $(USER_HDR) tests/src/kclient.h
	@mkdir -p $(BIN)
	$(CC) $(USER_CFLAGS) -o $@ tests/src/knet-load.c $(KCLIENT_SRC) -lfabric -lrdmacm -lcrypto

$(BIN)/unit-tests: $(UNIT_SRC) $(SERVER_LIB_SRC) server/workers.c $(USER_HDR)
	@mkdir -p $(BIN)
	$(CC) $(USER_CFLAGS) -pthread -o $@ $(UNIT_SRC) $(SERVER_LIB_SRC) server/workers.c -lcunit -lcrypto

# The same under AddressSanitizer and UndefinedBehaviorSanitizer: any report fails it.
$(BIN)/unit-tests-asan: $(UNIT_SRC) $(SERVER_LIB_SRC) server/workers.c $(USER_HDR)
	@mkdir -p $(BIN)
	$(CC) $(USER_CFLAGS) -O1 -fno-omit-frame-pointer -fsanitize=address,undefined \
		-fno-sanitize-recover=all -pthread -o $@ $(UNIT_SRC) $(SERVER_LIB_SRC) server/workers.c \
		-lcunit -lcrypto

# The fuzzer (clang's libFuzzer with ASan and UBSan) and its seed writer.
FUZZ_CC ?= clang-14
FUZZ_CFLAGS := -std=c11 -g -O1 -D_GNU_SOURCE -I. -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -Wall -Wextra -Werror
FUZZ_SECONDS ?= 30

$(BIN)/fuzz-server: tests/fuzz/fuzz_server.c $(SERVER_LIB_SRC) $(USER_HDR)
	@mkdir -p $(BIN)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ tests/fuzz/fuzz_server.c $(SERVER_LIB_SRC) -lcrypto

$(BIN)/fuzz-seeds: tests/fuzz/seeds.c $(COMMON_LIB) $(USER_HDR) orfs/uapi/orfs_proto.h
	@mkdir -p $(BIN)
	$(CC) $(USER_CFLAGS) -o $@ tests/fuzz/seeds.c $(COMMON_LIB)

.PHONY: fuzz
# make fuzz [FUZZ_SECONDS=n]: run the fuzzer for a bounded time; the corpus
# grows in build/fuzz/corpus, crashes land in build/fuzz/.
fuzz: $(BIN)/fuzz-server $(BIN)/fuzz-seeds
	@mkdir -p build/fuzz/corpus build/fuzz/seeds
	@$(BIN)/fuzz-seeds build/fuzz/seeds
	$(BIN)/fuzz-server -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix=build/fuzz/ build/fuzz/corpus build/fuzz/seeds

deps:
	@scripts/deps.sh

demo: deps
	@scripts/demo.sh

check: deps
	@scripts/check.sh

check-quick: deps
	@CHECK_QUICK=1 scripts/check.sh

# make check, but every guest test on every kernel.
check-all: deps
	@CHECK_ALL=1 scripts/check.sh

# siw.ko, which Debian's kernels lack, built from their linux-source packages.
siw: deps
	@set -e; for v in $$(. scripts/lib-kernel.sh && list_kernels); do scripts/build-siw.sh $$v; done

debug-kernel: deps
	@scripts/debug-kernel.sh > /dev/null

check-debug: deps
	@scripts/check-debug.sh

check-tcp: deps
	@CHECK_ALL=1 CHECK_TRANSPORTS=tcp scripts/check.sh

check-iwarp: deps
	@CHECK_ALL=1 CHECK_TRANSPORTS=siw scripts/check.sh

bench: deps
	@scripts/bench.sh $(BENCH)

lint:
	@scripts/lint.sh

sparse:
	@set -e; for v in $$(. scripts/lib-kernel.sh && list_kernels); do \
		echo "sparse: $$v"; \
		$(MAKE) --no-print-directory modules KVER=$$v KDIR=/lib/modules/$$v/build C=2 STRICT=1; \
	done

# make install [DESTDIR=...] [PREFIX=/usr/local]: install-user and
# install-modules. install-user is install-server (the server, its manual
# pages, its unit and an example configuration) and install-client (the
# tools in tools/, their manual pages, the udev rule and the mxbd-volumes
# unit); no test program. install-modules: the modules for KVER into
# /lib/modules/KVER/extra, then depmod. With DKMS (make dkms-src),
# install-user alone. UNITDIR, UDEVDIR and EXAMPLEDIR place the units, the
# udev rule and the examples (the Debian packages use the system's own).
PREFIX ?= /usr/local
UNITDIR ?= /etc/systemd/system
UDEVDIR ?= /etc/udev/rules.d
EXAMPLEDIR ?=
install: install-user install-modules

install-user: install-server install-client

# A unit names the programs where PREFIX put them.
install-unit = sed 's\#/usr/local/sbin/\#$(PREFIX)/sbin/\#g' $(1) > $(2) && chmod 644 $(2)

install-server: $(BIN)/orfs-server
	install -D -m 755 $(BIN)/orfs-server $(DESTDIR)$(PREFIX)/sbin/orfs-server
	set -e; for p in orfs-server.8 orfs-server.conf.5; do \
		install -D -m 644 Documentation/man/$$p $(DESTDIR)$(PREFIX)/share/man/man$${p##*.}/$$p; done
	install -d $(DESTDIR)$(UNITDIR)
	$(call install-unit,server/orfs-server.service,$(DESTDIR)$(UNITDIR)/orfs-server.service)
	install -D -m 644 server/orfs-server.conf.example \
		$(DESTDIR)$(or $(EXAMPLEDIR),/etc/orfs)/orfs-server.conf.example

install-client:
	install -D -m 755 tools/mount.orfs $(DESTDIR)/sbin/mount.orfs
	install -D -m 755 tools/orfsstat $(DESTDIR)$(PREFIX)/bin/orfsstat
	install -D -m 755 tools/mxbdctl $(DESTDIR)$(PREFIX)/sbin/mxbdctl
	set -e; for p in orfs.5 mount.orfs.8 mxbdctl.8 orfsstat.1; do \
		install -D -m 644 Documentation/man/$$p $(DESTDIR)$(PREFIX)/share/man/man$${p##*.}/$$p; done
	install -d $(DESTDIR)$(UNITDIR)
	$(call install-unit,tools/mxbd-volumes.service,$(DESTDIR)$(UNITDIR)/mxbd-volumes.service)
	install -D -m 644 tools/60-mxbd.rules $(DESTDIR)$(UDEVDIR)/60-mxbd.rules
	install -D -m 644 tools/mxbd-volumes.example \
		$(DESTDIR)$(or $(EXAMPLEDIR),/etc/mxbd)/volumes.example

install-modules: modules
	install -d $(DESTDIR)/lib/modules/$(KREL)/extra
	install -m 644 $(KOUT)/*/*.ko $(DESTDIR)/lib/modules/$(KREL)/extra/
	$(if $(DESTDIR),,depmod -a $(KREL))

# make deb: the Debian packages orfs-dkms, orfs-server and orfs-client
# (debian/), built from a copy of the tracked files in build/deb/src, into
# build/deb/; then lintian over them.
deb:
	rm -rf build/deb && mkdir -p build/deb/src
	git ls-files -z | xargs -0 cp -p --parents -t build/deb/src
	cd build/deb/src && dpkg-buildpackage -b -us -uc > ../build.log 2>&1 || \
		{ tail -n 40 ../build.log; exit 1; }
	lintian --pedantic --fail-on error,warning,info,pedantic build/deb/*.changes
	@ls build/deb/*.deb

# make dkms-src [DESTDIR=...]: the DKMS source tree, /usr/src/orfs-VERSION;
# then dkms install orfs/VERSION builds and installs for a kernel, and
# DKMS does it again at each kernel update.
dkms-src:
	install -d $(DESTDIR)/usr/src/orfs-$(VERSION)
	cp -p --parents $(DKMS_SRC) $(DESTDIR)/usr/src/orfs-$(VERSION)/

clean:
	rm -rf build
