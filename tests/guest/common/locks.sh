# SPDX-License-Identifier: GPL-2.0-only
# What orfs-locks.sh and orfs-locks-recovery.sh share (sourced after
# lib.sh): a tmpfs export, the server (lease 8 s), two mounts of it
# (/tmp/m1, /tmp/m2: two clients to the server), and the lock helpers
# lk, hold and release.
# shellcheck shell=bash
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

