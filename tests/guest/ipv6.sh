#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# ORFS and MXBD over IPv6: the server listens on an IPv6 address; a mount
# names it in brackets, bare, or through addr=, from a chosen source
# address or not; a volume is attached and found again through mxbdctl;
# allow lists of IPv6 networks let in and keep out; a server on an IPv4
# and an IPv6 address at once; addresses that are not
# ones, or of two families, are refused with the reason; a link-local
# address with its zone.
# lanes: check=6.12/rxe all=*/rxe
# timeout: 240
. "$(dirname "$0")/lib.sh"

v6=fd77::1
v6b=fd77::2
# Two addresses on the RDMA interface, without duplicate detection (they
# would be "tentative", unusable, for a second or so).
ip -6 addr add "$v6/64" dev "$ORFS_DEV" nodad
ip -6 addr add "$v6b/64" dev "$ORFS_DEV" nodad
wait_gid "$ORFS_RDMA_DEV" fd77:0000:0000:0000:0000:0000:0000:0001
wait_gid "$ORFS_RDMA_DEV" fd77:0000:0000:0000:0000:0000:0000:0002

mkdir -p /tmp/e6 /tmp/m6
truncate -s 32M /tmp/v6 /tmp/v6r
ORFS_ADDR=$v6 start_server -e e6=/tmp/e6,allow=fd77::/64,no_root_squash -b v6=/tmp/v6,allow=fd77::1/128 \
	-b v6r=/tmp/v6r,allow=fd78::/16,allow=10.77.0.0/24
load_suite
mnt6() { "$ORFS_PROJ/tools/mount.orfs" "$@"; }

step "a mount names the server in brackets; /proc/mounts and mountstats give the address"
mnt6 "[$v6]:/e6" /tmp/m6
on_exit "umount -f /tmp/m6 2>/dev/null || true"
grep ' /tmp/m6 ' /proc/mounts | tee /tmp/out
expect_grep "^\[$v6\]:/e6 /tmp/m6 orfs rw,.*addr=$v6,port=20077," /tmp/out
expect_grep "server $v6 port 20077 export e6" /proc/self/mountstats
expect_grep "$v6 connected to export 'e6'" "$ORFS_SERVER_LOG"
seq 1 20000 > /tmp/m6/data
cmp <(seq 1 20000) /tmp/m6/data
cmp /tmp/e6/data /tmp/m6/data
umount /tmp/m6

step "bare, with addr=, and from a chosen source address"
mnt6 "$v6:/e6" /tmp/m6
expect_grep "addr=$v6,port=20077," /proc/mounts
umount /tmp/m6
mount -t orfs -o "addr=fd77:0:0:0::1" "whatever:/e6" /tmp/m6
expect_grep "addr=$v6,port=20077," /proc/mounts
umount /tmp/m6
n0=$(grep -c "$v6b connected to export 'e6'" "$ORFS_SERVER_LOG" || true)
mnt6 "[$v6]:/e6" /tmp/m6 -o "srcaddr=$v6b,nconnect=1"
expect_grep "addr=$v6,port=20077,.*,srcaddr=$v6b," /proc/mounts
expect_eq "connections from $v6b" "$(grep -c "$v6b connected to export 'e6'" "$ORFS_SERVER_LOG")" \
	$((n0 + 1))
cmp <(seq 1 20000) /tmp/m6/data
umount /tmp/m6

step "addresses that are not ones, or of the other family, are refused with the reason"
expect_fail mount -t orfs "[fd77:::1]:/e6" /tmp/m6
expect_grep "server in \[fd77:::1\]:/e6: not an IPv4 or IPv6 address" <(dmesg)
expect_fail mount -t orfs -o addr=fd77::g "x:/e6" /tmp/m6
expect_grep "addr=fd77::g is not an IPv4 or IPv6 address" <(dmesg)
expect_fail mnt6 "[$v6]:/e6" /tmp/m6 -o "srcaddr=$ORFS_ADDR"
expect_grep "srcaddr=$ORFS_ADDR and the server's address $v6 are not of one family" <(dmesg)
# No server on the IPv4 address: it listens on the IPv6 one only.
expect_fail mount -t orfs "$ORFS_ADDR:/e6" /tmp/m6
expect_grep "cannot reach $ORFS_ADDR:20077 export 'e6'" <(dmesg)

step "a volume attached over IPv6, found again in any spelling of its address"
ctl() { "$ORFS_PROJ/tools/mxbdctl" "$@"; }
expect_eq "attach" "$(ctl attach "[$v6]" v6)" /dev/mxbd0
expect_eq "server in sysfs" "$(cat /sys/block/mxbd0/mxbd/server)" "[$v6]:20077"
expect_grep "^mxbd0 +\[$v6\]:20077 +v6 " <(ctl list)
head -c 4M /dev/urandom > /tmp/blk
dd if=/tmp/blk of=/dev/mxbd0 bs=1M oflag=direct status=none
cmp -n 4194304 /tmp/blk /dev/mxbd0
cmp -n 4194304 /tmp/blk /tmp/v6
if ctl attach "fd77:0::1" v6 > /tmp/out 2>&1; then fail "a second attach of v6"; fi
expect_grep "volume 'v6' of \[$v6\]:20077 is attached already" /tmp/out
printf '%s\n' "fd77:0:0::1 v6" > /tmp/volumes
ctl up /tmp/volumes | tee /tmp/out
expect_grep "^fd77:0:0::1 v6: /dev/mxbd0, attached already$" /tmp/out
ctl down /tmp/volumes | tee /tmp/out
expect_grep "^fd77:0:0::1 v6: /dev/mxbd0 detached$" /tmp/out
expect_eq "devices left" "$(($(ctl list | wc -l) - 1))" 0

step "allow lists of IPv6 networks: a source outside one is refused, with its address"
if ctl attach "$v6" v6 "srcaddr=$v6b" > /tmp/out 2>&1; then fail "v6 from $v6b attached"; fi
expect_grep "refused: " /tmp/out
expect_grep "rejecting a connection: .*\($v6b, to 'v6'\)" "$ORFS_SERVER_LOG"
if ctl attach "$v6" v6r > /tmp/out 2>&1; then fail "v6r from $v6 attached"; fi
expect_grep "rejecting a connection: .*\($v6, to 'v6r'\)" "$ORFS_SERVER_LOG"
if ctl attach "$v6" v6 "srcaddr=$ORFS_ADDR" > /tmp/out 2>&1; then fail "a source of the other family"; fi
expect_grep "srcaddr $ORFS_ADDR and server $v6 are not of one family" /tmp/out
expect_eq "devices" "$(($(ctl list | wc -l) - 1))" 0

step "one server listens on an IPv4 and an IPv6 address at once; a check names an address without a device"
start_other /tmp/server2.log -a "$ORFS_ADDR" -a "$v6" -p 20090 -s /tmp/s2 -e e6=/tmp/e6,no_root_squash
server2=$OTHER_PID
expect_grep "listening on $ORFS_ADDR port 20090, $v6 port 20090 \($ORFS_RDMA_DEV\)" /tmp/server2.log
mkdir -p /tmp/m4 /tmp/m6b
mount_orfs port=20090,nconnect=1 "$ORFS_ADDR:/e6" /tmp/m4
mount_orfs port=20090,nconnect=1 "[$v6]:/e6" /tmp/m6b
echo both > /tmp/m4/both
expect_eq "written over IPv4, read over IPv6" "$(cat /tmp/m6b/both)" both
expect_grep "$ORFS_ADDR connected to export 'e6'" /tmp/server2.log
expect_grep "$v6 connected to export 'e6'" /tmp/server2.log
umount /tmp/m4
umount /tmp/m6b
set +e
"$ORFS_BIN/orfs-server" --insecure -n -a "$ORFS_ADDR" -a 192.0.2.1 -e e6=/tmp/e6,no_root_squash -s /tmp/s2 > /tmp/check.out 2>&1
rc=$?
set -e
cat /tmp/check.out
expect_eq "exit code of a check with an address of no device" "$rc" 1
expect_grep "listen 192.0.2.1: no RDMA device has that address" /tmp/check.out
"$ORFS_BIN/orfs-server" --insecure -n -a "$ORFS_ADDR" -a "$v6" -p 20090 -e e6=/tmp/e6,no_root_squash -s /tmp/s2 > /tmp/check.out 2>&1
expect_grep "configuration checked: listen $ORFS_ADDR port 20090, $v6 port 20090 on $ORFS_RDMA_DEV, 1 exports" /tmp/check.out
kill -TERM "$server2"
wait "$server2" || fail "the second server exited with $?"

step "a link-local address with its zone: a server listens on it, a mount and a volume reach it, /proc/mounts gives it back"
ll=fe80::77
ip -6 addr add "$ll/64" dev "$ORFS_DEV" nodad
wait_gid "$ORFS_RDMA_DEV" fe80:0000:0000:0000:0000:0000:0000:0077
start_other /tmp/server3.log -a "$ll%$ORFS_DEV" -p 20093 -s /tmp/s3 -e e6=/tmp/e6,no_root_squash -b v6=/tmp/v6
server3=$OTHER_PID
expect_grep "listening on $ll%$ORFS_DEV port 20093 \($ORFS_RDMA_DEV\)" /tmp/server3.log
mkdir -p /tmp/m7 /tmp/m8
mnt6 "[$ll%$ORFS_DEV]:/e6" /tmp/m7 -o port=20093,nconnect=1
on_exit "umount -f /tmp/m7 2>/dev/null || true"
ifindex=$(cat "/sys/class/net/$ORFS_DEV/ifindex")
grep ' /tmp/m7 ' /proc/mounts | tee /tmp/out
expect_grep ",addr=$ll%$ifindex,port=20093," /tmp/out
seq 1 3000 > /tmp/m7/ll
cmp <(seq 1 3000) /tmp/e6/ll
# The address as /proc/mounts gives it makes a mount too.
given=$(sed -n 's/.*,addr=\([^,]*\),.*/\1/p' /tmp/out)
mount_orfs "addr=$given,port=20093,nconnect=1" "x:/e6" /tmp/m8
cmp <(seq 1 3000) /tmp/m8/ll
umount /tmp/m8
umount /tmp/m7
"$ORFS_PROJ/tools/mxbdctl" attach "$ll%$ORFS_DEV" v6 port=20093 | tee /tmp/out
devll=$(awk '{ print $NF }' /tmp/out)
on_exit "'$ORFS_PROJ/tools/mxbdctl' detach $devll 2>/dev/null || true"
expect_eq "its server in sysfs" "$(cat "/sys/block/${devll#/dev/}/mxbd/server")" "[$ll]:20093"
head -c 1M /dev/urandom > /tmp/llsrc
dd if=/tmp/llsrc of="$devll" bs=64k oflag=direct status=none
cmp /tmp/llsrc <(head -c 1M /tmp/v6)
"$ORFS_PROJ/tools/mxbdctl" detach "${devll#/dev/}"
expect_grep "$ll connected to export 'e6'" /tmp/server3.log
expect_grep "$ll connected to volume 'v6'" /tmp/server3.log
kill -TERM "$server3"
wait "$server3" || fail "the link-local server exited with $?"
