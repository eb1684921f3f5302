#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The test bed itself: soft-RoCE is up, rdma_cm connects over it with data
# verified, and libfabric's verbs provider offers FI_EP_MSG on it. When
# this fails, every other in-guest result is suspect.
# lanes: check=6.12/rxe all=*/rxe
# timeout: 120
. "$(dirname "$0")/lib.sh"

step "rxe0 is an active RoCE port on $ORFS_DEV"
ibv_devinfo -d "$ORFS_RDMA_DEV" > /tmp/devinfo
expect_grep 'state:[[:space:]]+PORT_ACTIVE' /tmp/devinfo
expect_grep 'link_layer:[[:space:]]+Ethernet' /tmp/devinfo

step "rdma_cm connects to $ORFS_ADDR and moves verified data (rping)"
rping -s -a "$ORFS_ADDR" -p 7174 -C 20 -S 4096 > /tmp/rping-s.log 2>&1 &
srv=$!
on_exit "kill $srv 2>/dev/null"
wait_until 100 cm_listening 7174 || { cat /tmp/rping-s.log; fail "the rping server does not listen"; }
timeout 60 rping -c -a "$ORFS_ADDR" -p 7174 -C 20 -S 4096 -V -v > /tmp/rping-c.log 2>&1 ||
	{ cat /tmp/rping-c.log /tmp/rping-s.log; fail "rping client failed"; }
wait "$srv" || { cat /tmp/rping-s.log; fail "rping server failed"; }
expect_eq "verified pings" "$(grep -c '^ping data' /tmp/rping-c.log)" 20

step "libfabric's verbs provider offers FI_EP_MSG on the rxe device"
fi_info -p verbs -t FI_EP_MSG > /tmp/fi_info 2>&1 || { cat /tmp/fi_info; fail "fi_info found no verbs FI_EP_MSG"; }
expect_grep "domain: $ORFS_RDMA_DEV" /tmp/fi_info
echo "ok"
