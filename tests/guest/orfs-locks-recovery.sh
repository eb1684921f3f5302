#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# ORFS locks when a client or the server goes away (the set-up is
# orfs-locks.sh's, tests/guest/common/locks.sh): a client that vanishes
# (its locks go after the server's lease), a server restart (the locks are
# taken back in the grace period; with none, one is lost, said so, and its
# owner's write() and stores through a mapping fail until it unlocks), a
# holder killed while the server is away (it does not wait for it), a
# client cut off for longer than the lease while another took its lock
# (told when it comes back: its owner's I/O fails until it unlocks), a
# write-back under a lock under way when the server went away, the lock
# lost in the restart (not sent again over the next holder's data), and a
# dead server (holders, waiters and unmounts end).
# lanes: check=6.12/rxe all=*/rxe
# timeout: 360
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/guest/common/locks.sh
. "$(dirname "$0")/common/locks.sh"
printf 'x%.0s' $(seq 1 4096) > /tmp/m1/f

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
((ms <= $(slow 9000))) || fail "a lock was answered $ms ms after the restart, long after the grace period"
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
