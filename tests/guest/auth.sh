#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Host authentication with a shared secret, both ways: a server whose
# allow line names a secret refuses a client without it, with another
# secret, or that sends anything before it authenticated; a client with a
# secret refuses a server that does not authenticate or holds another one;
# the kernel clients take the secret from a logon key (key=) that no user
# can read back, for a mount and for an MXBD volume, and keep it across a
# server restart.
# lanes: check=6.12/rxe all=*/rxe,*/tcp
# timeout: 300
. "$(dirname "$0")/lib.sh"
fs() { timeout 60 "$ORFS_BIN/knet-fs" -a "$ORFS_ADDR" "$@"; }
ping_() { timeout 60 "$ORFS_BIN/knet-ping" -a "$ORFS_ADDR" "$@"; }
state=/tmp/orfs-state
exp=/tmp/aexp
sec=/tmp/secrets
mkdir -p $exp/pub /tmp/mnt
chmod 1777 $exp/pub
echo hello > $exp/hello
truncate -s 16M /tmp/avol
mkdir -m 0700 $sec
# secret NAME: a new secret in $sec/NAME, as an administrator makes one
secret() { head -c 32 /dev/urandom | base64 > "$sec/$1"; chmod 0600 "$sec/$1"; }
secret a
secret b
load_suite

# rc CMD...: CMD's exit code, its output in /tmp/out
rc() { local r=0; "$@" > /tmp/out 2>&1 || r=$?; echo "$r"; }

start_server -s $state -A "$ORFS_ADDR/32,secret=$sec/a" -e data=$exp -b vol=/tmp/avol

step "a client without the secret is refused at connect, with the reason"
expect_eq "knet-fs without a secret" "$(rc fs -n data stat hello)" 3
expect_grep 'rejected: authentication required, or not set up for this client' /tmp/out
expect_grep "it has no secret, and this server needs one" "$ORFS_SERVER_LOG"

step "the right secret: both sides prove it, file and block service"
expect_eq "knet-fs with the secret" "$(rc fs -n data -K $sec/a stat hello)" 0
expect_grep '^ok' /tmp/out
expect_eq "knet-ping (block) with the secret" "$(rc ping_ -s block -n vol -c 3 -K $sec/a)" 0
expect_grep '^authenticated: the server proved the secret' /tmp/out

step "another secret: the server's proof fails at the client, which stops"
expect_eq "knet-fs with another secret" "$(rc fs -n data -K $sec/b stat hello)" 3
expect_grep "the server's proof is wrong" /tmp/out

step "a request before the authentication closes the connection"
expect_eq "a NOP before the authentication" "$(rc ping_ -s block -n vol -K $sec/a -x before-auth)" 0
expect_grep "the server dropped the connection" /tmp/out
expect_grep "a request before the authentication" "$ORFS_SERVER_LOG"

step "a secret file others may read is refused"
cp $sec/a /tmp/open-secret
chmod 0644 /tmp/open-secret
expect_eq "knet-fs with a secret others may read" "$(rc fs -n data -K /tmp/open-secret stat hello)" 2
expect_grep 'refused' /tmp/out
set +e
timeout 30 "$ORFS_BIN/orfs-server" -a "$ORFS_ADDR" -p 20099 -s $state -A "$ORFS_ADDR/32,secret=/tmp/open-secret" \
	-e data=$exp > /tmp/srv2.log 2>&1
r=$?
set -e
[ "$r" -ne 0 ] || fail "a server started with a secret others may read"
expect_grep 'refused' /tmp/srv2.log

step "a client with a secret refuses a server without one for it, or with another"
start_other /tmp/other.log -a "$ORFS_ADDR" -p 20098 -s $state -A "$ORFS_ADDR/32" -e data=$exp
expect_eq "a secret-less server" "$(rc fs -p 20098 -n data -K $sec/a stat hello)" 3
expect_grep 'rejected: authentication required' /tmp/out
kill "$OTHER_PID"; wait "$OTHER_PID" 2>/dev/null || true
start_other /tmp/other.log -a "$ORFS_ADDR" -p 20098 -s $state -A "$ORFS_ADDR/32,secret=$sec/b" -e data=$exp
expect_eq "a server holding another secret" "$(rc fs -p 20098 -n data -K $sec/a stat hello)" 3
expect_grep "the server's proof is wrong" /tmp/out
expect_grep "authentication to export 'data' failed|disconnected" /tmp/other.log

step "the kernel client: key= names a logon key, which no user reads back"
keyctl add logon knet:ka "$(cat $sec/a)" @u > /dev/null
keyctl add logon knet:kb "$(cat $sec/b)" @u > /dev/null
on_exit "keyctl purge logon > /dev/null 2>&1 || true"
expect_fail keyctl print "$(keyctl search @u logon knet:ka)"
expect_fail setpriv --reuid=1000 --regid=1000 --clear-groups keyctl print "$(keyctl search @u logon knet:ka)"
expect_fail mount -t orfs "$ORFS_ADDR:/data" /tmp/mnt
expect_fail mount -t orfs -o key=kb "$ORFS_ADDR:/data" /tmp/mnt
expect_grep "the server's proof is wrong" <(dmesg)
expect_fail mount -t orfs -o key=nosuch "$ORFS_ADDR:/data" /tmp/mnt
mount_orfs key=ka "$ORFS_ADDR:/data" /tmp/mnt
expect_grep "^$ORFS_ADDR:/data /tmp/mnt orfs .*,key=ka," /proc/mounts
expect_eq "a file through the authenticated mount" "$(cat /tmp/mnt/hello)" hello
expect_grep 'connected to .*authenticated' <(dmesg)

step "the mount reconnects with its copy of the secret after a server restart"
kill_server
start_server -s $state -A "$ORFS_ADDR/32,secret=$sec/a" -e data=$exp -b vol=/tmp/avol
echo after > /tmp/mnt/pub/after
expect_eq "written after the restart" "$(cat $exp/pub/after)" after
umount /tmp/mnt

step "MXBD: attach with key=, I/O; without it the attach fails"
expect_fail "$ORFS_PROJ/tools/mxbdctl" attach "$ORFS_ADDR" vol
dev=$("$ORFS_PROJ/tools/mxbdctl" attach "$ORFS_ADDR" vol key=ka)
on_exit "$ORFS_PROJ/tools/mxbdctl detach ${dev#/dev/} force 2>/dev/null || true"
head -c 1048576 /dev/urandom > /tmp/blk
dd if=/tmp/blk of="$dev" bs=1M count=1 oflag=direct status=none
dd if="$dev" of=/tmp/blk.back bs=1M count=1 iflag=direct status=none
cmp /tmp/blk /tmp/blk.back || fail "the volume read back differs"
"$ORFS_PROJ/tools/mxbdctl" detach "${dev#/dev/}"
