#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 60
#
# Guest half of tests/harness/test-freeze.sh: run after leaves.sh, finds
# none of what it left.
bad=0
left() { echo "cleaned: still there: $*"; bad=1; }
pgrep -x -f 'sleep 600' > /dev/null && left "the process"
grep -q ' /tmp/leaves ' /proc/mounts && left "the mount"
[ -z "$(losetup -a)" ] || left "a loop device: $(losetup -a)"
dmsetup info leaves > /dev/null 2>&1 && left "the device-mapper target"
[ ! -d /sys/module/regcache ] || left "regcache"
[ "$bad" = 0 ] && echo "cleaned: nothing left"
exit "$bad"
