# SPDX-License-Identifier: GPL-2.0-only
# Helpers for in-guest test scripts. tests/harness/guest-init runs each script with
#   ORFS_PROJ     the project's top directory (read-only)
#   ORFS_KVER     the running kernel's version
#   ORFS_KMOD     where this kernel's build of our modules is
#   ORFS_BIN      the project's userspace programs
#   ORFS_RESULTS  a writable directory shared with the host
#   ORFS_ADDR     the guest's address with rxe0 on it (ORFS_DEV, ORFS_RDMA_DEV)
#   ORFS_SLOW     how slow the guest runs, in hundredths of a usual host
#                 of the bed (at least 100): see slow below
#   ORFS_TRANSPORT  knet's transport for the run: rdma, or tcp (the servers
#                 started here listen on TCP too, load_suite makes it the
#                 modules' default, and the ktest tools and the userspace
#                 clients, knet-ping, knet-fs and knet-load, use it)
# A script exits 0 to pass, 77 to skip (after printing "SKIP: reason"), and
# anything else to fail. Cleanup registered with on_exit runs in any case.
# Each step (step TEXT) gets a verdict line as TAP writes them, "ok N -
# TEXT (S s)" once the next step starts or the script ends, "not ok N -
# TEXT" for the one a failure ended, then "1..N".
set -euo pipefail

: "${ORFS_KMOD:?not running inside the test guest (use tests/harness/vm run)}"
ORFS_TRANSPORT=${ORFS_TRANSPORT:-rdma}
export KTEST_TRANSPORT=$ORFS_TRANSPORT KNET_TRANSPORT=$ORFS_TRANSPORT
# tcp_listen ADDR: the server's option for a TCP listener on ADDR in a TCP run
# (and -T 4: two progress threads for RDMA and two for TCP, as an RDMA run
# has two in all)
tcp_listen() {
	[ "$ORFS_TRANSPORT" = tcp ] || return 0
	case $1 in
	*:*) echo "-a tcp://[$1] -T 4" ;;
	*) echo "-a tcp://$1 -T 4" ;;
	esac
}

_exit_hooks=()
_exit_rc=0	# set by a cleanup that finds something wrong
_server_started=	# set once this script started orfs-server
on_exit() { _exit_hooks=("$*" "${_exit_hooks[@]}"); }
_run_exit_hooks() {
	local rc=$? h
	set +e
	for h in "${_exit_hooks[@]}"; do eval "$h"; done
	[ "$rc" -eq 0 ] && rc=$_exit_rc
	if [ "$_step" -gt 0 ]; then
		case $rc in
		0) _step_verdict ok ;;
		77) _step_verdict ok " # SKIP" ;;
		*) _step_verdict "not ok" ;;
		esac
		echo "1..$_step"
	fi
	# A failure report's tail shows the server's side too.
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ -n "$_server_started" ]; then
		echo "-- the last lines of $ORFS_SERVER_LOG:" >&2
		tail -n 10 "$ORFS_SERVER_LOG" >&2
	fi
	exit $rc
}
trap _run_exit_hooks EXIT

_step=0 _step_what='' _step_start=0
# _step_verdict OK [DIRECTIVE]: the verdict line of the current step
_step_verdict() {
	echo "$1 $_step - $_step_what ($((SECONDS - _step_start)) s)${2:-}"
}
# step TEXT: the step before passed; announce what the script checks next
step() {
	[ "$_step" -eq 0 ] || _step_verdict ok
	_step=$((_step + 1)) _step_what=$* _step_start=$SECONDS
	echo "== $_step. $* (at ${SECONDS}s)"
}

fail() { echo "FAIL: $*" >&2; exit 1; }

# slow N: N scaled by the guest's slowness (ORFS_SLOW, measured by
# tests/harness/guest-init before the script), rounded up: for a bound
# that a slower host would stretch (work done between two time stamps).
# A wait for a condition needs none of it (wait_until).
ORFS_SLOW=${ORFS_SLOW:-100}
slow() { echo $((($1 * ORFS_SLOW + 99) / 100)); }
skip() { echo "SKIP: $*"; exit 77; }

# expect_eq WHAT GOT WANT
expect_eq() { [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"; }

# expect_fail CMD...: CMD must exit non-zero
expect_fail() { if "$@"; then fail "'$*' succeeded but must fail"; fi; }

# tally N FUNC ERRFILE: run FUNC 0, FUNC 1, ... FUNC N-1, each in a
# subshell, its output dropped and its errors appended to ERRFILE; prints
# "succeeded failed"
tally() {
	local i ok=0 bad=0
	for ((i = 0; i < $1; i++)); do
		if ("$2" "$i") > /dev/null 2>> "$3"; then
			ok=$((ok + 1))
		else
			bad=$((bad + 1))
		fi
	done
	echo "$ok $bad"
}

# only_known_errors ERRFILE: after a run against a server that answers at
# random, show the errors programs printed to ERRFILE (numbers dropped);
# fail if one is no errno ("Unknown error"), or if knet did not log the
# made-up statuses it took as EIO
only_known_errors() {
	sed 's/[0-9]\+//g' "$1" | sort | uniq -c | sort -rn | awk 'NR <= 12'
	if grep 'Unknown error' "$1"; then
		fail "an error no errno names reached a program"
	fi
	expect_grep 'knet: reply with status [0-9]+, which is no errno: taken as EIO' <(dmesg)
}

# ep_stats [PORT]: the knet endpoints' counters, of those connected to PORT
# if given
ep_stats() {
	local f
	for f in /sys/kernel/debug/knet/endpoints/*/stats; do
		[ -e "$f" ] || continue
		[ -z "${1:-}" ] || grep -q "^peer .*:$1\$" "$f" || continue
		cat "$f"
	done
}
# ep_each COUNTER: COUNTER of each knet endpoint, one line each, in a fixed order
ep_each() { ep_stats | awk -v c="$1" '$1 == c { print $2 }'; }
# ep_count: how many knet endpoints there are
ep_count() { ls /sys/kernel/debug/knet/endpoints | wc -l; }
# ep_sum COUNTER: COUNTER summed over the knet endpoints
ep_sum() { ep_stats | awk -v c="$1" '$1 == c { s += $2 } END { print s + 0 }'; }
# ep_max COUNTER [FIELD [PORT]]: the largest FIELD (default 2) of COUNTER's
# line of the knet endpoints (those connected to PORT if given)
ep_max() {
	ep_stats "${3:-}" | awk -v c="$1" -v f="${2:-2}" '$1 == c && $f > m { m = $f } END { print m + 0 }'
}

# dev_max_io: the largest request knet maps on ORFS_RDMA_DEV in one
# registration: 1 MiB, or a page less than the device's fast-registration
# page list when that is shorter (siw: 256 pages, so 1020 KiB), as nvme-rdma
# bounds its requests; knet must be loaded
dev_max_io() {
	awk -v d="$ORFS_RDMA_DEV" -v mib=1048576 '$1 == d {
		for (i = 2; i < NF; i++) if ($i == "max_fast_reg_pages") p = $(i + 1)
	} END {
		if (!p) exit 1
		n = (p - 1) * 4096
		print (n < mib ? n : mib)
	}' /sys/kernel/debug/knet/devices
}

# log_count PATTERN: lines of the server's log that match PATTERN (basic regex)
log_count() { grep -c -- "$1" "$ORFS_SERVER_LOG" || true; }
# log_grew PATTERN N: more than N lines match PATTERN now
log_grew() { [ "$(log_count "$1")" -gt "$2" ]; }
# reload: SIGHUP the server and wait until its log says it read the file
# again (or kept the configuration in force)
reload() {
	local pat='reload: .* added\|keeping the configuration' was
	was=$(log_count "$pat")
	kill -HUP "$ORFS_SERVER_PID"
	wait_until 100 log_grew "$pat" "$was" && return 0
	cat "$ORFS_SERVER_LOG"
	fail "the server did not reload"
}

# log_lines: lines of the server's log so far (a mark for conn_threads)
log_lines() { wc -l < "$ORFS_SERVER_LOG"; }
# rc_name: the registration cache the run's user memory goes through:
# the RDMA device's, or TCP's
rc_name() { if [ "$ORFS_TRANSPORT" = tcp ]; then echo tcp; else echo "$ORFS_RDMA_DEV"; fi; }
# conn_threads KIND NAME [MARK]: the progress threads, sorted, each once, of
# the server's connections to KIND (export or volume) NAME logged after
# line MARK of its log
conn_threads() {
	tail -n +$((${3:-0} + 1)) "$ORFS_SERVER_LOG" |
		sed -n "s/.*connected to $1 '$2' (credits [0-9]*, progress thread \([0-9]*\) on [^)]*).*/\1/p" |
		sort -un | paste -sd ' '
}

# wait_gid DEV GID: wait until rxe device DEV has GID (written in full) in
# its table, which it fills from its interface's addresses in the background
wait_gid() {
	wait_until 50 grep -qs "^$2" /sys/class/infiniband/"$1"/ports/1/gids/* ||
		fail "no GID $2 on $1"
}

# wait_until TENTHS CMD...: run CMD every 0.1 s until it succeeds, at most
# TENTHS times (scaled by slow); fails (returns 1) if it never did (the
# caller checks after)
wait_until() {
	local n i
	n=$(slow "$1")
	shift
	for ((i = 0; i < n; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}
# tcp_liar LIE OUT CMD...: CMD, its output in OUT, against tcp-peer's
# server telling LIE on port 20099, which is then stopped; CMD's status
# in $rc
tcp_liar() {
	local lie=$1 out=$2 lpid
	shift 2
	"$ORFS_BIN/tcp-peer" server 20099 "$lie" > /tmp/liar.out 2>&1 &
	lpid=$!
	wait_until 50 grep -q listening /tmp/liar.out || fail "tcp-peer server $lie did not start"
	set +e
	"$@" > "$out" 2>&1
	rc=$?
	set -e
	kill $lpid 2>/dev/null || true
	wait $lpid 2>/dev/null || true
	cat "$out"
}

# ended PID: PID exited (a zombie not yet waited for counts; kill -0 would
# still find it)
ended() { [ ! -e "/proc/$1" ] || grep -qs ') Z ' "/proc/$1/stat"; }

# gone_umount DIR: in an exit hook, unmount DIR if mounted, waiting up
# to 10 s for what keeps it busy (a killed process's last calls), then
# lazily, so that a failed check does not keep the modules in use
gone_umount() {
	local i
	for ((i = 0; i < 100; i++)); do
		grep -q " $1 " /proc/mounts || return 0
		umount -f "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "$1 still busy after 10 s: unmounted lazily" >&2
	umount -l "$1"
}

# expect_grep PATTERN FILE: FILE must have a line matching PATTERN
expect_grep() { grep -qE "$1" "$2" || { cat "$2" >&2; fail "$2 has no line matching '$1'"; }; }

# Our modules in load order.
ORFS_MODULES=(regcache knet orfs mxbd)

module_loaded() { [ -d "/sys/module/$1" ]; }

# names_here: from a stopped server's last line in ORFS_SERVER_LOG, how
# many file service requests its progress threads ran without a worker
names_here() {
	sed -n 's/.*jobs done without a worker (\([0-9]*\) file service requests).*/\1/p' \
		"$ORFS_SERVER_LOG"
}

# load_suite [MODULE:PARAM=VALUE...]: insmod every module of ORFS_KMOD
# (their dependencies on the kernel's own modules, ib_core first, come
# with modprobe), each with the parameters named for it; with
# ORFS_MODPROBE=1, modprobe orfs and mxbd as an admin would, from the
# kernel's module tree (e.g. DKMS's, tests/guest/packages.sh)
load_suite() {
	local m a args
	modprobe -a ib_core rdma_cm libcrc32c
	for m in "${ORFS_MODULES[@]}"; do
		args=()
		for a in "$@"; do
			[[ $a != "$m:"* ]] || args+=("${a#"$m:"}")
		done
		if [ "${ORFS_MODPROBE:-0}" = 1 ]; then
			[ "$m" = orfs ] || [ "$m" = mxbd ] || continue
			modprobe "$m" "${args[@]}"
		else
			module_loaded "$m" || insmod "$ORFS_KMOD/$m/$m.ko" "${args[@]}"
		fi
	done
	for m in orfs mxbd; do
		echo "$ORFS_TRANSPORT" > "/sys/module/$m/parameters/transport"
	done
	on_exit unload_suite
}

# check_knet_objects: with no module using knet any more, knet must hold
# no endpoint, group, registration, pin or DMA mapping (a leak fails the
# script, after its own verdict)
check_knet_objects() {
	local f=/sys/kernel/debug/knet/objects
	[ -r "$f" ] || return 0
	if awk '$2 != 0 { bad = 1 } END { exit !bad }' "$f"; then
		echo "FAIL: knet objects left once their users are gone:" >&2
		cat "$f" >&2
		_exit_rc=1
	fi
}

# kmemleak_scan: on a kernel with kmemleak (the debug kernel), scan for
# leaks now; kmemleak logs "N new suspected memory leaks", which fails the
# script (tests/harness/lib-results.sh), and the objects are shown here
kmemleak_scan() {
	local f=/sys/kernel/debug/kmemleak
	[ -w "$f" ] || return 0
	echo scan > "$f"
	if grep -q 'unreferenced object' "$f"; then
		echo "kmemleak, once the modules were unloaded:" >&2
		head -n 60 "$f" >&2
		echo clear > "$f"
	fi
}

# unload_suite: rmmod every loaded module, users first, checking that
# knet is left with no object, then scan for leaks (kmemleak_scan)
unload_suite() {
	local i m
	for ((i = ${#ORFS_MODULES[@]} - 1; i >= 0; i--)); do
		m=${ORFS_MODULES[$i]}
		[ "$m" != knet ] || ! module_loaded knet || module_loaded knet_test ||
			check_knet_objects
		if module_loaded "$m"; then rmmod "$m"; fi
	done
	kmemleak_scan
}

# start_server ARGS...: start orfs-server on ORFS_ADDR with ARGS in the
# background (log in ORFS_SERVER_LOG) and wait until it listens
ORFS_SERVER_LOG=/tmp/orfs-server.log
ORFS_SERVER_PID=
start_server() {
	local i
	# --insecure: the tests' servers serve the guest's own address without an allow list.
	# shellcheck disable=SC2046 # no listener, or one option and its value
	"$ORFS_BIN/orfs-server" --insecure -a "$ORFS_ADDR" $(tcp_listen "$ORFS_ADDR") "$@" \
		> "$ORFS_SERVER_LOG" 2>&1 &
	ORFS_SERVER_PID=$!
	# Once: a restarted server stops where the first would have, after
	# the hooks of what uses it (mounts, their processes) have run.
	[ -n "$_server_started" ] || on_exit stop_server
	_server_started=1
	for ((i = 0; i < 200; i++)); do
		grep -q 'listening on' "$ORFS_SERVER_LOG" && return 0
		kill -0 "$ORFS_SERVER_PID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$ORFS_SERVER_LOG" >&2
	fail "orfs-server did not start"
}

# mount_stat DIR LINE FIELD: the count after the word FIELD on the LINE
# line of the ORFS mount on DIR in /proc/self/mountstats (connections:
# reconnects, resent, ended_here; writeback: unstable, commits, resent,
# lost, held)
mount_stat() {
	awk -v d="$1" -v l="$2" -v f="$3" '$1 == "device" { m = $5 == d && $8 == "orfs" }
		m && $1 == l { for (i = 2; i < NF; i++) if ($i == f) print $(i + 1) }' \
		/proc/self/mountstats
}

# mount_orfs OPTIONS SOURCE DIR: mount SOURCE on DIR with OPTIONS, forced
# off at exit if still mounted
mount_orfs() {
	mount -t orfs -o "$1" "$2" "$3"
	on_exit "umount -f $3 2>/dev/null || true"
}

# start_other LOG ARGS...: start another orfs-server with ARGS (log in
# LOG) in the background and wait until it listens; its PID in OTHER_PID,
# killed at exit if it still runs
OTHER_PID=
start_other() {
	local log=$1 a prev= tcp=()
	shift
	# In a TCP run, a TCP listener beside each RDMA one.
	for a in "$@"; do
		[ "$prev" != -a ] || [[ $a == tcp://* ]] || read -r -a tcp < <(echo "${tcp[*]} $(tcp_listen "$a")")
		prev=$a
	done
	"$ORFS_BIN/orfs-server" --insecure "$@" "${tcp[@]}" > "$log" 2>&1 &
	OTHER_PID=$!
	on_exit "kill $OTHER_PID 2>/dev/null; wait $OTHER_PID 2>/dev/null"
	wait_until 100 grep -q 'listening on' "$log" || { cat "$log"; fail "orfs-server $* did not start"; }
}

# kill_server [SIGNAL]: end the server without its clean stop (default
# SIGKILL, a crash) and reap it
kill_server() {
	kill "-${1:-KILL}" "$ORFS_SERVER_PID"
	wait "$ORFS_SERVER_PID" 2>/dev/null || true
	ORFS_SERVER_PID=
}

# stop_server: SIGTERM the server and check that it exits cleanly
stop_server() {
	local rc=0
	[ -n "$ORFS_SERVER_PID" ] || return 0
	kill -TERM "$ORFS_SERVER_PID" 2>/dev/null || true
	wait "$ORFS_SERVER_PID" || rc=$?
	ORFS_SERVER_PID=
	[ "$rc" -eq 0 ] || { cat "$ORFS_SERVER_LOG" >&2; fail "orfs-server exited with $rc"; }
}

# cm_listening PORT: an rdma_cm listener is bound to PORT (rping's, a
# perftest server's: they say nothing once they listen)
cm_listening() { rdma resource show cm_id 2> /dev/null | grep -qE "state LISTEN .*:$1( |$)"; }

# perftest COLUMN TOOL ARGS...: run a perftest client/server pair over rdma_cm
# on ORFS_RDMA_DEV and print the figure in COLUMN of its result row
# (bandwidth tools: 4 is the average; latency tools: 6 is the mean). Its
# table goes to stderr; a failure prints the tool's output and prints nothing.
# Called as $(perftest ...), so a fresh port comes from the subshell's PID.
perftest() {
	local col=$1 tool=$2 port=$((18600 + BASHPID % 2000)) srv v
	shift 2
	"$tool" -d "$ORFS_RDMA_DEV" -R -p "$port" "$@" > /tmp/perftest.srv 2>&1 &
	srv=$!
	wait_until 100 cm_listening "$port" || { cat /tmp/perftest.srv >&2; return 1; }
	if ! timeout 120 "$tool" -d "$ORFS_RDMA_DEV" -R -p "$port" "$@" "$ORFS_ADDR" \
		> /tmp/perftest.cli 2>&1; then
		cat /tmp/perftest.cli /tmp/perftest.srv >&2
		wait "$srv" || true
		return 1
	fi
	wait "$srv" || true
	# The result row is the one line starting with the message size.
	v=$(awk -v c="$col" '$1 ~ /^[0-9]+$/ && NF >= c { v = $c } END { print v }' /tmp/perftest.cli)
	grep -A1 '#bytes' /tmp/perftest.cli >&2
	[ -n "$v" ] || { cat /tmp/perftest.cli >&2; return 1; }
	echo "$v"
}

# fio_figures NAME FIO-ARGS...: run one fio job (JSON output in
# /tmp/NAME.json) and print "MBps mean_lat_us p99_us iops" of the
# direction it moved data in. Fails the test if fio fails.
fio_figures() {
	local name=$1
	shift
	fio --name="$name" "$@" --output-format=json --output="/tmp/$name.json" > /dev/null ||
		fail "fio $name"
	python3 - "/tmp/$name.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))['jobs'][0]
d = j['read'] if j['read']['io_bytes'] else j['write']
lat = d['lat_ns']['mean'] / 1000
p99 = d['clat_ns']['percentile'].get('99.000000', 0) / 1000
print('%.2f %.1f %.1f %.0f' % (d['bw_bytes'] / 1e6, lat, p99, d['iops']))
PY
}

# nop_mean N: from knet-ping's or knet-test's output on stdin, the mean
# round trip (us) of its "N NOPs: mean X us" line; nothing if it has none
nop_mean() { sed -n "s/^$1 NOPs: mean \\([0-9.]*\\) us.*/\\1/p"; }

# median VALUE...: the middle value (of an even count, the mean of the two)
median() {
	printf '%s\n' "$@" | sort -g |
		awk '{ v[NR] = $1 } END { m = (v[int((NR + 1) / 2)] + v[int(NR / 2) + 1]) / 2; print m }'
}

# turns ROUND A B: "A B" in odd rounds, "B A" in even ones (who goes first)
turns() {
	if (($1 % 2)); then echo "$2 $3"; else echo "$3 $2"; fi
}

# bench_row TSV METRIC OURS PEER UNIT: one figure of a benchmark
bench_row() {
	printf '%s\t%s\t%s\t%s\n' "$2" "$3" "$4" "$5" >> "$1"
	echo "$2 ours=$3 peer=$4 $5"
}
