#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 60
#
# Guest half of tests/harness/test-freeze.sh: says that it runs, then
# waits while the host stops the guest's CPUs. A harness that failed to
# take the stopped guest for frozen would let this end and pass.
: > "$ORFS_RESULTS/freeze-probe.running"
sleep 50
