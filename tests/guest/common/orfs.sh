# SPDX-License-Identifier: GPL-2.0-only
# Shared by the ORFS guest tests (tests/guest/orfs-*.sh), after lib.sh:
# the suite loaded; an ext4 file system on a RAM disk (/tmp/e4) holding the
# export (/tmp/e4/exp, served as "data") and a reference directory
# (/tmp/e4/ref); the server started on it; and the helpers below.
# shellcheck shell=bash
# shellcheck disable=SC2034 # the variables are the tests'
ft="$ORFS_BIN/orfs-fstest"
exp=/tmp/e4/exp
state=/tmp/orfs-state
load_suite
# The export and the reference are directories of one ext4 file system
# on a RAM disk (tmpfs of 6.1 has neither user xattrs nor O_DIRECT).
modprobe brd rd_nr=2 rd_size=$((512 * 1024))
on_exit "rmmod brd"
mkfs.ext4 -q -F /dev/ram0
mkdir -p /tmp/e4 /tmp/mnt
mount /dev/ram0 /tmp/e4
on_exit "umount /tmp/e4"
mkdir /tmp/e4/exp /tmp/e4/ref
start_server -s $state -e data=$exp,no_root_squash
mnt() { mount -t orfs "$@" "$ORFS_ADDR:/data" /tmp/mnt; }
# Large folios by default where the kernel bounds a file's folio size
# (mapping_set_folio_order_range(): 6.12 has it, 6.1 does not).
kv=$(uname -r)
kmaj=${kv%%.*} kmin=${kv#*.} kmin=${kmin%%.*}
if ((kmaj > 6 || (kmaj == 6 && kmin >= 12))); then k612=1 lf=on; else k612=0 lf=off; fi
umnt() { umount /tmp/mnt; }
as_user() { setpriv --reuid=1000 --regid=1000 --clear-groups "$@"; }
# acl FILE TAG:PERM:ID...: set FILE's access ACL on the server (the
# kernel's xattr form; the guest has no setfacl). ID -1: no qualifier.
acl() {
	python3 - "$@" <<'PY'
import os, struct, sys
b = struct.pack("<I", 2)
for e in sys.argv[2:]:
    t, p, i = e.split(":")
    b += struct.pack("<HHI", int(t, 0), int(p), int(i) & 0xffffffff)
os.setxattr(sys.argv[1], "system.posix_acl_access", b)
PY
}
# copy_across SRC DST SERVER_DST: copy_file_range() of 1 MiB of SRC from
# 64 KiB to 4 KiB into DST, a file of another mount (another export): the
# server copies within one export only, so the kernel splices the bytes
# through this client; DST and SERVER_DST (its copy on the server) must
# read a hole, then those bytes
copy_across() {
	xfs_io -f -c "copy_range -s 65536 -d 4096 -l 1048576 $1" "$2" ||
		fail "copy_file_range between two mounts"
	python3 - "$@" <<'PY'
import sys
s = open(sys.argv[1], "rb").read()
want = bytes(4096) + s[65536:65536 + (1 << 20)]
for f in sys.argv[2:]:
    if open(f, "rb").read() != want:
        sys.exit(f"{f}: the copy between two mounts reads wrong")
PY
	echo "copy_file_range between two mounts: verified"
}
restart_server() {
	kill_server
	start_server -s $state -e data=$exp,no_root_squash
}
# ms OP FIELD: a counter of the mount at /tmp/mnt (FIELD 2 calls, 3 errors,
# 4 failures, 7 data, 8 microseconds); ms_sum FIELD: of all its operations
ms() {
	awk -v op="$1" -v f="$2" '$1 == "device" { on = $5 == "/tmp/mnt" && $8 == "orfs" }
		on && $1 == op && NF == 8 { print $f }' /proc/self/mountstats
}
# (the lines between the "op" header and "writeback")
ms_sum() {
	awk -v f="$1" '$1 == "device" { on = $5 == "/tmp/mnt" && $8 == "orfs"; ops = 0 }
		on && $1 == "writeback" { ops = 0 }
		on && ops { s += $f }
		on && $1 == "op" { ops = 1 } END { print s + 0 }' /proc/self/mountstats
}
# fio_restarts NAME MB RESTARTS: a verified fio write of MB MiB in
# /tmp/mnt during which the server is killed and restarted RESTARTS
# times, 3 s in and then every 2 s; fio must never see it. The writes are
# held to 4 MiB/s, so that they are still going at every restart however
# fast the guest runs (a run that ended first tested no restart).
fio_restarts() {
	local pid i
	fio --name="$1" --directory=/tmp/mnt --size="$2M" --rw=write --bs=64k --ioengine=psync \
		--rate=,4m --fsync=16 --verify=crc32c --verify_fatal=1 --do_verify=1 \
		--verify_state_save=0 --output="/tmp/$1.out" &
	pid=$!
	sleep 3
	for ((i = 0; i < $3; i++)); do
		((i == 0)) || sleep 2
		kill -0 $pid 2>/dev/null || fail "fio $1 ended before restart $((i + 1)) of $3"
		restart_server
	done
	wait $pid || { cat "/tmp/$1.out"; fail "fio $1 across server restarts"; }
	expect_grep 'err= 0' "/tmp/$1.out"
}

