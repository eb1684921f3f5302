#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# orfs-server's operation: a configuration file, the allow list, SIGHUP
# reloads that add and retire volumes (a retired volume's running client
# is cut at once, new ones are refused, the volume is released after), a reload
# that takes a running client out of the allow list (cut at once), and a
# reload with a broken file that changes nothing; a check (-n) of a good
# file and of one with problems beside the running server; a status report on
# SIGUSR1; the allow lists of one
# export or volume (refused outside them, a running client cut when a
# reload takes it out); SIGTERM under load.
# lanes: check=6.12/rxe all=*/rxe
# timeout: 240
. "$(dirname "$0")/lib.sh"
load() { timeout 120 "$ORFS_BIN/knet-load" -a "$ORFS_ADDR" "$@"; }
conf=/tmp/orfs-server.conf
truncate -s 32M /tmp/v1 /tmp/v2

# cut_by_reload VOLUME SED: a client writing to VOLUME is cut at once by a
# reload of the file as SED changes it, and a new connection is refused.
cut_by_reload() {
	local conn="connected to volume '$1'" cut="$ORFS_ADDR: its address is no longer allowed"
	local before cut0 bg rc
	before=$(log_count "$conn")
	cut0=$(log_count "$cut")
	load -n "$1" -w write -q 2 -b 16384 -T 60 > /tmp/cut.out 2>&1 &
	bg=$!
	wait_until 100 log_grew "$conn" "$before" || fail "the client did not connect"
	sed -i "$2" $conf
	reload
	wait_until 100 ended $bg || fail "the client taken out of an allow list goes on"
	wait $bg && fail "the cut client's run ended well: $(cat /tmp/cut.out)"
	log_grew "$cut" "$cut0" || fail "no cut in the server's log"
	set +e
	load -n "$1" -w info > /tmp/out 2>&1; rc=$?
	set -e
	expect_eq "exit code of a new connection to $1" "$rc" 3
}

cat > $conf <<CONF
# only a network this client is not on
listen $ORFS_ADDR
pool 8
allow 10.99.0.0/16
volume v1 /tmp/v1
CONF

step "a client outside the allow list is rejected with the reason"
"$ORFS_BIN/orfs-server" -c $conf > "$ORFS_SERVER_LOG" 2>&1 &
ORFS_SERVER_PID=$!
on_exit stop_server
for ((i = 0; i < 100; i++)); do grep -q 'listening on' "$ORFS_SERVER_LOG" && break; sleep 0.1; done
set +e
load -n v1 -w info > /tmp/out 2>&1; rc=$?
set -e
expect_eq "exit code" "$rc" 3
expect_grep 'rejected: client not allowed' /tmp/out
expect_grep "rejecting a connection: client not allowed \($ORFS_ADDR\)" "$ORFS_SERVER_LOG"

step "SIGHUP: the new allow list and a new volume take effect"
sed -i "s|^allow .*|allow ${ORFS_ADDR%.*}.0/24|" $conf
echo "volume v2 /tmp/v2 prio=high" >> $conf
reload
expect_grep 'reload: 1 added, 0 retired, 1 allow entries' "$ORFS_SERVER_LOG"
load -n v1 -w info > /tmp/out
load -n v2 -w info > /tmp/out
expect_grep 'size 33554432' /tmp/out

step "SIGUSR1: a status report of the server, its threads and its connections in the log"
v2conn="connected to volume 'v2'"
before=$(log_count "$v2conn")
# A client that goes on until it is stopped: it is there when the report
# is. knet-load asks for the volume's size on a connection of its own
# first: wait for its second connection, the one that writes.
load -n v2 -w write -S 1 -q 2 -b 16384 -T 60 > /tmp/bg.out 2>&1 &
bg=$!
wait_until 100 log_grew "$v2conn" $((before + 1)) || fail "the client did not connect"
kill -USR1 "$ORFS_SERVER_PID"
wait_until 100 log_grew "status: $ORFS_ADDR volume 'v2' (thread [0-9]*): up " 0 ||
	{ cat "$ORFS_SERVER_LOG" /tmp/bg.out; fail "no status line for the connection"; }
grep 'status: ' "$ORFS_SERVER_LOG"
expect_grep 'status: [1-9][0-9]* connections, 2 exports and volumes, [0-9]+ progress threads, 4 workers$' \
	"$ORFS_SERVER_LOG"
expect_grep "status: progress thread 0 on $ORFS_RDMA_DEV: [0-9]+ connections, [0-9]+ requests in service, [0-9]+ of [0-9]+ buffer chunks free, [0-9]+ waits for a buffer, READ sinks in the pool's registration \(0 registered, 0 live\)\$" \
	"$ORFS_SERVER_LOG"
expect_grep "status: $ORFS_ADDR volume 'v2' \(thread [0-9]+\): up [0-9]+ s, [0-9]+ requests in service, [0-9]+ requests, 0 malformed, [0-9]+ bytes in, [0-9]+ out$" \
	"$ORFS_SERVER_LOG"
kill -0 "$ORFS_SERVER_PID" || fail "the server is gone"
kill $bg
wait $bg || true

step "a volume a reload removes: its running client is cut at once, new ones refused, it is released"
# Retire it once the client is connected: 4000 requests keep it busy for
# seconds after that (a fixed sleep raced with a faster server).
v1conn="connected to volume 'v1'"
before=$(log_count "$v1conn")
cut0=$(log_count "a reload removed or changed what it uses")
load -n v1 -w verify -S 1 -q 2 -b 16384 -N 2000 -r 21 > /tmp/bg.out 2>&1 &
bg=$!
wait_until 100 log_grew "$v1conn" "$before" || fail "the running client did not connect"
sed -i '/^volume v1 /d' $conf
reload
expect_grep "reload: volume 'v1' takes no new connections; its 1 close" "$ORFS_SERVER_LOG"
wait_until 100 ended $bg || fail "the client of a removed volume goes on"
wait $bg && fail "the cut client's run ended well: $(cat /tmp/bg.out)"
log_grew "a reload removed or changed what it uses" "$cut0" || fail "no cut in the server's log"
set +e
load -n v1 -w info > /tmp/out; rc=$?
set -e
expect_eq "exit code for the retired volume" "$rc" 3
for ((i = 0; i < 50; i++)); do grep -q "volume 'v1' released" "$ORFS_SERVER_LOG" && break; sleep 0.1; done
expect_grep "volume 'v1' released" "$ORFS_SERVER_LOG"

step "a reload that takes a client out of the allow list closes its connections at once"
cut_by_reload v2 "s|^allow .*|allow 10.99.0.0/16|"
sed -i "s|^allow .*|allow ${ORFS_ADDR%.*}.0/24|" $conf
reload
load -n v2 -w info > /tmp/out

step "an export's and a volume's own allow lists: refused outside them, cut when a reload takes a client out"
# v2 is kept for this client; an export and a volume for another network only.
mkdir -p /tmp/ex1
sed -i "s|^volume v2 .*|volume v2 /tmp/v2 prio=high allow=$ORFS_ADDR/32|" $conf
echo "volume v3 /tmp/v1 allow=10.99.0.0/16 allow=10.98.0.0/16" >> $conf
echo "export ex1 /tmp/ex1 allow=10.99.0.0/16" >> $conf
reload
expect_grep "reload: volume 'v2' allows 1 networks" "$ORFS_SERVER_LOG"
expect_grep 'reload: 2 added, 0 retired, 1 allow entries' "$ORFS_SERVER_LOG"
load -n v2 -w info > /tmp/out
set +e
load -n v3 -w info > /tmp/out 2>&1; rc=$?
set -e
expect_eq "exit code for a volume that does not allow this client" "$rc" 3
expect_grep 'rejected: client not allowed' /tmp/out
expect_grep "rejecting a connection: client not allowed \($ORFS_ADDR, to 'v3'\)" "$ORFS_SERVER_LOG"
set +e
"$ORFS_BIN/knet-ping" -a "$ORFS_ADDR" -n ex1 -s file > /tmp/out 2>&1; rc=$?
set -e
expect_eq "exit code for an export that does not allow this client" "$rc" 3
expect_grep 'rejected: client not allowed' /tmp/out
expect_grep "rejecting a connection: client not allowed \($ORFS_ADDR, to 'ex1'\)" "$ORFS_SERVER_LOG"
# A running client of v2 taken out of v2's list (the server's list still
# has it) is cut at once.
cut_by_reload v2 "s|^volume v2 .*|volume v2 /tmp/v2 prio=high allow=10.99.0.0/16|"
# Its list emptied: every client the server allows may use it again.
sed -i "s|^volume v2 .*|volume v2 /tmp/v2 prio=high|" $conf
reload
expect_grep "reload: volume 'v2' allows 0 networks" "$ORFS_SERVER_LOG"
load -n v2 -w info > /tmp/out
expect_grep 'size 33554432' /tmp/out

step "-n checks a configuration beside the running server: it passes, or each problem is named"
set +e
"$ORFS_BIN/orfs-server" -n -c $conf > /tmp/check.out 2>&1; rc=$?
set -e
cat /tmp/check.out
expect_eq "exit code of the check of the file in force" "$rc" 0
nexp=$(grep -c '^export ' $conf || true)
nvol=$(grep -c '^volume ' $conf || true)
nallow=$(awk '$1 == "allow" { n += NF - 1 } END { print n + 0 }' $conf)
expect_grep "configuration checked: listen $ORFS_ADDR port 20077 on $ORFS_RDMA_DEV, $nexp exports, $nvol volumes, $nallow allowed networks" /tmp/check.out
# A file export whose state directory does not exist yet: the check makes nothing.
mkdir -p /tmp/ck-exp
set +e
"$ORFS_BIN/orfs-server" --insecure -n -a "$ORFS_ADDR" -s /tmp/ck-state -e ck=/tmp/ck-exp,no_root_squash > /tmp/check.out 2>&1; rc=$?
set -e
cat /tmp/check.out
expect_eq "exit code of a check with a new state directory" "$rc" 0
expect_grep "1 exports, 0 volumes, 0 allowed networks \(every client\)" /tmp/check.out
[ ! -e /tmp/ck-state ] || fail "the check made the state directory"
{
	echo "listen 192.0.2.1"
	echo "state /tmp/v1/state"
	echo "export gone /tmp/no-such-dir"
	echo "export ok /tmp/ck-exp"
	echo "volume lost /tmp/no-such-file"
	echo "volume v1 /tmp/v1"
} > /tmp/bad.conf
set +e
"$ORFS_BIN/orfs-server" -n -c /tmp/bad.conf > /tmp/check.out 2>&1; rc=$?
set -e
cat /tmp/check.out
expect_eq "exit code of a check that finds problems" "$rc" 1
expect_grep "listen 192.0.2.1: no RDMA device has that address" /tmp/check.out
expect_grep "state directory /tmp/v1/state: .*a start could not make its file handle key" /tmp/check.out
expect_grep "export gone: /tmp/no-such-dir is not a directory" /tmp/check.out
expect_grep "volume /tmp/no-such-file: No such file or directory" /tmp/check.out
expect_grep "no allow list, and no --insecure" /tmp/check.out
expect_grep "configuration checked: 5 problems" /tmp/check.out
set +e
"$ORFS_BIN/orfs-server" -n -c /nonexistent.conf > /tmp/check.out 2>&1; rc=$?
set -e
expect_eq "exit code of a check of a file that does not parse" "$rc" 2
# The running server noticed none of it.
load -n v2 -w info > /tmp/out
expect_grep 'size 33554432' /tmp/out

step "a broken file on SIGHUP changes nothing"
echo "volume broken" >> $conf
reload
expect_grep "orfs-server.conf:[0-9]+: 'volume': unknown or incomplete directive; keeping the configuration in force" "$ORFS_SERVER_LOG"
load -n v2 -w info > /tmp/out
expect_grep 'size 33554432' /tmp/out

step "bad options and files stop the server at start with a message"
set +e
"$ORFS_BIN/orfs-server" -a "$ORFS_ADDR" -b 'a/b=/tmp/v1' > /tmp/bad.out 2>&1; rc=$?
set -e
expect_eq "exit code" "$rc" 2
expect_grep "names are 1 to 40" /tmp/bad.out
set +e
"$ORFS_BIN/orfs-server" -c /nonexistent.conf > /tmp/bad.out 2>&1; rc=$?
set -e
expect_eq "exit code" "$rc" 2
expect_grep "/nonexistent.conf: No such file" /tmp/bad.out
stop_server
cat "$ORFS_SERVER_LOG"

step "SIGTERM under load: running requests finish, the volumes are flushed, exit 0"
# The volume is a device that takes 200 ms for every I/O (dm-delay over
# dm-zero) and the client keeps 32 requests out: once its four streams are
# connected and a second has passed, requests are always in the server's
# hands, so the signal surely finds some to drain.
modprobe dm-delay
modprobe dm-zero
export DM_DISABLE_UDEV=1
dmsetup create orfs-zero --noudevsync --table "0 65536 zero"
on_exit "dmsetup remove --noudevsync orfs-slow; dmsetup remove --noudevsync orfs-zero"
dmsetup create orfs-slow --noudevsync --table "0 65536 delay /dev/mapper/orfs-zero 0 200"
start_server -b v2=/dev/mapper/orfs-slow
load -n v2 -w write -S 4 -q 8 -b 65536 -T 30 > /tmp/bg.out 2>&1 &
bg=$!
# connections open now (knet-load asks for the volume's size on one of its own first)
streams() {
	local c d
	c=$(grep -c "connected to volume 'v2'" "$ORFS_SERVER_LOG" || true)
	d=$(grep -c ": disconnected (" "$ORFS_SERVER_LOG" || true)
	echo $((c - d))
}
for ((i = 0; i < 300; i++)); do
	[ "$(streams)" -eq 4 ] && break
	sleep 0.1
done
[ "$(streams)" -eq 4 ] || { cat "$ORFS_SERVER_LOG" /tmp/bg.out; fail "the load never started"; }
sleep 1
stop_server
wait $bg || true
cat "$ORFS_SERVER_LOG" | tail -n 8
expect_grep 'signal 15: draining [1-9][0-9]* requests on 4 connections' "$ORFS_SERVER_LOG"
expect_grep 'stopped' "$ORFS_SERVER_LOG"
if grep -q 'giving up on' "$ORFS_SERVER_LOG"; then fail "requests were abandoned"; fi
# the client kept sending: what came after the signal was left, not started
expect_grep 'requests that came after the signal were not started' "$ORFS_SERVER_LOG"
echo ok
