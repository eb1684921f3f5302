#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The Debian packages as an admin uses them: scripts/pkg-test.sh install
# (which make check runs before booting a guest) installed orfs-dkms,
# orfs-server and orfs-client in a scratch root whose upper layer this
# script lays over the guest's /usr and /etc, in a mount namespace of its
# own. Then, with only what the packages installed: modprobe loads the
# modules DKMS built and they pass the modules test; the server starts as
# its systemd unit starts it, from /etc/orfs/orfs-server.conf; mount -t
# orfs goes through the installed mount.orfs; the mxbd-volumes unit's
# command attaches the volumes of /etc/mxbd/volumes and detaches them; the
# data written reads back on the server.
# lanes: check=6.12/rxe all=*/rxe
# timeout: 300
. "$(dirname "$0")/lib.sh"
up=$ORFS_PROJ/build/pkgroot/up

if [ -z "${ORFS_PKG_NS:-}" ]; then
	[ -d "$up/usr/src" ] ||
		fail "nothing installed in $up: run scripts/pkg-test.sh install (make check does)"
	# What the test uses must come from the packages, not from the host.
	for f in /usr/sbin/orfs-server /usr/sbin/mount.orfs /usr/sbin/mxbdctl /usr/bin/orfsstat; do
		[ ! -e "$f" ] || fail "the host has $f outside the packages: this test would not test them"
	done
	trap - EXIT
	ORFS_PKG_NS=1 exec unshare -m --propagation private "$0" "$@"
fi

step "the packages' files are laid over /usr and /etc"
mkdir -p /run/pkg/etc-up /run/pkg/etc-work
mount -t overlay overlay -o "lowerdir=$up/usr:/usr" /usr
mount -t overlay overlay \
	-o "lowerdir=$up/etc:/etc,upperdir=/run/pkg/etc-up,workdir=/run/pkg/etc-work" /etc
for f in /usr/sbin/orfs-server /sbin/mount.orfs /usr/sbin/mxbdctl /usr/bin/orfsstat; do
	[ -x "$f" ] || fail "the packages installed no $f"
done

step "modprobe finds the modules DKMS built for this kernel"
for m in "${ORFS_MODULES[@]}"; do
	f=$(modinfo -n "$m") || fail "modinfo finds no $m"
	case $f in
	/lib/modules/"$ORFS_KVER"/updates/dkms/"$m".ko*) ;;
	*) fail "$m resolves to $f, not to DKMS's build" ;;
	esac
done
# What modprobe orfs loads of ours: the three, all DKMS's.
expect_eq "modules of ours modprobe orfs loads from DKMS's tree" \
	"$(modprobe --show-depends orfs | grep -oE 'updates/dkms/(regcache|knet|orfs)\.ko' | sort | tr '\n' ' ')" \
	"updates/dkms/knet.ko updates/dkms/orfs.ko updates/dkms/regcache.ko "

step "the modules test passes with modprobe and those modules"
ORFS_MODPROBE=1 "$(dirname "$0")/modules.sh" || fail "modules.sh with the modules DKMS built"

step "the server starts as its unit starts it, from /etc/orfs/orfs-server.conf"
export ORFS_MODPROBE=1
load_suite
mkdir -p /tmp/dx /tmp/mnt
truncate -s 64M /tmp/dv
mkdir -p /etc/orfs /etc/mxbd
cat > /etc/orfs/orfs-server.conf <<EOF
listen $ORFS_ADDR 20077
pool 16
allow $ORFS_ADDR/32
export data /tmp/dx no_root_squash
volume vol /tmp/dv
EOF
unit=/lib/systemd/system/orfs-server.service
start=$(sed -n 's/^ExecStart=//p' "$unit")
check=$(sed -n 's/^ExecReload=\(.* -n .*\)$/\1/p' "$unit")
expect_eq "the unit's command" "$start" "/usr/sbin/orfs-server -c /etc/orfs/orfs-server.conf"
# Installed and enabled with no configuration, it must not fail to start.
expect_eq "its condition" "$(sed -n 's/^ConditionPathExists=//p' "$unit")" \
	/etc/orfs/orfs-server.conf
$check || fail "the unit's reload check refuses the configuration"
# shellcheck disable=SC2086 # the unit's command line, split as systemd splits it
$start > "$ORFS_SERVER_LOG" 2>&1 &
ORFS_SERVER_PID=$!
on_exit stop_server
wait_until 100 grep -q 'listening on' "$ORFS_SERVER_LOG" && kill -0 "$ORFS_SERVER_PID" ||
	{ cat "$ORFS_SERVER_LOG"; fail "the unit's orfs-server did not start"; }

step "mount -t orfs goes through the installed mount.orfs"
head -c 1048576 /dev/urandom > /tmp/ref
# mount.orfs resolves host names: the server by a name of /etc/hosts.
echo "$ORFS_ADDR storage1" >> /etc/hosts
mount -t orfs storage1:/data /tmp/mnt
on_exit "umount /tmp/mnt 2>/dev/null || true"
expect_grep "^storage1:/data /tmp/mnt orfs .*addr=$ORFS_ADDR" /proc/mounts
cp /tmp/ref /tmp/mnt/f
sync
orfsstat /tmp/mnt > /tmp/stat || fail "orfsstat failed on the mount"
expect_grep '^  WRITE +[0-9]+ ' /tmp/stat
umount /tmp/mnt
cmp /tmp/ref /tmp/dx/f || fail "a file written through ORFS differs on the server"

step "the mxbd-volumes unit attaches the volumes of /etc/mxbd/volumes, and detaches them"
unit=/lib/systemd/system/mxbd-volumes.service
expect_eq "its condition" "$(sed -n 's/^ConditionPathExists=//p' "$unit")" /etc/mxbd/volumes
echo "storage1 vol" > /etc/mxbd/volumes
ustart=$(sed -n 's/^ExecStart=//p' "$unit")
ustop=$(sed -n 's/^ExecStop=//p' "$unit")
expect_eq "its commands" "$ustart; $ustop" "/usr/sbin/mxbdctl up; /usr/sbin/mxbdctl down"
$ustart || fail "the unit's start command failed"
on_exit "mxbdctl down 2>/dev/null || true"
dev=$(mxbdctl list | awk '$3 == "vol" { print "/dev/" $1 }')
[ -b "$dev" ] || { mxbdctl list; fail "no device for vol after the unit's start"; }
dd if=/tmp/ref of="$dev" bs=1M oflag=direct status=none
cmp <(dd if="$dev" bs=1M count=1 iflag=direct status=none) /tmp/ref ||
	fail "a volume's block read back differs"
$ustop || fail "the unit's stop command failed"
[ ! -b "$dev" ] || fail "$dev is still there after the unit's stop"
cmp <(head -c 1048576 /tmp/dv) /tmp/ref || fail "the volume's file differs on the server"
stop_server
echo ok
