#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The server and the client played against as an attacker would:
# privileged xattrs (trusted.*, security.capability) refused to a user and
# to a squashed root, sent raw by the userspace client; a reload that
# makes a mounted export read-only or squashed applies at once; a
# re-pointed export's old handles are stale; fault injection needs -F; a
# state directory or handle key others may change or read is refused;
# nosuid on the client keeps a set-uid file from raising a user; safe
# defaults (--insecure, root squash, all_squash); set-id bits dropped at a
# user's write or truncate as on ext4; one host's connections bounded;
# subtree_check keeps working through links and forgotten names; a silent
# connection closes after idle_timeout, a mount's keep-alives keep its own;
# READ sinks registered per READ (iWARP's way) keep data whole and no key.
# lanes: check=6.12/rxe all=*/rxe
# timeout: 400
. "$(dirname "$0")/lib.sh"
fs() { timeout 120 "$ORFS_BIN/knet-fs" -a "$ORFS_ADDR" "$@"; }
# says WANT ARGS...: knet-fs ARGS answers a line starting with WANT ("ok",
# "error EPERM"...)
says() {
	local want=$1
	shift
	fs "$@" > /tmp/out || true
	grep -q "^$want" /tmp/out || fail "knet-fs $*: got '$(cat /tmp/out)', want '$want'"
}
state=/tmp/orfs-state
conf=/tmp/security.conf
exp=/tmp/sexp

# ext4 (trusted.*, security.* and user.* xattrs on both kernels) on a loop
# device over a file in tmpfs.
mkdir -p $exp /tmp/mnt
truncate -s 64M /tmp/sec.img
mkfs.ext4 -q -F /tmp/sec.img
modprobe loop
mount -o loop /tmp/sec.img $exp
on_exit "umount $exp"
chmod 0755 $exp
mkdir -m 1777 $exp/pub
mkdir -m 0755 $exp/sub
echo "root's" > $exp/victim
chmod 0666 $exp/victim
echo "beneath" > $exp/sub/f
load_suite

# xattr_of FILE NAME: the value of FILE's xattr NAME on the server's side, or "none"
xattr_of() {
	python3 -c 'import os, sys
try: print(os.getxattr(sys.argv[1], sys.argv[2]).decode())
except OSError: print("none")' "$1" "$2"
}


cat > $conf <<CONF
export data $exp no_root_squash
export sq $exp squash
CONF
start_server -s $state -c $conf

step "a user sets no trusted.* or security.* xattr on a file it may write; root may"
says 'error EPERM' -n data -u 1000 -g 1000 setxattr victim trusted.evil 1
says 'error EPERM' -n data -u 1000 -g 1000 setxattr victim security.capability xxxx
says 'error EPERM' -n data -u 1000 -g 1000 setxattr victim security.evil 1
says 'error EOPNOTSUPP' -n data -u 1000 -g 1000 setxattr victim other.evil 1
expect_eq "trusted.evil on the server" "$(xattr_of $exp/victim trusted.evil)" none
expect_eq "security.capability on the server" "$(xattr_of $exp/victim security.capability)" none
says 'ok' -n data -u 1000 -g 1000 setxattr victim user.note mine
expect_eq "user.note on the server" "$(xattr_of $exp/victim user.note)" mine
says 'ok' -n data -u 0 -g 0 setxattr victim trusted.mark root
expect_eq "trusted.mark on the server" "$(xattr_of $exp/victim trusted.mark)" root

step "a user reads no trusted.* and removes none; root's list has it, the user's not"
says 'error EPERM' -n data -u 1000 -g 1000 getxattr victim trusted.mark
says 'error EPERM' -n data -u 1000 -g 1000 rmxattr victim trusted.mark
fs -n data -u 1000 -g 1000 listxattr victim > /tmp/out
grep -q 'trusted.mark' /tmp/out && fail "a user's list shows trusted.mark: $(cat /tmp/out)"
fs -n data -u 0 -g 0 listxattr victim > /tmp/out
expect_grep 'trusted.mark' /tmp/out

step "root on a squashed export is refused them too"
says 'error EPERM' -n sq -u 0 -g 0 setxattr victim trusted.evil 1
says 'error EPERM' -n sq -u 0 -g 0 setxattr victim security.capability xxxx
says 'error EPERM' -n sq -u 0 -g 0 getxattr victim trusted.mark
expect_eq "trusted.evil on the server" "$(xattr_of $exp/victim trusted.evil)" none

step "a reload that makes a mounted export read-only, then squashed, applies at once"
mount_orfs hard "$ORFS_ADDR:/data" /tmp/mnt
echo one > /tmp/mnt/pub/before
sed -i "s|^export data $exp no_root_squash\$|export data $exp ro no_root_squash|" $conf
reload
expect_grep "reload: export 'data' takes no new connections; its [1-9][0-9]* close" "$ORFS_SERVER_LOG"
# The client reconnects to the export as it now is: creates fail.
ro_now() { ! touch /tmp/mnt/pub/after 2> /tmp/touch.err && grep -q 'Read-only' /tmp/touch.err; }
wait_until 100 ro_now || fail "the mount still writes after the reload made its export read-only"
[ ! -e $exp/pub/after ] || fail "a file was created after the reload"
expect_eq "a file of before the reload" "$(cat /tmp/mnt/pub/before)" one
sed -i "s|^export data $exp ro no_root_squash\$|export data $exp root_squash|" $conf
reload
made_as_nobody() { touch /tmp/mnt/pub/squashed 2> /dev/null && [ "$(stat -c %u $exp/pub/squashed)" = 65534 ]; }
wait_until 100 made_as_nobody || fail "root's file after the reload made its export squashed: $(stat -c %u $exp/pub/squashed 2>&1)"
umount /tmp/mnt

step "a re-pointed export's old handles are stale"
h=$(fs -n data fh sub/f | sed -n 's/^ok //p')
[ -n "$h" ] || fail "no handle of sub/f"
says 'ok' -n data stat-fh "$h"
sed -i "s|^export data $exp root_squash\$|export data $exp/sub|" $conf
reload
says 'error ESTALE' -n data stat-fh "$h"
says 'ok' -n data stat f
stop_server

step "subtree_check: handed-out handles work, through links, renames and forgotten names; moved out, stale"
mkdir -p $exp/st/a $exp/st/b
echo data > $exp/st/a/f
start_server -s $state -e st=$exp/st,no_root_squash,subtree_check
mount_orfs hard "$ORFS_ADDR:/st" /tmp/mnt
ln /tmp/mnt/a/f /tmp/mnt/b/g
for d in 1 2 3 4 5 6 7 8; do
	mkdir -p /tmp/mnt/t/d$d/e
	for f in 1 2 3 4 5 6 7 8; do echo "$d.$f" > /tmp/mnt/t/d$d/e/f$f; done
done
# A server started again on a kernel that forgot every name it is not
# using: the handles of files open through a walk of their directory.
sync
h=$(fs -n st fh t/d3/e/f3 | sed -n 's/^ok //p')
[ -n "$h" ] || fail "no handle of t/d3/e/f3"
stop_server
echo 3 > /proc/sys/vm/drop_caches
start_server -s $state -e st=$exp/st,no_root_squash,subtree_check
says 'ok' -n st stat-fh "$h"
expect_eq "a file through its second link" "$(cat /tmp/mnt/b/g)" data
expect_eq "a file through its first link" "$(cat /tmp/mnt/a/f)" data
expect_eq "the files of a tree" "$(cat /tmp/mnt/t/d*/e/f* | sort | md5sum)" \
	"$(for d in 1 2 3 4 5 6 7 8; do for f in 1 2 3 4 5 6 7 8; do echo "$d.$f"; done; done | sort | md5sum)"
mv /tmp/mnt/t/d1/e/f1 /tmp/mnt/t/d2/moved
expect_eq "a file moved to another directory, looked up again" "$(cat /tmp/mnt/t/d2/moved)" 1.1
umount /tmp/mnt
h=$(fs -n st fh a/f | sed -n 's/^ok //p')
[ -n "$h" ] || fail "no handle of a/f"
says 'ok' -n st stat-fh "$h"
mv $exp/st/a/f $exp/st/b/f
says 'ok' -n st stat-fh "$h"
mv $exp/st/b/f $exp/st/b/g $exp/
says 'error ESTALE' -n st stat-fh "$h"
stop_server

step "nosuid on the client: a set-uid file of root does not raise a user"
cp /usr/bin/id $exp/pub/suid-id
chmod 4755 $exp/pub/suid-id
start_server -s $state -e data=$exp,no_root_squash
mount_orfs hard "$ORFS_ADDR:/data" /tmp/mnt
expect_eq "euid of the set-uid file run by a user" \
	"$(setpriv --reuid=1000 --regid=1000 --clear-groups /tmp/mnt/pub/suid-id -u)" 0
umount /tmp/mnt
mount_orfs hard,nosuid,nodev "$ORFS_ADDR:/data" /tmp/mnt
expect_grep "^$ORFS_ADDR:/data /tmp/mnt orfs rw,nosuid,nodev," /proc/mounts
expect_eq "euid of the set-uid file run by a user, nosuid" \
	"$(setpriv --reuid=1000 --regid=1000 --clear-groups /tmp/mnt/pub/suid-id -u)" 1000
umount /tmp/mnt
stop_server

step "fault injection in the environment is ignored without -F"
ORFS_SERVER_FAULT=tag start_server -s $state -e data=$exp
expect_grep 'ORFS_SERVER_FAULT is ignored: fault injection needs -F' "$ORFS_SERVER_LOG"
for _ in 1 2 3 4; do fs -n data stat victim; done > /tmp/out
expect_eq "true answers" "$(grep -c '^ok' /tmp/out)" 4
stop_server

step "a state directory or handle key others may change or read is refused"
# refused DIR WHY: the server does not start with state directory DIR
refused() {
	local log=/tmp/refused.log
	if timeout 30 "$ORFS_BIN/orfs-server" --insecure -a "$ORFS_ADDR" -s "$1" -e data=$exp > $log 2>&1; then
		fail "the server started with $2"
	fi
	expect_grep 'refused' $log
}
mkdir -m 0777 /tmp/st-open
refused /tmp/st-open "a state directory anyone may write"
mkdir -m 0700 /tmp/st-real /tmp/st-link-key
ln -s /tmp/st-real /tmp/st-link
refused /tmp/st-link "a state directory that is a symbolic link"
head -c 16 /dev/urandom > /tmp/st-real/handle-key
chmod 0644 /tmp/st-real/handle-key
ln -s /tmp/st-real/handle-key /tmp/st-link-key/handle-key
refused /tmp/st-link-key "a handle key that is a symbolic link"
chmod 0700 /tmp/st-real
refused /tmp/st-real "a handle key anyone may read"
chmod 0600 /tmp/st-real/handle-key
start_server -s /tmp/st-real -e data=$exp
says 'ok' -n data stat victim
stop_server

step "safe defaults: no allow list needs --insecure; root squashed unless no_root_squash; all_squash"
set +e
timeout 30 "$ORFS_BIN/orfs-server" -a "$ORFS_ADDR" -s $state -e data=$exp > /tmp/open.log 2>&1
r=$?
set -e
expect_eq "exit code of a server with no allow list and no --insecure" "$r" 2
expect_grep 'no allow list: any host that reaches the server could connect' /tmp/open.log
start_server -s $state -A "$ORFS_ADDR/32" -e data=$exp -e all=$exp,all_squash,anonuid=1500,anongid=1600
says 'error EACCES' -n data -u 0 -g 0 create root-made 644
says 'ok' -n data -u 0 -g 0 create pub/root-made 644
expect_eq "owner of a file root made on a default export" "$(stat -c %u:%g $exp/pub/root-made)" 65534:65534
says 'ok' -n data -u 1000 -g 1000 create pub/user-made 644
expect_eq "owner of a file a user made" "$(stat -c %u $exp/pub/user-made)" 1000
says 'ok' -n all -u 1000 -g 1000 create pub/all-made 644
expect_eq "owner of a file made on an all_squash export" "$(stat -c %u:%g $exp/pub/all-made)" 1500:1600
stop_server

step "a user who may write a set-id file of root clears its bits by writing or truncating, as on ext4"
start_server -s $state -A "$ORFS_ADDR/32" -e data=$exp,no_root_squash
mount_orfs hard "$ORFS_ADDR:/data" /tmp/mnt
as_user() { setpriv --reuid=1000 --regid=1000 --clear-groups "$@"; }
# setid NAME: a root file of mode 06777 in the export's pub
setid() { echo data > "$exp/pub/$1"; chmod 06777 "$exp/pub/$1"; }
for how in write truncate; do
	setid "local-$how"
	setid "orfs-$how"
	case $how in
	write)
		as_user sh -c "echo more >> $exp/pub/local-$how"
		as_user sh -c "echo more >> /tmp/mnt/pub/orfs-$how" || fail "a user's write to a writable set-id file failed"
		;;
	truncate)
		as_user truncate -s 2 "$exp/pub/local-$how"
		as_user truncate -s 2 "/tmp/mnt/pub/orfs-$how" || fail "a user's truncate of a writable set-id file failed"
		;;
	esac
	sync
	want=$(stat -c %a "$exp/pub/local-$how")
	expect_eq "mode after a user's $how, seen by the client" "$(stat -c %a /tmp/mnt/pub/orfs-$how)" "$want"
	expect_eq "mode after a user's $how, on the server" "$(stat -c %a "$exp/pub/orfs-$how")" "$want"
	expect_eq "the bits ext4 leaves after a user's $how" "$want" 777
done
umount /tmp/mnt
stop_server

step "one host holds at most peer_connections connections; the others stay free"
printf 'peer_connections 2\n' > /tmp/peer.conf
start_server -s $state -c /tmp/peer.conf -e data=$exp,no_root_squash
mount_orfs nconnect=2 "$ORFS_ADDR:/data" /tmp/mnt
expect_eq "a file through the mount" "$(cat /tmp/mnt/victim)" "root's"
set +e
fs -n data stat victim > /tmp/out 2>&1
r=$?
set -e
expect_eq "exit code of a third connection from the host" "$r" 3
expect_grep 'rejected: server out of connection resources' /tmp/out
expect_grep 'has 2 connections, the most one host may have' "$ORFS_SERVER_LOG"
kill -USR1 "$ORFS_SERVER_PID"
wait_until 50 grep -q 'connections refused by a host' "$ORFS_SERVER_LOG" || fail "no status report"
expect_grep 'status: 1 hosts connected \(at most 2 connections each\), 1 connections refused' "$ORFS_SERVER_LOG"
umount /tmp/mnt
# Once the server saw the mount's connections go, the host connects again.
ok_now() { fs -n data stat victim > /tmp/out 2>&1 && grep -q '^ok' /tmp/out; }
wait_until 100 ok_now || fail "the host still refused once its mount was gone: $(cat /tmp/out)"
stop_server

step "a connection silent for idle_timeout closes; a mount's keep-alives keep its own"
printf 'idle_timeout 3\n' > /tmp/idle.conf
start_server -s $state -c /tmp/idle.conf -e data=$exp,no_root_squash
# timeo=20: a keep-alive after 1 s of silence.
mount_orfs nconnect=1,timeo=20 "$ORFS_ADDR:/data" /tmp/mnt
expect_eq "a file through the mount" "$(cat /tmp/mnt/victim)" "root's"
# (knet-fs echoes each command of a script after "> ".) The silence is
# timed from the first answer, not from the start of knet-fs, whose
# connection may take seconds on a slow (debug) kernel; the second
# command goes once the server said it closed the connection, or after
# four times idle_timeout.
mkfifo /tmp/idle.in
fs -n data -f - < /tmp/idle.in > /tmp/idle.raw 2>&1 &
fspid=$!
exec 7> /tmp/idle.in
echo "stat victim" >&7
wait_until 300 grep -q '^ok' /tmp/idle.raw || { cat /tmp/idle.raw; fail "no first answer"; }
wait_until 120 grep -q ': silent for 3 s (' "$ORFS_SERVER_LOG" || true
# (In a subshell: a knet-fs gone with its connection leaves no reader.)
(echo "stat victim" >&7) 2>/dev/null || true
exec 7>&-
wait $fspid || true
rm /tmp/idle.in
grep -v '^> ' /tmp/idle.raw > /tmp/idle.out || true
expect_eq "the first answer of the silent client" "$(head -1 /tmp/idle.out | cut -c1-2)" ok
if grep -q '^ok' <(sed -n 2p /tmp/idle.out); then
	fail "a client silent for four times idle_timeout was still served: $(cat /tmp/idle.out)"
fi
expect_grep ': silent for 3 s \(' "$ORFS_SERVER_LOG"
expect_eq "connections closed for their silence (the mount's not among them)" \
	"$(grep -c ': silent for 3 s' "$ORFS_SERVER_LOG")" 1
expect_eq "the mount's connections made" "$(grep -c "connected to export 'data'" "$ORFS_SERVER_LOG")" 2
expect_eq "a file through the mount after 6 s" "$(cat /tmp/mnt/victim)" "root's"
kill -USR1 "$ORFS_SERVER_PID"
wait_until 50 grep -q 'closed after 3 s of silence' "$ORFS_SERVER_LOG" || fail "no status report"
expect_grep ', 1 closed after 3 s of silence' "$ORFS_SERVER_LOG"
umount /tmp/mnt
stop_server

step "READ sinks registered per READ, as on iWARP: data whole through ORFS and MXBD, no key left"
printf 'read_sinks per_read\n' > /tmp/sinks.conf
truncate -s 32M /tmp/sinkvol.img
start_server -s $state -c /tmp/sinks.conf -e data=$exp,no_root_squash -b vol=/tmp/sinkvol.img
# server_mrs: the memory registrations the server holds now
server_mrs() { rdma resource show mr | grep -c 'comm orfs-server' || true; }
mrs_idle=$(server_mrs)
[ "$mrs_idle" -gt 0 ] || fail "rdma resource show mr lists none of the server's registrations"
head -c 8M /dev/urandom > /tmp/sink.data
mount_orfs hard "$ORFS_ADDR:/data" /tmp/mnt
cp /tmp/sink.data /tmp/mnt/pub/sink.data
dd if=/tmp/sink.data of=/tmp/mnt/pub/sink.direct bs=1M oflag=direct status=none
sync
cmp /tmp/sink.data $exp/pub/sink.data || fail "a file written back through per-READ sinks differs"
cmp /tmp/sink.data $exp/pub/sink.direct || fail "an O_DIRECT file written through per-READ sinks differs"
umount /tmp/mnt
dev=$("$ORFS_PROJ/tools/mxbdctl" attach "$ORFS_ADDR" vol)
dd if=/tmp/sink.data of="$dev" bs=1M oflag=direct status=none
"$ORFS_PROJ/tools/mxbdctl" detach "${dev#/dev/}"
cmp -n 8388608 /tmp/sink.data /tmp/sinkvol.img || fail "a volume written through per-READ sinks differs"
wait_until 100 test "$(server_mrs)" -eq "$mrs_idle" ||
	fail "the server holds $(server_mrs) registrations once its clients left, $mrs_idle before"
kill -USR1 "$ORFS_SERVER_PID"
wait_until 50 grep -q 'READ sinks registered per READ' "$ORFS_SERVER_LOG" || fail "no status report"
expect_grep 'READ sinks registered per READ \([1-9][0-9]* registered, 0 live\)' "$ORFS_SERVER_LOG"
if grep -qE 'READ sinks .*registered, [1-9][0-9]* live' "$ORFS_SERVER_LOG"; then
	fail "a READ sink's registration outlived its READ"
fi
stop_server
