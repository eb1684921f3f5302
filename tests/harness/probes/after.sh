#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 60
#
# Guest half of tests/harness/test-freeze.sh: planned after the script
# that froze, so it runs only in the boot after the frozen one. It fails
# in the frozen boot's kernel, which it can tell by the probe's mark
# being older than this boot.
boot=$(( $(date +%s) - $(cut -d. -f1 /proc/uptime) ))
mark=$(stat -c %Y "$ORFS_RESULTS/freeze-probe.running") || exit 1
if [ "$mark" -ge "$boot" ]; then
	echo "after: the freeze probe ran in this boot ($mark >= $boot): no new boot"
	exit 1
fi
echo "after: runs in a new boot"
