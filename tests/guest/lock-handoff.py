# SPDX-License-Identifier: GPL-2.0-only
# lock-handoff.py A B N HOW [HOLD_S]: N times, a process holds a write lock
# of byte 0 of file A for HOLD_S seconds (default 2) while another waits
# for it through file B (the same file, on another mount or the same);
# prints the milliseconds from each unlock to the waiter's lock, on one
# line. HOW: fcntl (F_SETLKW) or flock.
import fcntl, os, struct, sys, time

a, b, n, how = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
hold_s = float(sys.argv[5]) if len(sys.argv) > 5 else 2.0


def lock(fd, on):
    if how == "flock":
        fcntl.flock(fd, fcntl.LOCK_EX if on else fcntl.LOCK_UN)
    else:
        fcntl.fcntl(fd, fcntl.F_SETLKW if on else fcntl.F_SETLK,
                    struct.pack("hhqqi", fcntl.F_WRLCK if on else fcntl.F_UNLCK, 0, 0, 1, 0))


r1, w1 = os.pipe()
r2, w2 = os.pipe()
if os.fork() == 0:	# the holder
    fd = os.open(a, os.O_RDWR)
    for i in range(n):
        lock(fd, True)
        os.write(w1, b"h")
        time.sleep(hold_s)
        t = time.monotonic()
        lock(fd, False)
        os.write(w1, struct.pack("d", t))
        os.read(r2, 1)
    os._exit(0)
fd = os.open(b, os.O_RDWR)
out = []
for i in range(n):
    os.read(r1, 1)
    lock(fd, True)
    got = time.monotonic()
    t = struct.unpack("d", os.read(r1, 8))[0]
    out.append("%.1f" % ((got - t) * 1000))
    lock(fd, False)
    os.write(w2, b"n")
if os.wait()[1]:
    sys.exit("the holder failed")
print(" ".join(out))
