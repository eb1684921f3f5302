#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# ORFS's caches against changes made elsewhere: close-to-open consistency
# with the server's changes, mapped pages, two writers in one page, bytes
# stored past the end of a file; names created on the server (negative
# dentries) and by another client; ACLs changed on the server; cached
# names answered without asking; a name trusted for its directory's
# attribute timeout.
# lanes: check=6.12/rxe all=*
# timeout: 300
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/guest/common/orfs.sh
. "$(dirname "$0")/common/orfs.sh"

step "what the client writes is on the server; a change on the server shows at the next open"
mnt
echo one > /tmp/mnt/c2o
expect_eq "on the server" "$(cat $exp/c2o)" one
expect_eq "through ORFS" "$(cat /tmp/mnt/c2o)" one
echo "two, longer" > $exp/c2o
expect_eq "after the server's change" "$(cat /tmp/mnt/c2o)" "two, longer"
# Pages a process keeps mapped are no exception: while one maps two pages
# of a file and has stored into the first, the server's copy of the
# second changes; a new open must read the server's second page through
# read() and the mapping, and keep the store (written back first). With
# large folios both pages are in one folio, and the store must send only
# the page it went to, not the stale second one over the server's.
dd if=/dev/zero bs=8192 count=1 status=none | tr '\0' A > $exp/mapped
python3 - /tmp/mnt/mapped $exp/mapped "$ORFS_BIN/folio-count" $lf <<'PY'
import mmap, os, subprocess, sys, time
orfs, server, fc, lf = sys.argv[1:]
fd = os.open(orfs, os.O_RDWR)
m = mmap.mmap(fd, 8192)
assert m[0:1] + m[4096:4097] == b'AA', 'the file as first read'
together = subprocess.run([fc, orfs, '0'], check=True, capture_output=True, text=True).stdout
assert ('together 0 yes' in together) == (lf == 'on'), 'folios: %r' % together
m[0:10] = b'M' * 10
with open(server, 'r+b') as f:
    f.seek(4096)
    f.write(b'S' * 4096)
time.sleep(0.05)    # an open within the tick of the last answer asks nothing
fd2 = os.open(orfs, os.O_RDONLY)
got = os.pread(fd2, 8192, 0)
assert got[:11] == b'M' * 10 + b'A', 'read() lost the mapped store: %r' % got[:11]
assert got[4096:] == b'S' * 4096, 'read() of the changed page: %r' % got[4096:4106]
assert m[4096:4106] == b'S' * 10, 'the mapping of the changed page: %r' % m[4096:4106]
assert m[0:11] == b'M' * 10 + b'A', 'the mapping lost its store: %r' % m[0:11]
m.close()
os.close(fd2)
os.close(fd)
with open(server, 'rb') as f:
    assert f.read(11) == b'M' * 10 + b'A', 'the store is not on the server'
print('mapped pages: ok')
PY
rm /tmp/mnt/mapped
# Two writers in one page: while this client holds a file cached, another
# changes bytes on the server in the page this client then writes, but
# not the bytes it writes. Write-back sends only the bytes written, so the
# server keeps both clients' bytes: a write inside one page, one from
# mid-page across into the next (one request that starts mid-page), two
# writes apart around the other's bytes in one page and in one large
# folio (each sent alone), and five in one page around them (four runs
# kept apart: the two closest join, not around the other's bytes).
python3 - /tmp/mnt $exp <<'PY'
import os, sys
mnt, exp = sys.argv[1:]
cases = (('shared1', 4096, (2000,), ((0, b'C' * 100),)),
         ('shared2', 12288, (100, 6000), ((3000, b'D' * 2000),)),
         ('shared3', 4096, (2000,), ((0, b'E' * 100), (3000, b'E' * 100))),
         ('shared4', 65536, (20000,), ((100, b'F' * 100), (40000, b'F' * 5000))),
         ('shared5', 4096, (2000,), tuple((at, b'G' * 100) for at in (0, 500, 1000, 1500, 2500))))
fds = []
for name, size, theirs, ours in cases:
    with open(os.path.join(exp, name), 'wb') as f:
        f.write(b'A' * size)
    fd = os.open(os.path.join(mnt, name), os.O_RDWR)
    assert os.pread(fd, size, 0) == b'A' * size, 'the file as first read'
    fds.append(fd)
for (name, size, theirs, ours), fd in zip(cases, fds):
    with open(os.path.join(exp, name), 'r+b') as f:
        for off in theirs:
            f.seek(off)
            f.write(b'B' * 100)
    for at, data in ours:
        os.pwrite(fd, data, at)
    os.fsync(fd)
    os.close(fd)
    want = bytearray(b'A' * size)
    for off in theirs:
        want[off:off + 100] = b'B' * 100
    for at, data in ours:
        want[at:at + len(data)] = data
    with open(os.path.join(exp, name), 'rb') as f:
        got = f.read()
    bad = [i for i in range(size) if got[i] != want[i]]
    assert not bad, '%s: the server has %d wrong bytes from %d: %r' % (
        name, len(bad), bad[0], got[bad[0]:bad[0] + 8])
print('two writers in one page: ok')
PY
rm /tmp/mnt/shared1 /tmp/mnt/shared2 /tmp/mnt/shared3 /tmp/mnt/shared4 /tmp/mnt/shared5
# Bytes a mapping stored past the end of a file (not part of it, never
# sent) must not show when another client grows the file, nor go to the
# server: it has zeroes there. Once with the page written back before,
# once with it dirty (a store inside the file too), which write-back
# then sends up to the new end.
for dirty in 0 1; do
	printf end > $exp/eof
	python3 - /tmp/mnt/eof $exp/eof $dirty <<'PY'
import ctypes, mmap, os, sys, time
orfs, server, dirty = sys.argv[1], sys.argv[2], sys.argv[3] == '1'
# Python's mmap will not map past the end of a file: libc's will.
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.msync.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
fd = os.open(orfs, os.O_RDWR)
addr = libc.mmap(None, 4096, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, fd, 0)
assert addr not in (None, ctypes.c_void_p(-1).value), os.strerror(ctypes.get_errno())
m = (ctypes.c_char * 4096).from_address(addr)
m[100:110] = b'J' * 10
if dirty:
    m[0:3] = b'END'
else:
    assert libc.msync(addr, 4096, 4) == 0, 'msync'    # MS_SYNC
head = b'END' if dirty else b'end'
os.truncate(server, 8192)
time.sleep(0.05)
fd2 = os.open(orfs, os.O_RDONLY)
got = os.pread(fd2, 8192, 0)
assert got[:3] == head and got[3:] == bytes(8189), 'read(): %r' % got[:120]
assert m[100:110] == bytes(10), 'the mapping: %r' % m[100:110]
assert libc.munmap(addr, 4096) == 0, 'munmap'
os.close(fd2)
os.close(fd)
print('past the end, %s: ok' % ('dirty' if dirty else 'clean'))
PY
	expect_eq "the server's copy (dirty $dirty)" "$(tr -d '\0' < $exp/eof)" "$( ((dirty)) && echo END || echo end)"
	expect_eq "the server's size (dirty $dirty)" "$(stat -c %s $exp/eof)" 8192
	rm /tmp/mnt/eof
done
cp /usr/bin/bash /tmp/mnt/bash && cmp /usr/bin/bash $exp/bash
echo 3 > /proc/sys/vm/drop_caches
/tmp/mnt/bash -c 'echo executed from ORFS' | tee /tmp/out
expect_grep '^executed from ORFS$' /tmp/out
umnt

step "negative dentries: a name created on the server appears once the directory's cache expires"
mnt -o actimeo=1
stat /tmp/mnt/late 2>/dev/null && fail "late exists too early"
touch $exp/late
sleep 1.5
stat /tmp/mnt/late > /dev/null || fail "a name created on the server stayed invisible"
umnt

step "an ACL changed on the server reaches the client's permission checks within the attribute timeout"
echo secret > $exp/aclf
chmod 600 $exp/aclf
mnt -o actimeo=1
as_user test -r /tmp/mnt/aclf && fail "uid 1000 may read a 0600 file of root"
# Granted: the mode's group bits become the mask (r), the ctime moves.
acl $exp/aclf 1:6:-1 2:4:1000 4:0:-1 0x10:4:-1 0x20:0:-1
sleep 1.5
as_user test -r /tmp/mnt/aclf || fail "an ACL entry granted on the server is not seen"
expect_eq "read through a granted ACL entry" "$(as_user cat /tmp/mnt/aclf)" secret
# Moved to another user: mode, owner and mtime stay, only the ctime moves.
acl $exp/aclf 1:6:-1 2:4:1001 4:0:-1 0x10:4:-1 0x20:0:-1
sleep 1.5
as_user test -r /tmp/mnt/aclf && fail "an ACL entry removed on the server is still honoured"
expect_fail as_user cat /tmp/mnt/aclf
rm /tmp/mnt/aclf
umnt

step "two clients: a name one creates is seen by the other at its next walk (noac)"
# /tmp/mnt asks the server at each walk (noac); /tmp/mnt2 is a second
# client. Each round: the second client changes the directory, the first
# finds a name absent (with the directory's attributes just fetched), the
# second creates it, and the first must see it. The directory's ctime
# moves once a clock tick (4 ms); the server adds a count of its changes
# so that a create within the tick moves the attribute too (the unit test
# checks the count: here the three round trips take longer than a tick,
# which the count of same ctimes printed shows).
mnt -o noac
mkdir -p /tmp/mnt2 /tmp/mnt/nd
mount -t orfs "$ORFS_ADDR:/data" /tmp/mnt2
EXP=$exp python3 - <<'PY' || fail "a name created by another client stayed absent"
import os
exp = os.environ["EXP"] + "/nd"
stale = same = 0
for i in range(100):
    os.close(os.open(f"/tmp/mnt2/nd/a{i}", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    if os.path.lexists(f"/tmp/mnt/nd/x{i}"):
        raise SystemExit(f"x{i} exists before its create")
    os.close(os.open(f"/tmp/mnt2/nd/x{i}", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    if not os.path.lexists(f"/tmp/mnt/nd/x{i}"):
        stale += 1
for i in range(100):
    same += os.stat(f"{exp}/a{i}").st_ctime_ns == os.stat(f"{exp}/x{i}").st_ctime_ns
print(f"{stale} of 100 names stayed absent; {same} created in the ctime tick of the one before")
raise SystemExit(stale > 0)
PY
umount /tmp/mnt2
rm -r /tmp/mnt/nd
umnt

step "cached names, present and absent, are answered without asking the server"
mnt -o actimeo=60
touch /tmp/mnt/cached
lookups() {
	python3 - <<'PY'
import os
for _ in range(500):
    os.stat('/tmp/mnt/cached')
    if os.path.lexists('/tmp/mnt/absent'):
        raise SystemExit('absent appeared')
PY
}
# The first round fetches what the create left stale (the directory's attributes).
lookups || fail "cached lookups"
asked=$(($(ep_sum requests) - $(ep_sum keepalives)))
lookups || fail "cached lookups"
expect_eq "requests for 1000 cached lookups" "$(($(ep_sum requests) - $(ep_sum keepalives) - asked))" 0
rm /tmp/mnt/cached
umnt

step "a name is trusted for its directory's attribute timeout, not its file's"
# Files' attributes for 1 s, directories' (and their names) for 30: an
# unlink 1.5 s after the create sends the UNLINK alone.
mnt -o acregmin=1,acregmax=1
touch /tmp/mnt/aged
sleep 1.5
l0=$(ms LOOKUP 2) u0=$(ms UNLINK 2)
rm /tmp/mnt/aged
expect_eq "LOOKUPs to unlink a name older than its file's timeout" "$(($(ms LOOKUP 2) - l0))" 0
expect_eq "UNLINKs" "$(($(ms UNLINK 2) - u0))" 1
umnt
# With the directories' timeout at 1 s, a name removed on the server is
# gone from the client after it.
mnt -o actimeo=1
touch /tmp/mnt/gone
stat /tmp/mnt/gone > /dev/null
rm $exp/gone
sleep 1.5
l0=$(ms LOOKUP 2)
expect_fail stat /tmp/mnt/gone
[ "$(($(ms LOOKUP 2) - l0))" -ge 1 ] || fail "the expired name was not looked up"
umnt
echo ok
