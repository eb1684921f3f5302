#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# ORFS locks across clients: two mounts of one export are two clients to
# the server. fcntl() locks (POSIX and OFD) and flock() of one are seen by
# the other: conflicts, F_GETLK, a blocked F_SETLKW that gets the lock when
# the holder lets go (within a round trip or so, fcntl() and flock(): the
# server holds the waiter's request), release on close and on a killed holder, a lock as a
# page-cache coherence point, locks=local, a client that vanishes (its
# locks go after the server's lease), and a server restart (the locks are
# taken back in the grace period; with none, one is lost, said so, and its
# owner's write() and stores through a mapping fail until it unlocks), a
# holder killed while the server is away (it does not wait for it), and a
# client cut off for longer than the lease while another took its lock
# (told when it comes back: its owner's I/O fails until it unlocks), and
# a write-back under a lock under way when the server went away, the lock
# lost in the restart (not sent again over the next holder's data), a
# waiter killed in its request the server holds (the connection stays),
# and a killed waiter whose owner lives on (its wait ends: no EDEADLK).
# timeout: 480
. "$(dirname "$0")/lib.sh"
exp=/tmp/lkexp
state=/tmp/orfs-state
load_suite
mkdir -p $exp /tmp/m1 /tmp/m2 /tmp/m3
mount -t tmpfs tmpfs $exp
on_exit "umount $exp"
chmod 1777 $exp
# Lease 8 s, so that a check "still held" comes within it however slowly
# the guest runs; no grace at the first start (no client had locks).
start_server -s $state -L 8 -G 0 -e data=$exp,no_root_squash
mnt() { mount -t orfs -o "timeo=20${1:+,$1}" "$ORFS_ADDR:/data" "$2"; }
mnt acregmin=60,acregmax=60 /tmp/m1
on_exit "gone_umount /tmp/m1"
mnt acregmin=60,acregmax=60 /tmp/m2
on_exit "gone_umount /tmp/m2; gone_umount /tmp/m3"
# Holders left by a failed check go first: they keep the mounts busy.
declare -A pids=()
on_exit 'pkill -9 -f /tmp/lk.py; ((${#pids[@]} == 0)) || { kill -9 "${pids[@]}"; wait "${pids[@]}"; } 2>/dev/null'

# lk [-u UID] PATH r|w|rw CMD TYPE START LEN [HOLD_FILE]: one lock call.
# CMD setlk, setlkw, getlk, ofd (F_OFD_SETLK), ofdw or flock; TYPE r, w or
# u. Prints "ok", an errno name, or for getlk "TYPE START LEN PID"; with
# HOLD_FILE, prints "held" once it has the lock and keeps the file open
# until HOLD_FILE exists (then, with LK_WRITE=1 in the environment, writes,
# unlocks and writes again, printing "write ok" or "write ERRNO" for each;
# with LK_MMAP=1, the same with a store through a mapping made by a child,
# which shares a flock() lock, printing "store ok" or "store SIGBUS", after
# "early store ..." for a child that mapped the file and stored before
# "held", and stores again at HOLD_FILE; with
# LK_CLOSE=1, closes it and waits to be killed).
cat > /tmp/lk.py <<'EOF'
import errno, fcntl, os, struct, sys, time
args = sys.argv[1:]
if args[0] == "-u":
    uid = int(args[1]); args = args[2:]
    os.setgroups([]); os.setgid(uid); os.setuid(uid)
path, mode, cmd, typ, start, length = args[:6]
hold = args[6] if len(args) > 6 else None
flags = {"r": os.O_RDONLY, "w": os.O_WRONLY, "rw": os.O_RDWR}[mode]
fd = os.open(path, flags)
t = {"r": fcntl.F_RDLCK, "w": fcntl.F_WRLCK, "u": fcntl.F_UNLCK}[typ]
c = {"setlk": fcntl.F_SETLK, "setlkw": fcntl.F_SETLKW, "getlk": fcntl.F_GETLK,
     "ofd": fcntl.F_OFD_SETLK, "ofdw": fcntl.F_OFD_SETLKW}.get(cmd)
fl = struct.pack("hhqqi", t, 0, int(start), int(length), 0)
try:
    if cmd == "flock":
        fcntl.flock(fd, {"r": fcntl.LOCK_SH, "w": fcntl.LOCK_EX, "u": fcntl.LOCK_UN}[typ] |
                    (0 if hold else fcntl.LOCK_NB))
        out = "ok"
    else:
        r = fcntl.fcntl(fd, c, fl)
        if cmd == "getlk":
            t2, _, s2, l2, p2 = struct.unpack("hhqqi", r)
            out = "%s %d %d %d" % ({fcntl.F_RDLCK: "r", fcntl.F_WRLCK: "w",
                                    fcntl.F_UNLCK: "u"}[t2], s2, l2, p2)
        else:
            out = "ok"
except OSError as e:
    out = "EAGAIN" if e.errno == errno.EAGAIN else errno.errorcode[e.errno]
    hold = None
print(out, flush=True)
def status(st):
    import signal
    return ("SIGBUS" if os.WIFSIGNALED(st) and os.WTERMSIG(st) == signal.SIGBUS
            else "ok" if st == 0 else "status %d" % st)
early = None
if hold and os.environ.get("LK_MMAP"):	# a child stores through a mapping now, and at HOLD_FILE
    import mmap
    r, w = os.pipe()
    early = os.fork()
    if early == 0:
        # Locked in memory: reclaim must not unmap the page (only ORFS may).
        import ctypes
        if ctypes.CDLL(None, use_errno=True).mlockall(3):	# MCL_CURRENT | MCL_FUTURE
            os._exit(3)
        m = mmap.mmap(fd, 2, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        m[1] = ord("e")
        os.write(w, b"1")
        while not os.path.exists(hold):
            time.sleep(0.05)
        m[1] = ord("E")
        os._exit(0)
    os.read(r, 1)
if hold and os.environ.get("LK_DIRTY"):	# a buffered write under the lock, left dirty
    os.pwrite(fd, os.environ["LK_DIRTY"].encode(), 1)
if hold:
    print("held", flush=True)
    waiter = 0
    if os.environ.get("LK_THEN_CLONE"):	# the wait below is a child's sharing the fd table
        import ctypes
        # clone(CLONE_FILES | SIGCHLD): another process, the same lock owner.
        waiter = ctypes.CDLL(None, use_errno=True).syscall(56, 0x400 | 17, None, None, None, None)
        if waiter < 0:
            raise OSError(ctypes.get_errno(), "clone")
        if waiter:
            print("waiter %d" % waiter, flush=True)
            os.waitpid(waiter, 0)
            print("waiter gone", flush=True)
    if os.environ.get("LK_THEN") and not waiter:	# at HOLD_FILE.then, wait for START:LEN too
        while not os.path.exists(hold + ".then"):
            time.sleep(0.05)
        s, n = os.environ["LK_THEN"].split(":")
        if os.environ.get("LK_THEN_ALARM"):	# a signal stops that wait after so many seconds
            import signal
            def alarm(signum, frame):
                raise TimeoutError()
            signal.signal(signal.SIGALRM, alarm)
            signal.alarm(int(os.environ["LK_THEN_ALARM"]))
        try:
            fcntl.fcntl(fd, fcntl.F_SETLKW, struct.pack("hhqqi", fcntl.F_WRLCK, 0, int(s), int(n), 0))
            print("then ok", flush=True)
        except TimeoutError:
            print("then gave up", flush=True)
        except OSError as e:
            # Python names errno 35 EDEADLOCK, its other name.
            print("then " + ("EDEADLK" if e.errno == errno.EDEADLK else errno.errorcode[e.errno]),
                  flush=True)
        if os.environ.get("LK_THEN_CLONE"):
            os._exit(0)
    while not os.path.exists(hold):
        time.sleep(0.05)
    if os.environ.get("LK_WRITE"):	# write, unlock, write again: each result
        for i in range(2):
            try:
                os.pwrite(fd, b"w", 0)
                print("write ok", flush=True)
            except OSError as e:
                print("write " + errno.errorcode[e.errno], flush=True)
            if i == 0:
                fcntl.fcntl(fd, fcntl.F_SETLK, struct.pack("hhqqi", fcntl.F_UNLCK, 0, 0, 0, 0))
        if os.environ.get("LK_DIRTY"):	# what became of the write under the lock
            try:
                os.fsync(fd)
                print("fsync ok", flush=True)
            except OSError as e:
                print("fsync " + errno.errorcode[e.errno], flush=True)
    if os.environ.get("LK_MMAP"):	# the same with a store through a new mapping, in a child
        import mmap
        print("early store " + status(os.waitpid(early, 0)[1]), flush=True)
        for i in range(2):
            pid = os.fork()
            if pid == 0:
                m = mmap.mmap(fd, 1, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
                m[0] = ord("M")
                os._exit(0)
            print("store " + status(os.waitpid(pid, 0)[1]), flush=True)
            if i == 0:
                fcntl.flock(fd, fcntl.LOCK_UN)
    if os.environ.get("LK_CLOSE"):	# close (the unlock) now, then wait to be killed
        os.close(fd)
        print("closed", flush=True)
        time.sleep(3600)
EOF
lk() { python3 /tmp/lk.py "$@"; }
# free_lock: m2 can take (and lets go) f's first byte
free_lock() { [ "$(lk /tmp/m2/f rw setlk w 0 1)" = ok ]; }
# hold NAME ARGS...: lk ARGS... in the background holding until
# release NAME; waits until it has the lock
hold() {
	local n=$1
	shift
	rm -f "/tmp/rel-$n" "/tmp/out-$n"
	python3 /tmp/lk.py "$@" "/tmp/rel-$n" > "/tmp/out-$n" 2>&1 &
	pids[$n]=$!
	wait_until 100 grep -q held "/tmp/out-$n" || { cat "/tmp/out-$n"; fail "$n: no lock held"; }
}
release() { touch "/tmp/rel-$1"; wait "${pids[$1]}"; }

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
		((${m%.*} < 250)) || fail "a ${how%:*} waiter had the lock $m ms after it was freed: $ms"
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

step "a client that vanishes: its locks go after the lease (8 s)"
mnt "" /tmp/m3
hold v /tmp/m3/f rw setlk w 0 0
# umount -f cuts the mount's connections (the open file keeps it busy).
umount -f /tmp/m3 2>/dev/null || true
gone=$SECONDS
expect_eq "at once" "$(lk /tmp/m2/f rw setlk w 0 1)" EAGAIN
wait_until 300 free_lock || fail "the vanished client's lock outlived the lease"
echo "the vanished client's lock went $((SECONDS - gone)) s after it"
release v
wait_until 50 umount /tmp/m3 || fail "umount of the cut mount"

step "server restart: locks taken back in the grace period (5 s)"
hold a /tmp/m1/f rw setlk w 0 100
kill_server
before=${EPOCHREALTIME/./}
start_server -s $state -L 3 -G 5 -e data=$exp,no_root_squash
start=${EPOCHREALTIME/./}
# m2's F_SETLK waits out the grace period, then finds m1's lock again. The
# period begins between the two times taken around start_server (the
# server opens first, which a debug kernel makes slow; start_server looks
# for it every 0.1 s), and lasts 5 to 6 s; the client polls.
expect_eq "another client's lock after the restart" "$(lk /tmp/m2/f rw setlk w 0 1)" EAGAIN
now=${EPOCHREALTIME/./}
ms=$(((now - start) / 1000)) from_before=$(((now - before) / 1000))
echo "answered after $ms ms ($from_before ms after the server was started)"
((from_before >= 5000)) || fail "a lock was answered in the grace period, after $from_before ms"
((ms <= 9000)) || fail "a lock was answered $ms ms after the restart, long after the grace period"
expect_grep "server $ORFS_ADDR restarted" <(dmesg)
dmesg | grep -q "is lost" && fail "a lock was lost in a restart with a grace period"
release a
expect_eq "after its holder let go" "$(lk /tmp/m2/f rw setlk w 0 1)" ok

step "server restart without a grace period: a lock taken first is lost, said, and its owner's I/O fails until it unlocks"
export LK_WRITE=1
hold a /tmp/m1/f rw setlk w 0 100
unset LK_WRITE
echo mapped > /tmp/m1/g
export LK_MMAP=1
hold b /tmp/m1/g rw flock w 0 0
unset LK_MMAP
kill_server
start_server -s $state -L 3 -G 0 -e data=$exp,no_root_squash
expect_eq "another client first" "$(lk /tmp/m2/f rw setlk w 0 1)" ok
wait_until 100 sh -c 'dmesg | grep -q "is lost"' || fail "the lost lock is not in the log"
# Another process of the same client is no owner of it: its I/O goes.
expect_eq "another process's read of the file" "$(cat /tmp/m1/f > /dev/null && echo read)" read
release a
expect_eq "the holder's write, then its write after its unlock" "$(grep write /tmp/out-a | tr '\n' ' ')" "write EIO write ok "
# A flock() lock, also lost (no reclaim is taken without a grace period).
release b
# Its first child mapped the file and stored before the loss: its next
# store faults too.
expect_eq "stores by the flock() holder's children: the first's second, a new one's, one after the unlock" "$(grep store /tmp/out-b | tr '\n' ' ')" "early store SIGBUS store SIGBUS store ok "
# Its store before the restart ('e') is dropped if it was still dirty when
# the lock was found lost, and a write-back of it under way when the
# server went away is not sent again; one that was over before stays.
grep -qx "M[ae]pped" /tmp/m1/g || fail "what the stores left: $(cat /tmp/m1/g)"
expect_eq "what the stores left, on the server" "$(cat "$exp/g")" "$(cat /tmp/m1/g)"
rm /tmp/m1/g

step "a holder killed while the server is away: it ends within a try (timeo 2 s), its lock stays gone"
hold a /tmp/m1/f rw setlk w 0 0
kill_server
kill -9 "${pids[a]}"
t0=${EPOCHREALTIME/./}
# Its exit's unlock cannot be cut short: a worker sends it, and the exit
# waits one try at most.
wait_until 100 ended "${pids[a]}" || fail "a killed holder waits for a dead server"
echo "the holder ended in $(((${EPOCHREALTIME/./} - t0) / 1000)) ms"
wait "${pids[a]}" 2>/dev/null || true
start_server -s $state -L 3 -G 2 -e data=$exp,no_root_squash
# m1 reclaims nothing for it after the restart, and its unlock goes.
expect_eq "the killed holder's lock after the restart" "$(lk /tmp/m2/f rw setlk w 0 1)" ok

step "a client cut off past the lease, its lock taken meanwhile: told when it comes back, its owner's I/O fails until it unlocks"
# A third client from a second address of the guest (srcaddr=), which the
# administrator takes out of the allow list and puts back (SIGHUP).
conf=/tmp/lk-server.conf
addr2=${ORFS_ADDR%.*}.2
echo "allow ${ORFS_ADDR%.*}.0/24" > $conf
kill_server
# A lease of 8 s: the check that the cut client's lock is still held must
# come within it, however slowly the guest runs.
start_server -s $state -L 8 -G 0 -c $conf -e data=$exp,no_root_squash
ip addr add "$addr2/24" dev "$ORFS_DEV"
on_exit "ip addr del $addr2/24 dev $ORFS_DEV"
# rxe takes the address into its GID table a moment later.
wait_until 50 mnt "srcaddr=$addr2" /tmp/m3 || fail "no mount from $addr2"
expect_grep "srcaddr=$addr2" /proc/mounts
# Its holder writes a byte under the lock, left dirty in its page cache.
export LK_WRITE=1 LK_DIRTY=C
hold c /tmp/m3/f rw setlk w 0 2
unset LK_WRITE LK_DIRTY
expect_grep "$addr2 connected to export" "$ORFS_SERVER_LOG"
echo "allow $ORFS_ADDR/32" > $conf
kill -HUP "$ORFS_SERVER_PID"
wait_until 50 grep -q "$addr2: its address is no longer allowed" "$ORFS_SERVER_LOG" ||
	fail "the reload did not cut the client taken out of the allow list"
cut=$SECONDS
expect_eq "another client, within the lease" "$(lk /tmp/m2/f rw setlk w 0 1)" EAGAIN
# Once the lease has passed, the server lets the lock go.
wait_until 300 free_lock || fail "the cut client's lock outlived the lease"
echo "the cut client's lock went $((SECONDS - cut)) s after the check"
hold d /tmp/m2/f rw setlk w 0 2
# The new holder's client writes the same byte, to the server.
printf D | dd of=/tmp/m2/f bs=1 seek=1 conv=notrunc,fsync status=none
grep -q "$ORFS_ADDR: its address is no longer allowed" "$ORFS_SERVER_LOG" &&
	fail "a reload cut a client still allowed"
echo "allow ${ORFS_ADDR%.*}.0/24" > $conf
kill -HUP "$ORFS_SERVER_PID"
# m3 probes its connection every second while it holds a lock.
wait_until 100 sh -c 'dmesg | grep -q "is lost (the server dropped it)"' ||
	fail "the client that came back was not told its lock is gone"
expect_grep "cut off for longer than the server's lease" <(dmesg)
expect_eq "the other client's lock, held on" "$(lk /tmp/m1/f rw setlk w 0 1)" EAGAIN
# What it wrote under the lock is not written over the new holder's
# byte: dropped if still dirty, refused by the server if write-back sent
# it meanwhile (until the client says it saw the drop); its fsync() says
# so.
release c
expect_eq "the cut holder's write, then its write after its unlock" "$(grep write /tmp/out-c | tr '\n' ' ')" "write EIO write ok "
expect_eq "the cut holder's fsync()" "$(grep fsync /tmp/out-c)" "fsync EIO"
expect_eq "the server's first two bytes: the cut holder's after its unlock, the new holder's" "$(head -c 2 "$exp/f")" wD
expect_eq "the same, read on the client that was cut" "$(head -c 2 /tmp/m3/f)" wD
release d
expect_eq "the lock, free again, from the client that was cut" "$(lk /tmp/m3/f rw setlk w 0 1)" ok
expect_eq "times the client was told" "$(dmesg | grep -c "cut off for longer than the server's lease")" 1
umount /tmp/m3

step "a write-back under a lock, under way when the server went away, its reclaim refused: not sent again over the next holder's byte"
# The holder's client (from the second address) writes a byte back under
# its lock to a server that stops answering, then dies. The server comes
# back without a grace period and lets that client in only once another
# took the lock and wrote the byte. No periodic write-back meanwhile: the
# byte must still be dirty when the server stops.
wbc=$(cat /proc/sys/vm/dirty_writeback_centisecs)
on_exit "echo $wbc > /proc/sys/vm/dirty_writeback_centisecs"
echo 0 > /proc/sys/vm/dirty_writeback_centisecs
mnt "srcaddr=$addr2" /tmp/m3
export LK_WRITE=1 LK_DIRTY=F
hold e /tmp/m3/f rw setlk w 0 2
unset LK_WRITE LK_DIRTY
# Another process opens the file now, and at /tmp/sync-go writes it back.
rm -f /tmp/sync-go
python3 -c '
import errno, os, time
fd = os.open("/tmp/m3/f", os.O_RDONLY)
print("open", flush=True)
while not os.path.exists("/tmp/sync-go"):
    time.sleep(0.05)
try:
    os.fsync(fd); print("fsync ok")
except OSError as e:
    print("fsync " + errno.errorcode[e.errno])' > /tmp/out-sync 2>&1 &
syncer=$!
wait_until 100 grep -q open /tmp/out-sync || fail "the file does not open: $(cat /tmp/out-sync)"
refused=$(dmesg | grep -c "made under a lock found lost, not sent" || true)
# A check that fails while the server is stopped must let it end.
on_exit 'kill -CONT "$ORFS_SERVER_PID" 2>/dev/null'
kill -STOP "$ORFS_SERVER_PID"
touch /tmp/sync-go
sleep 1
ended $syncer && fail "the write-back did not wait for the stopped server: $(cat /tmp/out-sync)"
kill_server
echo "allow $ORFS_ADDR/32" > $conf
start_server -s $state -L 3 -G 0 -c $conf -e data=$exp,no_root_squash
lost=$(dmesg | grep -c "restarted: a lock on inode" || true)
hold g /tmp/m2/f rw setlk w 0 2
printf G | dd of=/tmp/m2/f bs=1 seek=1 conv=notrunc,fsync status=none
echo "allow ${ORFS_ADDR%.*}.0/24" > $conf
kill -HUP "$ORFS_SERVER_PID"
wait_until 150 sh -c "[ \$(dmesg | grep -c 'restarted: a lock on inode') -gt $lost ]" ||
	fail "the client let back in did not find its lock lost"
wait_until 100 ended $syncer || fail "the write-back held for the reclaim does not end"
wait $syncer
echo "$wbc" > /proc/sys/vm/dirty_writeback_centisecs
expect_eq "the fsync() that sent the write-back" "$(grep fsync /tmp/out-sync)" "fsync EIO"
expect_eq "write-backs not sent again" "$(dmesg | grep -c "made under a lock found lost, not sent")" $((refused + 1))
release e
expect_eq "the holder's write, then its write after its unlock" "$(grep write /tmp/out-e | tr '\n' ' ')" "write EIO write ok "
expect_eq "the holder's fsync()" "$(grep fsync /tmp/out-e)" "fsync EIO"
expect_eq "the server's first two bytes: the holder's after its unlock, the new holder's" "$(head -c 2 "$exp/f")" wG
expect_eq "the same, read on the client whose write-back was refused" "$(head -c 2 /tmp/m3/f)" wG
release g
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

step "a dead server: a holder killed and umount -f end, nothing hangs"
hold a /tmp/m1/f rw setlk w 0 0
kill_server
# A lock asked of the dead server waits (hard mount) until it is killed.
python3 /tmp/lk.py /tmp/m1/f rw setlkw w 0 1 > /dev/null 2>&1 &
waiter=$!
sleep 1
ended $waiter && fail "a lock request to a dead server returned"
umount -f /tmp/m1 2>/dev/null || true
kill -9 "${pids[a]}" $waiter
wait_until 100 ended "${pids[a]}" || fail "the holder does not die"
wait_until 100 ended $waiter || fail "the waiter does not die"
wait "${pids[a]}" $waiter 2>/dev/null || true
timeout 20 umount -f /tmp/m1 || fail "umount -f with a dead server"
timeout 20 umount -f /tmp/m2 || fail "umount -f of the other mount"

step "a process killed in the unlock of its close while the server is away: umount ends"
start_server -s $state -L 3 -G 0 -e data=$exp,no_root_squash
mnt "" /tmp/m1
export LK_CLOSE=1
hold c /tmp/m1/f rw setlk w 0 0
unset LK_CLOSE
kill_server
touch /tmp/rel-c
# Its close waits for the server (hard mount) in the unlock, until killed:
# then a worker owns the unlock, and the unmount must not wait for ever.
sleep 1
grep -q closed /tmp/out-c && fail "the close did not wait for the dead server"
kill -9 "${pids[c]}"
wait_until 100 ended "${pids[c]}" || fail "the closer does not die"
wait "${pids[c]}" 2>/dev/null || true
umount -l /tmp/m1 &
um=$!
wait_until 300 ended $um || fail "umount waits for ever for the unlock"
wait $um || fail "umount failed"
expect_grep "unlocks not sent, the server's lease ends them" <(dmesg)
