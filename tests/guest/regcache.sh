#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# regcache: user memory moved zero-copy by knet, pinned and cached by
# regcache, checked by data through every change of mapping a process can
# make (munmap/mmap, mremap, mprotect, DONTNEED, fork, exit, two processes
# at the same addresses, an unmap racing the I/O, RLIMIT_MEMLOCK, huge
# pages); the cache's counters; memory pressure (the shrinker); and
# nothing left pinned at the end.
# lanes: check=6.12/rxe,6.1/rxe all=*/rxe
# timeout: 300
. "$(dirname "$0")/lib.sh"
kt() { timeout 120 "$ORFS_BIN/knet-test" -a "$ORFS_ADDR" -n rvol "$@"; }
rt() { timeout 120 "$ORFS_BIN/regcache-test" -a "$ORFS_ADDR" -n rvol "$@"; }
stats="/sys/kernel/debug/regcache/$ORFS_RDMA_DEV/stats"
stat_of() { awk -v k="$1" '$1 == k { print $2 }' "$stats"; }
stat_is() { [ "$(stat_of "$1")" = "$2" ]; }

load_suite
insmod "$ORFS_KMOD/tests/kmod/knet_test.ko"
on_exit "rmmod knet_test"
truncate -s 64M /tmp/rvol
start_server -b rvol=/tmp/rvol

step "user memory of many shapes, every byte checked"
for args in "-b 4096" "-b 65536" "-b 65536 -o 100" "-b 1048576" "-b 1044480 -o 4095" \
	    "-b 65536 -V 4" "-b 262144 -V 5 -o 700" "-b 1048576 -V 16 -o 1" "-b 1536 -o 3000"; do
	for m in user user-nocache; do
		kt -w verify -N 6 -m "$m" $args | tee /tmp/out
		expect_grep '^verified 6 blocks' /tmp/out
	done
done

step "a reused buffer hits the cache; the nocache mode never caches"
echo 1 > "/sys/kernel/debug/regcache/$ORFS_RDMA_DEV/flush"
h0=$(stat_of hits); m0=$(stat_of misses)
kt -w verify -N 50 -b 65536 -m user > /dev/null
h1=$(stat_of hits); m1=$(stat_of misses)
echo "hits $h0 -> $h1, misses $m0 -> $m1"
# 100 transfers from two buffers: two misses, 98 hits.
expect_eq "misses for two reused buffers" "$((m1 - m0))" 2
expect_eq "hits for two reused buffers" "$((h1 - h0))" 98
kt -w verify -N 20 -b 65536 -m user-nocache > /dev/null
expect_eq "hits in nocache mode" "$(stat_of hits)" "$h1"
expect_eq "misses in nocache mode" "$(stat_of misses)" "$((m1 + 40))"

step "mapping changes under the cache, checked by data"
i0=$(stat_of invalidations)
rt remap mremap mprotect dontneed fork exit twoproc unmap-race memlock huge | tee /tmp/out
for t in remap mremap mprotect dontneed fork exit twoproc unmap-race memlock huge; do
	expect_grep "^ok $t\$" /tmp/out
done
cat "$stats"
i1=$(stat_of invalidations)
[ "$i1" -gt "$((i0 + 10))" ] || fail "only $((i1 - i0)) invalidations for the mapping changes"

step "the entries of processes that exited are released: nothing stays pinned"
wait_until 50 stat_is live 0 || true
cat "$stats"
expect_eq "entries" "$(stat_of entries)" 0
expect_eq "pinned bytes" "$(stat_of pinned_bytes)" 0
expect_eq "live entries" "$(stat_of live)" 0

step "memory pressure: the shrinker gives idle pinned pages back; the buffers work after"
# Not through kt: timeout(1) would die of the SIGUSR1 meant for the program.
"$ORFS_BIN/knet-test" -a "$ORFS_ADDR" -n rvol -w hold -N 16 -b 65536 -m user > /tmp/hold.out &
hold=$!
on_exit "kill $hold 2>/dev/null"
wait_until 300 grep -q '^holding' /tmp/hold.out || true
expect_grep '^holding 16 buffers of 65536 bytes$' /tmp/hold.out
cat "$stats"
n=$(stat_of entries)
[ "$n" -ge 1 ] || fail "no entry cached for a live process"
expect_eq "pinned bytes of the live process" "$(stat_of pinned_bytes)" $((16 * 65536))
e0=$(stat_of evictions)
# drop_caches=2 runs every shrinker, as reclaim does under memory pressure.
echo 2 > /proc/sys/vm/drop_caches
wait_until 50 stat_is live 0 || true
cat "$stats"
expect_eq "entries after the shrinker" "$(stat_of entries)" 0
expect_eq "pinned bytes after the shrinker" "$(stat_of pinned_bytes)" 0
expect_eq "evictions by the shrinker" "$(stat_of evictions)" $((e0 + n))
kill -USR1 "$hold"
wait "$hold" || { cat /tmp/hold.out; fail "the held buffers failed after the shrinker"; }
expect_grep '^read again 16 buffers: same data$' /tmp/hold.out

step "limits: the cache keeps at most max_entries, evicting the least recently used"
echo 4 > /sys/module/regcache/parameters/max_entries
on_exit "echo 4096 > /sys/module/regcache/parameters/max_entries"
e0=$(stat_of evictions)
# A long-lived process: the test device keeps the endpoint and the cache
# keeps its entries while it sleeps between transfers of 16 buffers.
kt -w verify -N 16 -b 65536 -m user -V 8 > /tmp/out &
wait $!
expect_grep '^verified 16 blocks' /tmp/out
[ "$(stat_of evictions)" -gt "$e0" ] || fail "no eviction with max_entries=4"
echo ok
