# SPDX-License-Identifier: GPL-2.0-only
# Soft-RoCE in the test guest. The guest has no network card at all, so this
# address exists only inside it. rxe works on a dummy interface in the
# initial namespace; not on lo (rdma_cm cannot resolve a route there) and
# not across namespaces (see Documentation/testbed.md).
export ORFS_DEV=dummy0
export ORFS_ADDR=10.77.0.1
export ORFS_RDMA_DEV=rxe0

bed_net_up() {
	modprobe dummy numdummies=0 || return 1
	ip link add "$ORFS_DEV" type dummy || return 1
	ip addr add "$ORFS_ADDR/24" dev "$ORFS_DEV" || return 1
	ip link set "$ORFS_DEV" up || return 1
	modprobe rdma_rxe || return 1
	rdma link add "$ORFS_RDMA_DEV" type rxe netdev "$ORFS_DEV" || return 1
	rdma link show
}
