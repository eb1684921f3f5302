#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# timeout: 60
#
# Guest half of tests/harness/test-freeze.sh: a guest that waits quietly,
# its QEMU idle, for longer than the watchdog's limit there. Its heartbeat
# goes on, so it must pass, not be taken for frozen.
sleep 30
echo "idle: waited 30 s"
