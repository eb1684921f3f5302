#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# ORFS against NFSv3 over RDMA (knfsd, rpcrdma) in the same guest boot,
# both exporting a tmpfs directory over rxe0: O_DIRECT 1 MiB sequential
# read and write at depth 16, 4 KiB random read and write at depth 1
# (mean and p99 latency), a buffered sequential write then read of a large file,
# on an ext4 disk export a 64 MiB write + fsync and 4 KiB records each
# fsync'd (ORFS with unstable write-back, its default, and with
# writeback=stable),
# create/stat/unlink of 1000 files (time per operation; as root, then as
# a user), ORFS's time from an unlock to another client's waiting
# process's lock (against a server that holds no waiter's request, whose
# clients poll: NFS here runs without its lock manager), and ORFS's O_DIRECT
# 64 KiB reads with the registration cache on and off. Each system runs with
# its defaults; the bandwidth jobs also run on NFS with as many connections
# as ORFS (nconnect=). Each figure is the median of BENCH_ROUNDS runs
# (default 4) on each mount.
# With BENCH_TRANSPORT=tcp (tests/bench/orfs-tcp.sh) ORFS goes over knet's
# TCP transport and NFS over TCP, on the same address; ORFS over RDMA runs
# the O_DIRECT jobs too, and rows named *_vs_rdma give each TCP figure
# beside it. The buffered and name jobs also run on the guest's own tmpfs
# (where the export is): rows named *_vs_local give ORFS beside it.
# timeout: 2400
. "$(dirname "$0")/../guest/lib.sh"
tr=${BENCH_TRANSPORT:-rdma}
name=orfs
[ "$tr" = rdma ] || name=orfs-$tr
out=$ORFS_RESULTS/$name.tsv
: > "$out"
secs=${BENCH_SECONDS:-10}
rounds=${BENCH_ROUNDS:-4}
bufmb=${BENCH_BUF_MB:-512}
row() { bench_row "$out" "$@"; }

# A disk for the durability jobs: ext4 on a loop device (its file in the
# guest's memory), a directory of it exported by each system.
modprobe loop
truncate -s 384M /tmp/disk.img
disk=$(losetup -f --show /tmp/disk.img)
on_exit "losetup -d $disk"
mkfs.ext4 -q -F "$disk"
mkdir -p /tmp/dexp
mount "$disk" /tmp/dexp
on_exit "umount /tmp/dexp"
mkdir -p /tmp/dexp/o /tmp/dexp/n

# ORFS.
mkdir -p /tmp/oexp /tmp/omnt /tmp/odisk /tmp/odiskst
tcpl=()
# Both transports: each with as many progress threads as CPUs (mxbd.sh).
[ "$tr" = rdma ] || tcpl=(-a "tcp://$ORFS_ADDR" -T $((2 * $(nproc))))
start_server "${tcpl[@]}" -e data=/tmp/oexp,no_root_squash -e disk=/tmp/dexp/o,no_root_squash
load_suite
# Every ORFS mount that names no transport takes the benchmark's.
echo "$tr" > /sys/module/orfs/parameters/transport
mount -t orfs "$ORFS_ADDR:/data" /tmp/omnt
on_exit "umount /tmp/omnt"
# The disk export at the default (unstable write-back) and with writeback=stable.
mount -t orfs "$ORFS_ADDR:/disk" /tmp/odisk
on_exit "umount /tmp/odisk"
mount -t orfs -o writeback=stable "$ORFS_ADDR:/disk" /tmp/odiskst
on_exit "umount /tmp/odiskst"
grep -q ' /tmp/odiskst .*writeback=stable' /proc/mounts || fail "no writeback=stable mount"
mkdir -p /tmp/odisk/u /tmp/odisk/s

# NFSv3 over RDMA, server and client in this guest.
mkdir -p /tmp/nexp /tmp/nmnt /var/lib/nfs/rpc_pipefs /run/rpcbind
touch /var/lib/nfs/etab /var/lib/nfs/rmtab /var/lib/nfs/xtab
modprobe nfsd
[ "$tr" = tcp ] || modprobe rpcrdma
# Unmounted last (on_exit runs last in first), once knfsd is stopped.
if ! mountpoint -q /var/lib/nfs/rpc_pipefs; then
	mount -t rpc_pipefs sunrpc /var/lib/nfs/rpc_pipefs
	on_exit "umount /var/lib/nfs/rpc_pipefs"
fi
if ! mountpoint -q /proc/fs/nfsd; then
	mount -t nfsd nfsd /proc/fs/nfsd
	on_exit "umount /proc/fs/nfsd"
fi
rpcbind -w
exportfs -o rw,no_root_squash,fsid=1,insecure,no_subtree_check "$ORFS_ADDR:/tmp/nexp"
exportfs -o rw,no_root_squash,fsid=2,insecure,no_subtree_check "$ORFS_ADDR:/tmp/dexp/n"
rpc.mountd --no-nfs-version 4
rpc.nfsd -N 4 8
on_exit "rpc.nfsd 0; exportfs -ua; pkill rpc.mountd; pkill rpcbind"
if [ "$tr" = tcp ]; then
	nfsopt=proto=tcp
else
	echo "rdma 20049" > /proc/fs/nfsd/portlist
	nfsopt=proto=rdma,port=20049
fi
nfsmnt() { mount -t nfs -o "vers=3,nolock,$nfsopt$1" "$ORFS_ADDR:/tmp/nexp" /tmp/nmnt; }
nfsmnt ""
on_exit "umount /tmp/nmnt"
# The disk export's NFS mount is made for its jobs only: a second mount of
# the server would share its transports with /tmp/nmnt's (nconnect=).
mkdir -p /tmp/ndisk
# For the lock hand-off: a second ORFS client; and, as its peer, two
# clients of a second server with one worker, which holds no waiter's
# request (half its workers may), so they poll as clients did before.
mkdir -p /tmp/omnt2 /tmp/pmnt1 /tmp/pmnt2 /tmp/srv2
mount -t orfs "$ORFS_ADDR:/data" /tmp/omnt2
on_exit "umount /tmp/omnt2"
"$ORFS_BIN/orfs-server" --insecure -a "$ORFS_ADDR" "${tcpl[@]}" -p 20078 -t 1 -s /tmp/srv2 -e data=/tmp/oexp,no_root_squash \
	> /tmp/srv2.log 2>&1 &
srv2=$!
on_exit "kill $srv2; wait $srv2 || true"
wait_until 100 grep -q 'listening on' /tmp/srv2.log || fail "the second server did not start"
for m in 1 2; do
	mount -t orfs -o port=20078 "$ORFS_ADDR:/data" /tmp/pmnt$m
	on_exit "umount /tmp/pmnt$m"
done
grep -E ' /tmp/(o|n)mnt ' /proc/mounts
# Each at its defaults: ORFS opens a connection per CPU (four at most), NFS
# one. NFS's nconnect= also runs the bandwidth jobs with as many as ORFS's.
nc=$(grep ' /tmp/omnt ' /proc/mounts | sed -n 's/.*,nconnect=\([0-9]*\).*/\1/p')
[ -n "$nc" ] || fail "no nconnect= in ORFS's /proc/mounts line"
echo "ORFS mounts with $nc connections"
# Two more mounts of the export for the large-folio comparison, where the
# kernel has them, each working in its own directory.
lf=$(grep ' /tmp/omnt ' /proc/mounts | sed -n 's/.*,largefolio=\(o[nf]*\).*/\1/p')
[ -n "$lf" ] || fail "no largefolio= in ORFS's /proc/mounts line"
if [ "$lf" = on ]; then
	mkdir -p /tmp/oexp/lfon /tmp/oexp/lfoff /tmp/lfon /tmp/lfoff
	for m in on off; do
		mount -t orfs -o largefolio=$m "$ORFS_ADDR:/data" /tmp/lf$m
		on_exit "umount /tmp/lf$m"
		grep -q " /tmp/lf$m .*largefolio=$m" /proc/mounts || fail "no largefolio=$m mount"
	done
fi

# dio NAME DIR RW BS QD: an O_DIRECT fio job on a 256 MiB file in DIR.
dio() {
	fio_figures "$1" --directory="$2" --filename=f256 --size=256M --direct=1 \
		--ioengine=libaio --rw="$3" --bs="$4" --iodepth="$5" --time_based \
		--runtime="$secs" --ramp_time=2
}
grep -q " /tmp/omnt orfs .*transport=$tr" /proc/mounts || fail "ORFS is not over $tr"
if [ "$tr" = tcp ]; then
	# Ours over RDMA beside it, for the O_DIRECT jobs, on the same file
	# as the TCP mount's (the guest's memory holds no third copy).
	mkdir -p /tmp/rmnt
	mount -t orfs -o transport=rdma,nconnect="$nc" "$ORFS_ADDR:/data" /tmp/rmnt
	on_exit "umount /tmp/rmnt"
fi
for d in /tmp/omnt /tmp/nmnt; do
	dd if=/dev/zero of=$d/f256 bs=1M count=256 status=none
	mkdir -m 1777 $d/pub
done
# The same buffered and name jobs on the guest's own tmpfs, where the
# export lives: what the machine gives with no network and no server, a
# reference for both systems (the *_vs_local rows).
mkdir -p /tmp/lmnt
mkdir -m 1777 /tmp/lmnt/pub

# Each measure runs ROUNDS times on each mount, alternating which goes
# first; the table has the median of each figure (single runs in this guest
# vary by up to 40%).
declare -A fig
# keep SYSTEM METRIC VALUE: one run's figure
keep() {
	echo "round $round $1 $2: $3"
	fig[$1-$2]+="$3 "
}

# meminfo_kb FIELD: FIELD of /proc/meminfo (Shmem, MemFree...), KiB
meminfo_kb() {
	awk -v f="$1:" '$1 == f { print $2 }' /proc/meminfo
}

# reclaim: the kernel's counters of reclaim and compaction work, on one line
reclaim() {
	awk '/^(allocstall_(normal|movable)|pgscan_(direct|kswapd)|compact_stall|compact_fail) / {
		printf "%s=%s ", $1, $2 }' /proc/vmstat
}

# buffered DIR: write then read a BUFMB file through the page cache (the
# cache dropped in between); prints "write_MBps read_MBps". The log gets
# the reclaim counters around the write and the free memory before it.
buffered() {
	local w r i shm0
	shm0=$(meminfo_kb Shmem)
	echo "buffered $1: before: $(reclaim)MemFree=$(meminfo_kb MemFree) kB" >&2
	w=$(dd if=/dev/zero of="$1/big" bs=1M count="$bufmb" conv=fsync 2>&1 |
	    awk '/copied/ { print $(NF-1) }')
	echo "buffered $1: after the write ($w MB/s): $(reclaim)" >&2
	echo 3 > /proc/sys/vm/drop_caches
	r=$(dd if="$1/big" of=/dev/null bs=1M 2>&1 | awk '/copied/ { print $(NF-1) }')
	rm -f "$1/big"
	# The next job starts once the file's memory (in the export's tmpfs)
	# is free again: a server that held the file open frees it at its
	# last close, after the unlink (knfsd's file cache some seconds
	# later), and that work would run inside the next job.
	for ((i = 0; i < 300; i++)); do
		(($(meminfo_kb Shmem) <= shm0 + 32768)) && break
		sleep 0.1
	done
	echo "buffered $1: the file's memory free after $i tenths of a second" >&2
	echo "$w $r"
}

# durable DIR: on the disk export, a 64 MiB buffered write then fsync()
# (MB/s), and 300 records of 4 KiB appended each with fsync() (us per
# record); prints "write_MBps record_us".
durable() {
	local w r
	w=$(dd if=/dev/zero of="$1/w" bs=1M count=64 conv=fsync 2>&1 |
	    awk '/copied/ { print $(NF-1) }')
	rm -f "$1/w"
	r=$(python3 - "$1/r" <<'PY'
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
rec = b"r" * 4096
t0 = time.perf_counter()
for _ in range(300):
    os.write(fd, rec)
    os.fsync(fd)
t1 = time.perf_counter()
os.close(fd)
os.unlink(sys.argv[1])
print("%.1f" % ((t1 - t0) * 1e6 / 300))
PY
)
	echo "$w $r"
}

# meta DIR [UID]: microseconds per create, stat and unlink of 1000 files,
# as root or as UID (without supplementary groups).
meta() {
	local as=()
	[ -z "${2:-}" ] || as=(setpriv --reuid "$2" --regid "$2" --clear-groups)
	"${as[@]}" python3 - "$1" <<'PY'
import os, sys, time
d = os.path.join(sys.argv[1], 'meta')
os.mkdir(d)
names = [os.path.join(d, 'f%04d' % i) for i in range(1000)]
t0 = time.perf_counter()
for n in names:
    os.close(os.open(n, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
t1 = time.perf_counter()
for n in names:
    os.stat(n)
t2 = time.perf_counter()
for n in names:
    os.unlink(n)
t3 = time.perf_counter()
os.rmdir(d)
print('%.1f %.1f %.1f' % ((t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3))
PY
}

jobs=("dio_seqread_1M_qd16 read 1M 16" "dio_seqwrite_1M_qd16 write 1M 16"
      "dio_randread_4k_qd1 randread 4k 1" "dio_randwrite_4k_qd1 randwrite 4k 1")
for ((round = 1; round <= rounds; round++)); do
	systems=$(turns $round o n)
	for job in "${jobs[@]}"; do
		set -- $job
		# shellcheck disable=SC2046 # the mounts in this round's order
		for x in $systems $( [ "$tr" = rdma ] || echo r); do
			read -r bw lat p99 _ < <(dio "$x-$1-$round" /tmp/${x}mnt "$2" "$3" "$4")
			case $1 in
			*_1M_*) keep $x "${1}_MBps" "$bw" ;;
			*) keep $x "${1}_lat_us" "$lat"
			   keep $x "${1}_p99_us" "$p99" ;;
			esac
		done
	done
	if [ "$nc" -gt 1 ]; then
		umount /tmp/nmnt
		nfsmnt ",nconnect=$nc"
		# Its transports, one "xprt:" line each.
		n=$(awk '/^device / { on = / mounted on \/tmp\/nmnt / } on && /xprt:/' \
			/proc/self/mountstats | wc -l)
		[ "$n" = "$nc" ] || fail "NFS with nconnect=$nc has $n transports"
		for job in "${jobs[@]:0:2}"; do
			set -- $job
			read -r bw _ < <(dio "nc-$1-$round" /tmp/nmnt "$2" "$3" "$4")
			keep n "${1}_nconnect_MBps" "$bw"
		done
		umount /tmp/nmnt
		nfsmnt ""
	fi
	for x in $systems l; do
		read -r w r < <(buffered /tmp/${x}mnt)
		keep $x buf_seqwrite_MBps "$w"
		keep $x buf_seqread_MBps "$r"
	done
	# Large folios (kernels that have them): the same buffered job on ORFS
	# with them on and off, one mount each, in turns.
	if [ "$lf" = on ]; then
		for m in $(turns $round on off); do
			read -r w r < <(buffered /tmp/lf$m/lf$m)
			keep o "buf_seqwrite_largefolio_${m}_MBps" "$w"
			keep o "buf_seqread_largefolio_${m}_MBps" "$r"
		done
	fi
	# Durability: ORFS's unstable write-back (COMMIT, verifier) and its
	# stable one (each WRITE synced), NFS's default, on the disk export.
	three=(o s n)
	k=$((round % 3))
	for x in "${three[@]:k}" "${three[@]:0:k}"; do
		case $x in
		o) d=/tmp/odisk/u ;;
		s) d=/tmp/odiskst/s ;;
		n) d=/tmp/ndisk
		   mount -t nfs -o "vers=3,nolock,$nfsopt" "$ORFS_ADDR:/tmp/dexp/n" $d ;;
		esac
		read -r w r < <(durable $d)
		[ $x != n ] || umount $d
		keep $x disk_write_fsync_MBps "$w"
		keep $x disk_fsync_4k_us "$r"
	done
	for x in $systems l; do
		read -r c st u < <(meta /tmp/${x}mnt)
		keep $x create_us "$c"
		keep $x stat_us "$st"
		keep $x unlink_us "$u"
	done
	# The same as a user: ORFS's server runs a user's name operations on
	# a worker thread, root's (its own credentials) without one.
	for x in $systems; do
		read -r c st u < <(meta /tmp/${x}mnt/pub 1000)
		keep $x user_create_us "$c"
		keep $x user_stat_us "$st"
		keep $x user_unlink_us "$u"
	done
	# The registration cache: the same 64 KiB O_DIRECT reads with it on and off.
	for m in $(turns $round on off); do
		umount /tmp/omnt
		mount -t orfs -o regcache=$m "$ORFS_ADDR:/data" /tmp/omnt
		grep -q "regcache=$m" /proc/mounts || fail "could not mount with regcache=$m"
		read -r bw _ _ _ < <(dio "o-rc-$m-$round" /tmp/omnt read 64k 1)
		keep o "dio_64k_regcache_${m}_MBps" "$bw"
	done
	umount /tmp/omnt
	mount -t orfs "$ORFS_ADDR:/data" /tmp/omnt
	# Lock hand-off: 5 times, one process holds a lock for 1 s while
	# another waits for it; the median time from the unlock to the lock.
	for x in $(turns $round o p); do
		if [ $x = o ]; then set -- /tmp/omnt/lk /tmp/omnt2/lk; else set -- /tmp/pmnt1/lk /tmp/pmnt2/lk; fi
		: > "$1"
		ms=$(timeout 120 python3 "$(dirname "$0")/../guest/lock-handoff.py" "$1" "$2" 5 fcntl 1) ||
			fail "$x: the lock hand-offs did not end"
		echo "round $round $x lock hand-offs (ms): $ms"
		keep $x lock_handoff_ms "$(median $ms)"
	done
done
for m in dio_seqread_1M_qd16_MBps dio_seqwrite_1M_qd16_MBps dio_randread_4k_qd1_lat_us \
	 dio_randread_4k_qd1_p99_us dio_randwrite_4k_qd1_lat_us dio_randwrite_4k_qd1_p99_us \
	 buf_seqwrite_MBps buf_seqread_MBps create_us stat_us unlink_us \
	 user_create_us user_stat_us user_unlink_us; do
	row $m "$(median ${fig[o-$m]})" "$(median ${fig[n-$m]})" "$(sed 's/.*_//' <<< "$m")"
done
# ORFS's bandwidth (the same runs as above) against NFS with as many connections.
if [ "$nc" -gt 1 ]; then
	for m in dio_seqread_1M_qd16 dio_seqwrite_1M_qd16; do
		row "${m}_nfs_nconnect${nc}_MBps" "$(median ${fig[o-${m}_MBps]})" \
		    "$(median ${fig[n-${m}_nconnect_MBps]})" MBps
	done
fi
if [ "$lf" = on ]; then
	for m in buf_seqwrite buf_seqread; do
		row "${m}_largefolio_on_MBps" "$(median ${fig[o-${m}_largefolio_on_MBps]})" \
		    "$(median ${fig[o-${m}_largefolio_off_MBps]})" MBps
	done
fi
# ORFS beside the guest's own tmpfs, the same runs: a reference, not a peer.
for m in buf_seqwrite_MBps buf_seqread_MBps create_us stat_us unlink_us; do
	row "${m}_vs_local" "$(median ${fig[o-$m]})" "$(median ${fig[l-$m]})" "$(sed 's/.*_//' <<< "$m")"
done
# Unstable write-back against stable, each beside NFS's figure.
for m in disk_write_fsync_MBps disk_fsync_4k_us; do
	row $m "$(median ${fig[o-$m]})" "$(median ${fig[n-$m]})" "$(sed 's/.*_//' <<< "$m")"
	row "${m%_*}_stable_${m##*_}" "$(median ${fig[s-$m]})" "$(median ${fig[n-$m]})" \
	    "$(sed 's/.*_//' <<< "$m")"
done
row lock_handoff_ms "$(median ${fig[o-lock_handoff_ms]})" "$(median ${fig[p-lock_handoff_ms]})" ms
row dio_64k_regcache_on_MBps "$(median ${fig[o-dio_64k_regcache_on_MBps]})" \
    "$(median ${fig[o-dio_64k_regcache_off_MBps]})" MBps
# Over TCP: the O_DIRECT figures beside ours over RDMA, in the same boot.
[ "$tr" = rdma ] || for m in dio_seqread_1M_qd16_MBps dio_seqwrite_1M_qd16_MBps \
	dio_randread_4k_qd1_lat_us dio_randwrite_4k_qd1_lat_us; do
	row "${m}_vs_rdma" "$(median ${fig[o-$m]})" "$(median ${fig[r-$m]})" "$(sed 's/.*_//' <<< "$m")"
done
cat "/sys/kernel/debug/regcache/$ORFS_RDMA_DEV/stats"
