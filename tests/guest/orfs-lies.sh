#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# ORFS against a server that lies: random well-framed answers, bad
# framing after the mount, file service replies no file system could give
# (names, counts, attributes, loops), statuses no errno has, a server busy
# for ever: errors, never a crash or a hang; the mount goes away.
# lanes: check=6.12/tcp all=*
# timeout: 360
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/guest/common/orfs.sh
. "$(dirname "$0")/common/orfs.sh"

# Each case starts its own lying server.
stop_server

step "a server whose answers are random, well framed: calls fail or succeed, nothing crashes or hangs"
mkdir -p $exp/rnd/sub
for i in 0 1 2 3 4 5 6; do echo "file $i" > $exp/rnd/f$i; done
echo kept > $exp/rnd/keep
head -c 300000 /dev/urandom > $exp/rnd/big
ln -sf f1 $exp/rnd/l
# rnd_op I: call I of sixteen kinds on the mount
rnd_op() {
	local i=$1 f=/tmp/mnt/rnd/f$(($1 % 7))
	case $((i % 16)) in
	0) ls -la /tmp/mnt/rnd ;;
	1) stat $f ;;
	2) cat $f ;;
	3) echo $i >> $f ;;
	4) mkdir /tmp/mnt/rnd/d$i ;;
	5) mv $f /tmp/mnt/rnd/g$((i % 5)) ;;
	6) readlink /tmp/mnt/rnd/l && cat /tmp/mnt/rnd/l ;;
	7) find /tmp/mnt/rnd ;;
	8) dd if=/tmp/mnt/rnd/big of=/dev/null bs=64k iflag=direct ;;
	9) dd if=/tmp/mnt/rnd/big of=/dev/null bs=64k ;;
	10) df /tmp/mnt && flock -n $f true ;;
	11) touch /tmp/mnt/rnd/t$i && chmod 600 /tmp/mnt/rnd/t$i ;;
	12) ln -s f2 /tmp/mnt/rnd/s$i && ln $f /tmp/mnt/rnd/h$i ;;
	13) truncate -s $((i * 100)) $f ;;
	14) rm -f /tmp/mnt/rnd/t$((i - 3)) /tmp/mnt/rnd/s$((i - 2)) &&
	    rmdir /tmp/mnt/rnd/d$((i - 10)) ;;
	15) dd if=/dev/urandom of=/tmp/mnt/rnd/w$((i % 3)) bs=16k count=4 oflag=direct ;;
	esac
}
: > /tmp/rnd-err
for seed in 1 2; do
	ORFS_SERVER_FAULT=fs-random ORFS_SERVER_FAULT_SEED=$seed start_server -F -s $state -e data=$exp,no_root_squash
	mnt -o soft,timeo=10,retrans=1,noac
	read -r ok bad < <(tally 128 rnd_op /tmp/rnd-err)
	echo "seed $seed: $ok calls succeeded, $bad failed"
	[ "$ok" -gt 0 ] && [ "$bad" -gt 0 ] || fail "seed $seed: $ok succeeded, $bad failed: no mix"
	umount /tmp/mnt || umount -f /tmp/mnt || umount -l /tmp/mnt
	grep -q ' /tmp/mnt ' /proc/mounts && fail "still mounted"
	stop_server
done
# Every error a program saw is one it knows: no status the server made up,
# no kernel-internal code (ERESTARTSYS, EIOCBQUEUED...) passed through.
only_known_errors /tmp/rnd-err
dmesg | grep -E 'knet: reply with status|orfs: ' | sed 's/^\[[ 0-9.]*\] //' | sort | uniq -c | sort -rn | awk 'NR <= 8'
# The truth is intact for a server that tells it.
start_server -s $state -e data=$exp,no_root_squash
mnt
expect_eq "a file the random run only read" "$(cat /tmp/mnt/rnd/keep)" kept
rm -rf /tmp/mnt/rnd
umnt
stop_server

step "a server that lies (after the mount): calls fail with EIO, no oops, the mount goes away"
for fault in tag inline body; do
	ORFS_SERVER_FAULT=$fault start_server -F -s $state -e data=$exp,no_root_squash
	mnt -o soft,timeo=10,retrans=1
	set +e
	ls -la /tmp/mnt > /tmp/out 2>&1; rc=$?
	set -e
	cat /tmp/out
	[ "$rc" -ne 0 ] || fail "a lying server's listing was taken ($fault)"
	expect_grep 'Input/output error' /tmp/out
	umnt
	stop_server
done
dmesg | grep -E 'knet: (reply for no request|malformed reply|reply larger)' | tail -n 3

step "file service lies, well framed: each call fails with its error, the rest of the mount works; statuses no errno has; a busy server"
mkdir -p $exp/lie/sub
head -c 3000 /dev/urandom > $exp/lie/small
head -c 65536 /dev/urandom > $exp/lie/big
echo truth > $exp/plain
# lie FAULT EXPECTED-MESSAGE COMMAND...: COMMAND fails with that message
lie() {
	local rc
	set +e
	"${@:3}" > /tmp/out 2>&1; rc=$?
	set -e
	cat /tmp/out
	[ "$rc" -ne 0 ] || fail "a lie was taken ($1: ${*:3})"
	expect_grep "$2" /tmp/out
}
for fault in fs-name fs-count fs-attr fs-mode fs-owner fs-loop; do
	ORFS_SERVER_FAULT=$fault start_server -F -s $state -e data=$exp,no_root_squash
	mnt -o soft,timeo=10,retrans=1
	case $fault in
	fs-name)
		lie $fault 'Input/output error' ls /tmp/mnt/lie
		dmesg | tail -n 20 | grep -q 'malformed directory listing' ||
			fail "no word of the bad listing in the log"
		;;
	fs-count)
		lie $fault 'Input/output error' cat /tmp/mnt/lie/small
		lie $fault 'Input/output error' dd if=/tmp/mnt/lie/big of=/dev/null bs=64k iflag=direct
		dmesg | tail -n 20 | grep -q 'answer to an I/O did not add up' ||
			fail "no word of the bad count in the log"
		;;
	fs-attr | fs-mode | fs-owner)
		lie $fault 'Input/output error' stat /tmp/mnt/lie/small
		;;
	fs-loop)
		lie $fault 'Too many levels of symbolic links' stat /tmp/mnt/lie/sub
		;;
	esac
	# What the lie does not touch still works.
	if [ $fault != fs-name ]; then
		ls /tmp/mnt > /tmp/out
		expect_grep '^plain$' /tmp/out
	fi
	if [ $fault = fs-name ] || [ $fault = fs-loop ]; then
		expect_eq "$fault: a file the lie does not touch" "$(cat /tmp/mnt/plain)" truth
	fi
	umnt
	stop_server
done
# Statuses no errno has (the numbering's holes 41 and 58, past its end,
# kernel-internal codes): EIO, and a word in the log. An errno passes.
for st in 41 58 134 512 524 4294967295 13; do
	ORFS_SERVER_FAULT=fs-status ORFS_SERVER_FAULT_STATUS=$st start_server -F -s $state -e data=$exp,no_root_squash
	mnt -o soft,timeo=10,retrans=1
	if [ $st = 13 ]; then
		lie fs-status 'Permission denied' stat /tmp/mnt/lie/small
	else
		lie fs-status 'Input/output error' stat /tmp/mnt/lie/small
		expect_grep "knet: reply with status $st, which is no errno: taken as EIO" <(dmesg)
	fi
	umount /tmp/mnt || umount -f /tmp/mnt
	stop_server
done
# A server that says "your first try still runs" for ever: a soft mount
# gives up after timeo x retrans, a hard one waits until the call is killed
# or the mount forced away.
ORFS_SERVER_FAULT=fs-busy start_server -F -s $state -e data=$exp,no_root_squash
mnt -o soft,timeo=10,retrans=2
t0=$(date +%s)
lie fs-busy 'Input/output error' timeout -s KILL 60 stat /tmp/mnt/lie/small
t=$(($(date +%s) - t0))
echo "soft mount, busy server: EIO after $t s"
[ $t -le "$(slow 10)" ] || fail "the soft mount gave up after $t s, past timeo x retrans"
umnt
mnt -o timeo=10
stat /tmp/mnt/lie/big > /dev/null 2>&1 &
st=$!
# Another name: a lookup of the same one would wait (in D state, as
# the VFS makes it) for the first, killed or not.
stat /tmp/mnt/plain > /dev/null 2>&1 &
st2=$!
sleep 3
if ended $st || ended $st2; then fail "a hard mount gave up on a busy server"; fi
kill -9 $st
wait_until 50 ended $st ||
	fail "a killed call on a hard mount did not end: $(cat /proc/$st/stat /proc/$st/stack 2>&1)"
# As with a dead server, umount -f (umount(8) without it asks statfs first).
umount -f /tmp/mnt || umount -l /tmp/mnt
wait_until 50 ended $st2 || fail "umount -f left a call waiting on a busy server"
wait $st $st2 2>/dev/null || true
grep -q ' /tmp/mnt ' /proc/mounts && fail "still mounted"
stop_server
rm -r $exp/lie $exp/plain
echo ok
