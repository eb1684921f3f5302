#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The file service end to end over rxe with the userspace client: every
# operation, data through segments (server RDMA) and inline, a directory
# listed by cookies, permissions as a user, read-only and squashed exports,
# hostile names and forged handles, files kept open by the server used
# only by their credentials and forgotten on a permission change, a
# retransmitted create answered from the replay cache (also after the
# client reconnected onto another progress thread), handles that
# survive a server restart, and name operations of root on an export in
# memory that run without a worker thread (others' with one).
# lanes: check=6.12/rxe all=*/rxe
# timeout: 300
. "$(dirname "$0")/lib.sh"
fs() { timeout 120 "$ORFS_BIN/knet-fs" -a "$ORFS_ADDR" "$@"; }
state=/tmp/orfs-state

# The main export is ext4 (user xattrs on both kernels; tmpfs has them
# only from 6.6), on a loop device over a file in tmpfs.
mkdir -p /tmp/exp /tmp/roexp /tmp/sqexp
truncate -s 64M /tmp/ext4.img
mkfs.ext4 -q -F /tmp/ext4.img
modprobe loop
mount -o loop /tmp/ext4.img /tmp/exp
on_exit "umount /tmp/exp"
chmod 0755 /tmp/exp
mkdir -m 1777 /tmp/exp/pub /tmp/sqexp/pub
echo "read me" > /tmp/roexp/hello
head -c 2621440 /dev/urandom > /tmp/src.bin	# 2.5 MiB: several RDMA chunks
head -c 100 /dev/urandom > /tmp/small.bin	# inline
start_server -s $state -e data=/tmp/exp,no_root_squash -e ro=/tmp/roexp,ro,no_root_squash -e sq=/tmp/sqexp,squash -m 4 -C 256

step "namespace and data operations as root"
for i in $(seq 1 300); do echo "create d/many/f$i 644"; done > /tmp/many.txt
cat > /tmp/ops.txt <<OPS
mkdir d 755
mkdir d/many 755
create d/f 644
put /tmp/src.bin d/big
get d/big /tmp/back.bin
put /tmp/small.bin d/small
get d/small /tmp/small.back
stat d/big
symlink /etc/passwd d/ln
readlink d/ln
link d/f d/f2
mv d/f2 d/f3
mv d/f d/f3 noreplace
mv d/f d/f3 exchange
mknod d/fifo fifo
mknod d/sock sock
mknod d/dev chr
chmod 600 d/f
utime 1000000000 d/f
stat d/f
setxattr d/f user.k v1
getxattr d/f user.k
listxattr d/f
rmxattr d/f user.k
getxattr d/f user.k
truncate 10 d/small
stat d/small
fsync d/big
statfs
rmdir d
OPS
cat /tmp/ops.txt /tmp/many.txt > /tmp/script.txt
echo "ls d/many" >> /tmp/script.txt
fs -n data -f /tmp/script.txt > /tmp/out.txt
grep -v '^> create d/many\|^ok type=file mode=644 size=0' /tmp/out.txt
cmp /tmp/src.bin /tmp/back.bin || fail "the file read back differs"
cmp /tmp/small.bin /tmp/small.back || fail "the small file read back differs"
cmp /tmp/src.bin /tmp/exp/d/big || fail "the file on the server differs"
expect_grep '^ok wrote 2621440$' /tmp/out.txt
expect_grep '^ok read 2621440$' /tmp/out.txt
expect_grep '^ok type=file mode=644 size=2621440 nlink=1 uid=0 gid=0' /tmp/out.txt
expect_grep '^ok /etc/passwd$' /tmp/out.txt
expect_grep '^ok type=file mode=644 size=0 nlink=2 ' /tmp/out.txt
expect_grep '^error EEXIST' /tmp/out.txt
expect_grep '^ok type=fifo ' /tmp/out.txt
expect_grep '^ok type=socket ' /tmp/out.txt
# A device node: unsquashed root may make one (below: squashed root may not).
expect_grep '^ok type=chr ' /tmp/out.txt
expect_grep '^ok type=file mode=600 size=0 nlink=2 .* mtime=1000000000$' /tmp/out.txt
expect_grep '^ok v1$' /tmp/out.txt
expect_grep '^ok user.k$' /tmp/out.txt
expect_grep '^error ENODATA' /tmp/out.txt
expect_grep '^ok type=file mode=644 size=10 ' /tmp/out.txt
expect_grep '^ok bsize=' /tmp/out.txt
expect_grep '^error ENOTEMPTY' /tmp/out.txt
expect_grep '^ok 300 entries in ([6-9]|[1-9][0-9]+) calls$' /tmp/out.txt
[ -p /tmp/exp/d/fifo ] && [ -S /tmp/exp/d/sock ] || fail "no fifo or socket on the server"
[ "$(stat -c %i /tmp/exp/d/f)" = "$(stat -c %i /tmp/exp/d/f3)" ] || true

step "hostile names and forged handles are refused, nothing escapes"
cat > /tmp/hostile.txt <<OPS
raw-lookup ..
raw-lookup .
raw-lookup a/b
raw-lookup /etc
ls d/ln
stat d/ln/x
stat-fh 00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff
OPS
fs -n data -f /tmp/hostile.txt > /tmp/out.txt
cat /tmp/out.txt
expect_eq "refused" "$(grep -c '^error EINVAL' /tmp/out.txt)" 4
expect_eq "not followed" "$(grep -c '^error ENOTDIR' /tmp/out.txt)" 2
expect_grep '^error ESTALE' /tmp/out.txt

step "permissions are the caller's: a user, the sticky bit, read-only and squash"
fs -n data -u 1000 -g 1000 create d/u 644 > /tmp/out.txt || true
expect_grep '^error EACCES' /tmp/out.txt
fs -n data -u 1000 -g 1000 create pub/u 600 > /tmp/out.txt
expect_grep '^ok type=file mode=600 size=0 nlink=1 uid=1000 gid=1000' /tmp/out.txt
fs -n data -u 1001 -g 1001 get pub/u - > /tmp/out.txt || true
expect_grep '^error EACCES' /tmp/out.txt
fs -n data -u 1001 -g 1001 rm pub/u > /tmp/out.txt || true
expect_grep '^error EPERM' /tmp/out.txt
fs -n ro create x 644 > /tmp/out.txt || true
expect_grep '^error EROFS' /tmp/out.txt
fs -n ro get hello - > /tmp/out.txt
expect_grep '^read me$' /tmp/out.txt
fs -n sq create pub/s 644 > /tmp/out.txt
expect_grep '^ok type=file .* uid=65534 gid=65534' /tmp/out.txt
fs -n sq mknod pub/dev chr > /tmp/out.txt || true
expect_grep '^error EPERM' /tmp/out.txt
fs -n data -u 1000 -g 1000 mknod pub/udev chr > /tmp/out.txt || true
expect_grep '^error EPERM' /tmp/out.txt

step "files kept open for the next READ serve their credentials only; permission changes apply at once"
echo "for user 1000 only, later" > /tmp/secret.txt
cat > /tmp/fdc.txt <<OPS
as 1000 1000
create pub/c 644
put /tmp/secret.txt pub/c
get pub/c -
get pub/c -
as 1001 1001
get pub/c -
as 1000 1000
chmod 600 pub/c
as 1001 1001
get pub/c -
as 1000 1000
get pub/c -
chmod 644 pub/c
as 1001 1001
get pub/c -
OPS
fs -n data -f /tmp/fdc.txt > /tmp/out.txt || true
cat /tmp/out.txt
expect_eq "reads allowed by mode 644" "$(grep -c '^for user 1000 only, later$' /tmp/out.txt)" 5
expect_eq "a read by 1001 after chmod 600" "$(grep -c '^error EACCES' /tmp/out.txt)" 1
# A change made on the server's own file system, not through the server:
# the next READ by the user who has the file open in the cache is refused.
# (A new file, so that the open file read first is a fresh one.)
rm -f /tmp/fdc.out
{
	printf 'as 1000 1000\ncreate pub/c2 644\nput /tmp/secret.txt pub/c2\n'
	printf 'as 1001 1001\nget pub/c2 -\n'
	for ((i = 0; i < 200; i++)); do
		grep -q '^for user' /tmp/fdc.out 2>/dev/null && break
		sleep 0.05
	done
	chmod 600 /tmp/exp/pub/c2
	echo "get pub/c2 -"
} | fs -n data -f - > /tmp/fdc.out || true
cat /tmp/fdc.out
expect_eq "the read before the local chmod" "$(grep -c '^for user 1000 only, later$' /tmp/fdc.out)" 1
expect_grep '^error EACCES' /tmp/fdc.out

step "a retransmitted create is answered from the replay cache, not run again"
cat > /tmp/replay.txt <<OPS
create pub/once 644 excl
again
create pub/once 644 excl
rm pub/once
again
OPS
fs -n data -f /tmp/replay.txt > /tmp/out.txt
cat /tmp/out.txt
expect_eq "answers ok (first and retransmission)" "$(grep -c '^ok type=file' /tmp/out.txt)" 2
expect_eq "a new request is refused" "$(grep -c '^error EEXIST' /tmp/out.txt)" 1
expect_eq "a retransmitted remove is not ENOENT" "$(grep -c '^ok$' /tmp/out.txt)" 2

step "a client that reconnects onto another progress thread gets its answer from the replay cache"
# Two processes with one client id send the same create, xid for xid (a
# client retransmitting on a new connection). The first holds its
# connection open, so the second goes to the other progress thread.
expect_grep ' 2 progress threads, ' "$ORFS_SERVER_LOG"
n0=$(log_lines)
rm -f /tmp/hold && mkfifo /tmp/hold
exec 9<>/tmp/hold
fs -n data -c 77 -f /tmp/hold > /tmp/first.out 9>&- &
first=$!
echo "create pub/cross 644 excl" >&9
for _ in $(seq 300); do
	grep -q '^ok type=file' /tmp/first.out && break
	sleep 0.1
done
expect_grep '^ok type=file mode=644 ' /tmp/first.out
fs -n data -c 77 create pub/cross 644 excl > /tmp/second.out 9>&-
exec 9>&-
wait $first || fail "the first client failed"
cat /tmp/second.out
expect_grep '^ok type=file mode=644 ' /tmp/second.out
expect_eq "progress threads of the two connections" "$(conn_threads export data "$n0")" "0 1"
fs -n data create pub/cross 644 excl > /tmp/out.txt || true
expect_grep '^error EEXIST' /tmp/out.txt
fs -n data rm pub/cross > /tmp/out.txt

step "handles survive a server restart; another key makes them stale"
fh=$(fs -n data fh d/big | sed -n 's/^ok //p')
[ ${#fh} = 128 ] || fail "no handle: $fh"
stop_server
expect_grep 'stopped \(.*, [1-9][0-9]* open files used again, [1-9][0-9]* directories used again\)' "$ORFS_SERVER_LOG"
start_server -s $state -e data=/tmp/exp,no_root_squash
fs -n data stat-fh "$fh" > /tmp/out.txt
expect_grep '^ok type=file mode=644 size=2621440 ' /tmp/out.txt
stop_server
start_server -s /tmp/other-state -e data=/tmp/exp,no_root_squash
fs -n data stat-fh "$fh" > /tmp/out.txt || true
expect_grep '^error ESTALE' /tmp/out.txt
stop_server

step "an export in memory: root's name operations run on the progress thread, others' on workers"
# /tmp is tmpfs. The count is in the server's last line; it covers name
# operations only (LOOKUP, CREATE, UNLINK, ...), not READ or WRITE.
mkdir -p /tmp/mem/pub /tmp/memsq
chmod 1777 /tmp/mem/pub
chmod 0777 /tmp/memsq	# squashed root creates as nobody
head -c 262144 /dev/urandom > /tmp/256k.bin
mem_server() { start_server -s $state -e mem=/tmp/mem,no_root_squash -e memsq=/tmp/memsq,squash; }
{
	echo "mkdir r 755"
	for i in $(seq 1 30); do echo "create r/f$i 644"; done
	for i in $(seq 1 30); do echo "rm r/f$i"; done
	echo "rmdir r"
} > /tmp/root.txt
sed 's/ r/ pub\/r/' /tmp/root.txt > /tmp/user.txt
mem_server
fs -n mem -f /tmp/root.txt > /tmp/out.txt
expect_eq "root's answers" "$(grep -c '^ok' /tmp/out.txt)" 62
expect_eq "root's files" "$(grep -c '^ok type=file mode=644 size=0 nlink=1 uid=0 gid=0 ' /tmp/out.txt)" 30
# 1 MKDIR, 30 x (LOOKUP r, CREATE), 30 x (LOOKUP r, UNLINK), 1 RMDIR
stop_server
expect_eq "root's requests run without a worker" "$(names_here)" 122
mem_server
fs -n mem -u 1000 -g 1000 -f /tmp/user.txt > /tmp/out.txt
expect_eq "a user's answers" "$(grep -c '^ok' /tmp/out.txt)" 62
expect_eq "the user's files" "$(grep -c '^ok type=file mode=644 size=0 nlink=1 uid=1000 gid=1000 ' /tmp/out.txt)" 30
stop_server
expect_eq "a user's requests run without a worker" "$(names_here)" 0
mem_server
fs -n memsq -f /tmp/root.txt > /tmp/out.txt
expect_eq "squashed root's answers" "$(grep -c '^ok' /tmp/out.txt)" 62
expect_eq "nobody's files" "$(grep -c '^ok type=file mode=644 size=0 nlink=1 uid=65534 gid=65534 ' /tmp/out.txt)" 30
stop_server
expect_eq "squashed root's requests run without a worker" "$(names_here)" 0
mem_server
cat > /tmp/mixed.txt <<OPS
put /tmp/256k.bin big
create pub/mine 644
as 1000 1000
create pub/hers 600
as 1001 1001
rm pub/hers
as 0 0
rm pub/hers
rm pub/mine
rm big
OPS
fs -n mem -f /tmp/mixed.txt > /tmp/out.txt
cat /tmp/out.txt
expect_grep '^ok wrote 262144$' /tmp/out.txt
expect_grep '^ok type=file mode=600 size=0 nlink=1 uid=1000 gid=1000' /tmp/out.txt
expect_eq "the sticky bit holds for another user" "$(grep -c '^error' /tmp/out.txt)" 1
expect_grep '^error EPERM' /tmp/out.txt
[ -z "$(ls -A /tmp/mem/pub)" ] && [ ! -e /tmp/mem/big ] || fail "left: $(ls -AR /tmp/mem)"
# Root's requests: put (CREATE, LOOKUP), create (LOOKUP pub, CREATE),
# two rm (LOOKUP pub, UNLINK). Not the UNLINK of the big file: a removal
# that frees more than 64 KiB goes to a worker.
stop_server
expect_eq "requests run without a worker" "$(names_here)" 8

echo ok
