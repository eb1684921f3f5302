#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The server and its userspace peers on TCP, each facing the other's
# breaches: knet-load against a lying TCP server (tcp-peer) gets an error
# for every lie, never a hang or a crash; the userspace clients' CRC32C
# digests (KNET_DIGEST) granted and checked, wrong ones cutting them off;
# clients that break the protocol, stall or reset under an answer cut
# off by the server, which goes on serving. None of our modules is
# loaded (its lanes: one kernel is enough);
# tcp.sh has the kernel's side of the same.
# lanes: check=6.12/rxe all=*/rxe
# timeout: 240
. "$(dirname "$0")/lib.sh"

truncate -s 64M /tmp/cvol
mkdir -p /tmp/cexp
head -c 3M /dev/urandom > /tmp/cexp/u.bin
# A connection that moves nothing it owes is closed after 3 s, not 30:
# the protocol breakers' stalled client.
echo "stall_timeout 3" > /tmp/cstall.conf
start_server -c /tmp/cstall.conf -a "tcp://$ORFS_ADDR" -s /tmp/cstate -b tvol=/tmp/cvol \
	-e data=/tmp/cexp,no_root_squash
uc() { timeout 120 "$ORFS_BIN/$1" -a "$ORFS_ADDR" "${@:2}"; }

step "the userspace client facing the same lies: each an error, never a hang or a crash"
for lie in r2t-range r2t-tag data-long data-tag bad-type huge reply-tag cut; do
	"$ORFS_BIN/tcp-peer" server 20099 $lie > /tmp/liar.out 2>&1 &
	lpid=$!
	wait_until 50 grep -q listening /tmp/liar.out || fail "tcp-peer server $lie did not start"
	set +e
	timeout 60 "$ORFS_BIN/knet-load" -t tcp -a "$ORFS_ADDR" -p 20099 -n v -w read -N 2 \
		-b 65536 > /tmp/kl.out 2>&1
	rc=$?
	set -e
	wait $lpid || { cat /tmp/liar.out; fail "tcp-peer server $lie"; }
	cat /tmp/kl.out
	[ "$rc" -eq 1 ] || fail "lie $lie: knet-load exited $rc, not 1"
	case $lie in
	r2t-* | data-*) want="which did not offer them" ;;
	bad-type) want="a PDU of type 9" ;;
	huge) want="larger than the receive" ;;
	reply-tag) want="malformed reply" ;;
	cut) want="the connection went" ;;
	esac
	expect_grep "$want" /tmp/kl.out
done

step "the userspace clients' digests (KNET_DIGEST): granted and checked; wrong ones cut them off"
KNET_DIGEST=both uc knet-load -t tcp -n tvol -w verify -S 2 -q 4 -b 1048576 -N 8 -g 7 -r 25 |
	tee /tmp/out
expect_grep '^result: op=verify .* errors=0 mismatches=0$' /tmp/out
expect_grep "connected to volume 'tvol' \(credits [0-9]+, progress thread [0-9]+ on TCP, digests both\)" \
	"$ORFS_SERVER_LOG"
KNET_DIGEST=data uc knet-fs -t tcp -n data get u.bin /tmp/u.back2 > /dev/null
cmp /tmp/cexp/u.bin /tmp/u.back2 || fail "knet-fs with a data digest read other bytes"
expect_grep "connected to export 'data' \(credits [0-9]+, progress thread [0-9]+ on TCP, digests data\)" \
	"$ORFS_SERVER_LOG"
KNET_DIGEST=crc uc knet-ping -t tcp -n data -c 1 > /tmp/out 2>&1 && fail "KNET_DIGEST=crc was taken"
expect_grep "KNET_DIGEST: unknown digests 'crc'" /tmp/out
for lie in cut hdgst ddgst; do
	KNET_DIGEST=both tcp_liar $lie /tmp/kl.out timeout 60 "$ORFS_BIN/knet-load" -t tcp \
		-a "$ORFS_ADDR" -p 20099 -n v -w read -N 2 -b 65536
	[ "$rc" -eq 1 ] || fail "digest lie $lie: knet-load exited $rc, not 1"
	case $lie in
	cut) want="the server grants digests none, not both" ;;	# it grants none
	hdgst) want="header digest mismatch" ;;
	ddgst) want="data digest mismatch" ;;
	esac
	expect_grep "$want" /tmp/kl.out
done

step "clients that break the protocol are cut off; the server goes on serving"
"$ORFS_BIN/tcp-peer" client "$ORFS_ADDR" 20077 > /tmp/peer.out 2>&1 ||
	{ cat /tmp/peer.out; fail "tcp-peer client"; }
cat /tmp/peer.out
for why in "not a CONNECT" "more requests than its credits" "data it was not asked for" \
	"a PDU a client does not send" "message of a size no request has" "malformed PDU" \
	"stalled: it takes or sends nothing it was asked to" "header digest mismatch" \
	"data digest mismatch"; do
	expect_grep "$why" "$ORFS_SERVER_LOG"
done
# A request, then a FIN and a reset, while the server is stopped: its
# answer finds a reset socket (EPIPE), which must not kill the server.
n0=$(log_lines)
"$ORFS_BIN/tcp-peer" hangup "$ORFS_ADDR" 20077 "$ORFS_SERVER_PID" || fail "tcp-peer hangup"
wait_until 50 sh -c "tail -n +$((n0 + 1)) '$ORFS_SERVER_LOG' |
	grep -qE ': (send failed|receive failed|connection reset|disconnected) \(1 requests'" ||
	fail "the server did not close the reset connection"
uc knet-fs -t tcp -n data get u.bin /tmp/u.back3 > /dev/null
cmp /tmp/cexp/u.bin /tmp/u.back3 || fail "the server read other bytes after the breaches"
kill -0 "$ORFS_SERVER_PID" || fail "the server died"
