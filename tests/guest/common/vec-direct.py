# SPDX-License-Identifier: GPL-2.0-only
# vec-direct.py FILE [SAME...]: vectored O_DIRECT on FILE, pwritev and
# preadv of three buffers each (memory the kernel takes as the user's
# iovec, an ITER_IOVEC, not one buffer) at offset 4096: what preadv reads
# is what pwritev wrote, and FILE and each SAME (the server's copy) hold a
# hole, then those bytes.
import mmap
import os
import sys

fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_DIRECT, 0o644)
out = [mmap.mmap(-1, n) for n in (4096, 65536, 8192)]
for b in out:
    b.write(os.urandom(len(b)))
want = b"".join(bytes(b) for b in out)
if os.pwritev(fd, out, 4096) != len(want):
    sys.exit("a short pwritev")
back = [mmap.mmap(-1, n) for n in (8192, 4096, 65536)]
if os.preadv(fd, back, 4096) != len(want):
    sys.exit("a short preadv")
if b"".join(bytes(b) for b in back) != want:
    sys.exit("preadv read other bytes than pwritev wrote")
os.close(fd)
for path in sys.argv[1:]:
    with open(path, "rb") as f:
        if f.read() != bytes(4096) + want:
            sys.exit(f"{path}: other bytes than pwritev wrote")
print("vectored O_DIRECT: %d bytes in three buffers written and read back" % len(want))
