#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# ORFS when the server goes: killed and restarted during verified runs
# (hard mount, fio never sees it), O_DIRECT through mappings of the same
# mount across restarts, a caught signal that neither ends a hard mount's
# call nor hurries its tries, a hung server (SIGSTOP) noticed by requests
# and by keep-alive on an idle mount, a soft mount's EIO, umount -f.
# lanes: check=6.12/siw all=*
# timeout: 420
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/guest/common/orfs.sh
. "$(dirname "$0")/common/orfs.sh"

step "hard mount: the server is killed and restarted during a verified run; fio never sees it"
mnt -o timeo=20
fio_restarts restart 48 2
dmesg | grep -E 'orfs: data: .*(reconnected|not responding)' | tail -n 4
expect_grep 'orfs: data: reconnected to' <(dmesg)
ep_stats | grep -E '^group_(reconnects|resent)' | tee /tmp/out
expect_grep '^group_reconnects [1-9]' /tmp/out
expect_grep '^group_resent [1-9]' /tmp/out
umnt

step "O_DIRECT from and into shared mappings of files of the same mount, across server restarts"
# The pages of the buffers are not cached: pinning them faults them in
# through read-ahead on the very sessions that carry the O_DIRECT
# requests, while reconnections replace their connections. 6.12 (not
# 6.1) will not pin a shared file mapping for long to write into it: the
# reads into one are pinned for their I/O only (regcache's "uncacheable").
# The writes are O_DSYNC: an unstable O_DIRECT write a restart loses
# fails, by design, with EIO.
rcstats="/sys/kernel/debug/regcache/$(rc_name)/stats"
u0=$(awk '$1 == "uncacheable" { print $2 }' "$rcstats")
mnt -o timeo=20
dd if=/dev/urandom of=$exp/msrc bs=1M count=2 status=none
dd if=/dev/zero of=$exp/mbuf bs=1M count=2 status=none
python3 - /tmp/mnt /tmp/mmdio.stop > /tmp/mmdio.out 2>&1 <<'PY' &
import mmap, os, sys
d, stop = sys.argv[1], sys.argv[2]
size, chunk = 2 << 20, 256 << 10
ref = open(d + '/msrc', 'rb').read()
rounds = 0
while not os.path.exists(stop) or rounds < 2:
    with open('/proc/sys/vm/drop_caches', 'w') as f:
        f.write('3')
    sfd = os.open(d + '/msrc', os.O_RDONLY)
    bfd = os.open(d + '/mbuf', os.O_RDWR)
    dfd = os.open(d + '/mdst', os.O_RDWR | os.O_CREAT | os.O_DIRECT | os.O_DSYNC, 0o644)
    src = mmap.mmap(sfd, size, prot=mmap.PROT_READ)
    buf = mmap.mmap(bfd, size)
    sv, bv = memoryview(src), memoryview(buf)
    for off in range(0, size, chunk):
        n = os.pwrite(dfd, sv[off:off + chunk], off)
        assert n == chunk, ('write', off, n)
    for off in range(0, size, chunk):
        n = os.preadv(dfd, [bv[off:off + chunk]], off)
        assert n == chunk, ('read', off, n)
    assert bytes(bv) == ref, 'the mapping read into differs'
    buf.flush()
    sv.release()
    bv.release()
    src.close()
    buf.close()
    for fd in (sfd, bfd, dfd):
        os.close(fd)
    rounds += 1
print('rounds', rounds)
PY
pid=$!
sleep 3
restart_server
sleep 2
kill -0 $pid 2>/dev/null || { cat /tmp/mmdio.out; fail "the mapped O_DIRECT copy ended before the second restart"; }
restart_server
sleep 2
touch /tmp/mmdio.stop
wait $pid || { cat /tmp/mmdio.out; fail "O_DIRECT through mappings of the mount"; }
cat /tmp/mmdio.out
expect_grep '^rounds ([2-9]|[1-9][0-9]+)$' /tmp/mmdio.out
cmp $exp/msrc $exp/mdst
cmp $exp/msrc $exp/mbuf
u1=$(awk '$1 == "uncacheable" { print $2 }' "$rcstats")
echo "reads pinned for their I/O only: $((u1 - u0))"
# 6.12 refuses a long-term write pin of such a mapping; 6.1 makes it.
if ((k612)); then
	[ $((u1 - u0)) -ge 16 ] || fail "only $((u1 - u0)) reads into a mapped file were pinned uncached"
fi
rm -f /tmp/mnt/msrc /tmp/mnt/mbuf /tmp/mnt/mdst /tmp/mmdio.stop
umnt

step "hard mount, dead server: a caught signal neither ends the call nor hurries its tries"
mnt -o timeo=20
kill_server
# A name never looked up: the stat must ask the server. The program catches
# SIGUSR1, so the signal stays pending, not fatal, while the call waits.
python3 - > /tmp/sig.out 2>&1 <<'PY' &
import errno, os, signal
signal.signal(signal.SIGUSR1, lambda s, f: print("caught", flush=True))
print("waiting", flush=True)
try:
    os.stat("/tmp/mnt/sig-new")
    print("found")
except OSError as e:
    print(errno.errorcode[e.errno])
PY
sig_pid=$!
wait_until 100 grep -q waiting /tmp/sig.out || fail "the program did not start"
sleep 1
kill -USR1 $sig_pid
sleep 4
ended $sig_pid && { cat /tmp/sig.out; fail "a caught signal ended a call on a hard mount"; }
start_server -s $state -e data=$exp,no_root_squash
wait_until 200 ended $sig_pid || fail "the call outlived the server's return"
cat /tmp/sig.out
expect_grep '^ENOENT$' /tmp/sig.out
expect_grep '^caught$' /tmp/sig.out
# Tries back off (0.1 s doubling to 4 s): a handful in these 5 s; a sleep
# that the pending signal cut short made them hundreds (656 measured).
fails=$(ep_max group_connect_failures)
echo "$fails failed reconnection attempts in about 5 s"
[ "$fails" -ge 1 ] || fail "no reconnection attempt failed while the server was dead"
[ "$fails" -le 20 ] || fail "$fails reconnection attempts in about 5 s: the backoff did not hold"
umnt

step "a server that hangs (SIGSTOP): the request times out, the hard mount reconnects once it answers"
mnt -o timeo=20
echo before > /tmp/mnt/hang
kill -STOP "$ORFS_SERVER_PID"
dd if=/tmp/mnt/hang of=/tmp/hang.out bs=4k iflag=direct status=none &
dd_pid=$!
sleep 5
kill -0 $dd_pid || fail "the read did not wait for the hung server"
kill -CONT "$ORFS_SERVER_PID"
wait $dd_pid || fail "the read failed after the server came back"
expect_eq "read after the hang" "$(cat /tmp/hang.out)" before
expect_grep 'knet: (no answer within 2000 ms|request [0-9]+ timed out)' <(dmesg)
umnt

step "an idle mount notices a server that stopped answering (keep-alive) and recovers"
mnt -o timeo=20
ls /tmp/mnt > /dev/null
no_answers() { dmesg | grep -c 'knet: no answer within 2000 ms' || true; }
# shellcheck disable=SC2034 # read by the eval below
n0=$(no_answers)
kill -STOP "$ORFS_SERVER_PID"
# The server is resumed before any verdict, so that a failure leaves it running.
noticed=0
wait_until 80 eval '[ "$(no_answers)" -gt "$n0" ]' && noticed=1
kill -CONT "$ORFS_SERVER_PID"
[ $noticed = 1 ] || fail "an idle mount did not notice the hung server"
ls /tmp/mnt > /dev/null || fail "the mount did not recover"
ep_stats | grep '^keepalives'
umnt

step "soft mount: a dead server gives EIO after timeo x retrans"
mnt -o soft,timeo=10,retrans=2
echo data > /tmp/mnt/soft
f0=$(ms_sum 4) e0=$(ms_sum 3)
kill_server
t0=$(date +%s)
set +e
stat /tmp/mnt/soft-new > /tmp/out 2>&1; rc=$?
set -e
cat /tmp/out
[ "$rc" -ne 0 ] || fail "stat worked with the server dead"
expect_grep 'Input/output error' /tmp/out
# The call that gave up is counted as a failure, not as the server's error.
[ "$(ms_sum 4)" -gt "$f0" ] || fail "no failure counted"
expect_eq "server errors counted with the server dead" "$(ms_sum 3)" "$e0"
echo "gave up after $(($(date +%s) - t0)) s"
umount -f /tmp/mnt || umount -l /tmp/mnt

step "hard mount, dead server: umount -f ends the waiting calls"
start_server -s $state -e data=$exp,no_root_squash
mnt
kill_server
stat /tmp/mnt/hard-new > /tmp/out 2>&1 &
st_pid=$!
sleep 2
ended $st_pid && fail "a hard mount gave up"
umount -f /tmp/mnt || umount -l /tmp/mnt
wait_until 200 ended $st_pid || fail "a call outlived umount -f"
grep -q ' /tmp/mnt ' /proc/mounts && fail "still mounted"
echo ok
