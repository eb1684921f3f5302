#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# ORFS locks across clients, the server up: two mounts of one export are
# two clients to the server. fcntl() locks (POSIX and OFD) and flock() of
# one are seen by the other: conflicts, F_GETLK, a blocked F_SETLKW that
# gets the lock when the holder lets go (within a round trip or so,
# fcntl() and flock(): the server holds the waiter's request), release on
# close and on a killed holder, a waiter killed in its request the server
# holds (the connection stays), a killed waiter whose owner lives on (its
# wait ends: no EDEADLK), a lock as a page-cache coherence point, and
# locks=local. What happens when a client or the server goes away is
# orfs-locks-recovery.sh's.
# lanes: check=6.12/rxe all=*/rxe
# timeout: 300
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/guest/common/locks.sh
. "$(dirname "$0")/common/locks.sh"

step "mount: locks=remote by default, locks=local shown"
expect_grep "^$ORFS_ADDR:/data /tmp/m1 orfs .*,locks=remote( |,)" /proc/mounts
mnt locks=local /tmp/m3
expect_grep "^$ORFS_ADDR:/data /tmp/m3 orfs .*,locks=local( |,)" /proc/mounts
umount /tmp/m3
expect_fail mnt locks=nfs /tmp/m3

step "fcntl locks of one client stop another's"
printf 'x%.0s' $(seq 1 4096) > /tmp/m1/f
hold a /tmp/m1/f rw setlk w 0 100
expect_eq "a write lock in another's range" "$(lk /tmp/m2/f rw setlk w 50 10)" EAGAIN
expect_eq "a read lock in another's write lock" "$(lk /tmp/m2/f r setlk r 99 1)" EAGAIN
expect_eq "a lock next to it" "$(lk /tmp/m2/f rw setlk w 100 100)" ok
expect_eq "F_GETLK names it (no pid of ours)" "$(lk /tmp/m2/f r getlk r 0 10)" "w 0 100 0"
expect_eq "F_GETLK past it" "$(lk /tmp/m2/f r getlk w 100 0)" "u 100 0 0"
expect_eq "the same client, another process" "$(lk /tmp/m1/f rw setlk w 0 1)" EAGAIN
release a
expect_eq "released when its holder closed" "$(lk /tmp/m2/f rw setlk w 0 100)" ok

step "read locks are shared, a writer waits for both"
hold r1 /tmp/m1/f r setlk r 0 0
hold r2 /tmp/m2/f r setlk r 0 0
expect_eq "write lock with two readers" "$(lk /tmp/m2/f w setlk w 10 1)" EAGAIN
release r1
release r2
expect_eq "write lock after them" "$(lk /tmp/m2/f w setlk w 10 1)" ok

step "F_SETLKW waits for the other client's unlock, then has the lock"
hold a /tmp/m1/f rw setlk w 0 0
start=$SECONDS
(sleep 2; touch /tmp/rel-a) &
expect_eq "F_SETLKW" "$(lk /tmp/m2/f rw setlkw w 1000 1)" ok
wait "${pids[a]}"
((SECONDS - start >= 2)) || fail "F_SETLKW returned before the holder let go"

step "a waiter has a freed lock at once: the server holds its request"
# Each time another client holds the lock for 2 s while this one waits
# (by then a polling waiter asks only every 0.5 s); the time from the
# holder's unlock to the waiter's lock is printed, and must be short.
# fcntl() locks four times, then flock() (which the server holds without
# a deadlock check) three times.
for how in fcntl:4 flock:3; do
	ms=$(timeout 60 python3 "$(dirname "$0")/lock-handoff.py" /tmp/m1/f /tmp/m2/f \
		${how#*:} ${how%:*}) ||
		fail "the ${how%:*} handoffs did not end"
	echo "${how%:*}: ms from the unlock to the waiter's lock: $ms"
	for m in $ms; do
		((${m%.*} < $(slow 250))) || fail "a ${how%:*} waiter had the lock $m ms after it was freed: $ms"
	done
done

step "a deadlock across clients, and on one: EDEADLK to the lock that closes it"
# Each holds a byte, then waits for the other's: the second wait would
# never end.
for m in /tmp/m2 /tmp/m1; do
	rm -f /tmp/rel-a.then /tmp/rel-b.then
	export LK_THEN=0:1
	hold b $m/f rw setlk w 1 1
	export LK_THEN=1:1
	hold a /tmp/m1/f rw setlk w 0 1
	unset LK_THEN
	touch /tmp/rel-a.then
	# a asks, and asks again (10 ms, then further apart) while b holds it.
	sleep 1
	grep -q 'then' /tmp/out-a && fail "a did not wait for b's byte"
	touch /tmp/rel-b.then
	wait_until 50 grep -q 'then' /tmp/out-b || fail "b's wait for a's byte, which waits for b's, did not end"
	expect_eq "b's wait, $m" "$(grep 'then' /tmp/out-b)" "then EDEADLK"
	release b
	# b's close let its byte go: a's wait ends with it.
	wait_until 50 grep -q 'then' /tmp/out-a || fail "a did not get b's byte"
	expect_eq "a's wait, $m" "$(grep 'then' /tmp/out-a)" "then ok"
	release a
done
# stopped_wait VAR END: a holds byte 0 and waits for b's byte 1, in a way
# that lk.py's VAR sets up and the function END stops; then b waits for
# a's byte 0, and must go on waiting (not EDEADLK) until a lets go.
stopped_wait() {
	rm -f /tmp/rel-a.then /tmp/rel-b.then
	export LK_THEN=0:1
	hold b /tmp/m2/f rw setlk w 1 1
	export LK_THEN=1:1 "$1"=1
	hold a /tmp/m1/f rw setlk w 0 1
	unset LK_THEN "$1"
	touch /tmp/rel-a.then
	"$2"
	touch /tmp/rel-b.then
	sleep 0.5
	grep -q 'then' /tmp/out-b && fail "b's wait for a's byte ended at once ($2): $(grep 'then' /tmp/out-b)"
	release a
	wait_until 50 grep -q 'then' /tmp/out-b || fail "b did not get a's byte once a let go ($2)"
	expect_eq "b's wait, once a let go ($2)" "$(grep 'then' /tmp/out-b)" "then ok"
	release b
}
# A waiter that a signal stops says so: the lock that would have closed a
# chain through it is waited for (before, EDEADLK for the next 2 s).
signalled() {
	wait_until 50 grep -q 'then' /tmp/out-a || fail "a's wait was not cut short by its signal"
	expect_eq "a's wait, stopped by a signal" "$(grep 'then' /tmp/out-a)" "then gave up"
}
stopped_wait LK_THEN_ALARM signalled
# A waiter killed while it waits has a worker say so, not its own call
# (which the kill ends): its owner may live on (here a child that shares
# its parent's files, so its locks), and a lock that would close a chain
# through its old wait is waited for, not EDEADLK (before, for 2 s).
killed() {
	local waiter

	wait_until 50 grep -q "^waiter [0-9]" /tmp/out-a || fail "no waiter: $(cat /tmp/out-a)"
	waiter=$(sed -n 's/^waiter \([0-9]*\)$/\1/p' /tmp/out-a)
	sleep 1
	grep -q "waiter gone" /tmp/out-a && fail "the waiter did not wait: $(cat /tmp/out-a)"
	kill -9 "$waiter"
	wait_until 50 grep -q "waiter gone" /tmp/out-a || fail "the killed waiter did not end"
	sleep 0.3
}
stopped_wait LK_THEN_CLONE killed

step "a holder killed: its locks go"
hold k /tmp/m1/f rw setlk w 0 0
expect_eq "while it lives" "$(lk /tmp/m2/f rw setlk w 5 5)" EAGAIN
kill -9 "${pids[k]}"
wait "${pids[k]}" 2>/dev/null || true
# A dying process's unlock is sent by a worker: soon, not at once.
free_now() { [ "$(lk /tmp/m2/f rw setlk w 5 5)" = ok ]; }
wait_until 50 free_now || fail "the lock of a killed holder is still held"

step "a waiter killed in its request the server holds: the connection stays"
# Nearly all of a waiter's time is spent in a LOCK the server holds. Killed
# there, it waits the answer out (a fraction of a second) rather than cut
# the connection its mount's other requests share; nothing of it stays
# locked. Three times, a second apart from its start.
hold k /tmp/m1/f rw setlk w 0 0
cut=$(dmesg | grep -c "timed out or was killed: disconnecting" || true)
for _ in 1 2 3; do
	python3 /tmp/lk.py /tmp/m2/f rw setlkw w 0 1 > /tmp/out-kw 2>&1 &
	kw=$!
	sleep 1
	kill -9 $kw
	wait $kw 2>/dev/null || true
done
expect_eq "connections cut by the killed waiters" \
	"$(dmesg | grep -c "timed out or was killed: disconnecting" || true)" "$cut"
release k
expect_eq "the lock, after its holder and the killed waiters" "$(lk /tmp/m1/f rw setlk w 0 1)" ok

step "OFD locks and flock() across clients, and as a user"
hold o /tmp/m1/f rw ofd w 0 10
expect_eq "OFD write lock" "$(lk /tmp/m2/f rw ofd w 5 1)" EAGAIN
expect_eq "POSIX lock against it" "$(lk /tmp/m2/f rw setlk r 0 1)" EAGAIN
release o
hold fl /tmp/m1/f r flock w 0 0
expect_eq "flock() of another client" "$(lk /tmp/m2/f r flock r 0 0)" EAGAIN
release fl
expect_eq "flock() after it" "$(lk /tmp/m2/f r flock w 0 0)" ok
mkdir /tmp/m1/d
hold dl /tmp/m1/d r flock w 0 0
expect_eq "flock() of a directory" "$(lk /tmp/m2/d r flock w 0 0)" EAGAIN
release dl
expect_eq "flock() of a directory after it" "$(lk -u 1000 /tmp/m2/d r flock w 0 0)" ok
touch /tmp/m1/uf
chown 1000:1000 /tmp/m1/uf
hold u -u 1000 /tmp/m1/uf rw setlk w 0 0
expect_eq "a user's lock stops root's" "$(lk /tmp/m2/uf rw setlk w 0 1)" EAGAIN
release u
expect_eq "a user's lock" "$(lk -u 1000 /tmp/m2/uf rw setlk w 0 1)" ok

step "no leases: another client could not break them"
python3 - <<'EOF' || fail "F_SETLEASE"
import errno, fcntl, os, sys
fd = os.open("/tmp/m1/f", os.O_RDONLY)
try:
    fcntl.fcntl(fd, 1024, fcntl.F_RDLCK)	# F_SETLEASE
    sys.exit("a read lease was granted")
except OSError as e:
    if e.errno != errno.EINVAL:
        raise
EOF

step "taking a lock shows what another client wrote under it"
# One process, a file open on each mount: m2 keeps its pages and (60 s)
# attributes until it takes a lock.
printf 'old!' > /tmp/m1/c
python3 - <<'EOF' || fail "coherence under locks"
import fcntl, os, sys
m1 = os.open("/tmp/m1/c", os.O_RDWR)
m2 = os.open("/tmp/m2/c", os.O_RDWR)
def check(what, got, want):
    if got != want:
        sys.exit("%s: got %r, want %r" % (what, got, want))
check("m2 first", os.pread(m2, 4, 0), b"old!")
fcntl.lockf(m1, fcntl.LOCK_EX)
os.pwrite(m1, b"new!", 0)
fcntl.lockf(m1, fcntl.LOCK_UN)
check("m2 without a lock", os.pread(m2, 4, 0), b"old!")
fcntl.lockf(m2, fcntl.LOCK_EX)
check("m2 under a lock", os.pread(m2, 4, 0), b"new!")
EOF

step "a counter in a file, incremented under F_SETLKW by two processes on each client"
# Mutual exclusion, waiters woken by another client's unlock, and each
# holder reading what the last one wrote back: 4 x 25 increments.
printf '\0\0\0\0\0\0\0\0' > /tmp/m1/counter
cat > /tmp/inc.py <<'EOF'
import fcntl, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDWR)
for i in range(int(sys.argv[2])):
    fcntl.lockf(fd, fcntl.LOCK_EX)
    n, = struct.unpack("<q", os.pread(fd, 8, 0))
    os.pwrite(fd, struct.pack("<q", n + 1), 0)
    fcntl.lockf(fd, fcntl.LOCK_UN)
EOF
start=$SECONDS
incs=()
for m in m1 m2 m1 m2; do
	python3 /tmp/inc.py /tmp/$m/counter 25 &
	incs+=($!)
done
for p in "${incs[@]}"; do wait "$p" || fail "an incrementer failed"; done
echo "100 increments in $((SECONDS - start)) s"
expect_eq "the counter, read on the server" \
	"$(python3 -c 'import struct; print(struct.unpack("<q", open("/tmp/lkexp/counter", "rb").read())[0])')" 100

step "locks=local: not seen by other clients"
mnt locks=local /tmp/m3
hold a /tmp/m1/f rw setlk w 0 0
expect_eq "a local-only lock" "$(lk /tmp/m3/f rw setlk w 0 1)" ok
release a
umount /tmp/m3

step "figures (printed, not checked): a lock and an unlock, and the same on tmpfs"
python3 - <<'PYEOF'
import fcntl, os, time
for name, path in (("orfs", "/tmp/m1/f"), ("tmpfs", "/tmp/lkexp/f")):
    fd = os.open(path, os.O_RDWR)
    t = time.perf_counter()
    for i in range(200):
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, i)
        fcntl.lockf(fd, fcntl.LOCK_UN, 1, i)
    us = (time.perf_counter() - t) / 200 * 1e6
    os.close(fd)
    print("%s: lock + unlock %.0f us" % (name, us))
PYEOF

echo ok
