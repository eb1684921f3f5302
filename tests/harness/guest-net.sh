# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-only
# The RDMA devices of the test guest. The guest has no network card at all,
# so these addresses exist only inside it.
#  - Soft-RoCE (rxe0) on dummy0, 10.77.0.1: always. rxe works on a dummy
#    interface in the initial namespace; not on lo (rdma_cm cannot resolve
#    a route there) and not across namespaces (Documentation/testbed.md).
#  - Soft-iWARP (siw0) on iw0, 10.76.0.1, beside it, when the guest is
#    booted for iWARP (tests/harness/vm --rdma siw): siw.ko is built from Debian's
#    linux-source by scripts/build-siw.sh, as the stock kernels lack it.
# ORFS_ADDR, ORFS_DEV and ORFS_RDMA_DEV name the one the tests use.
if [ "${ORFS_RDMA:-rxe}" = siw ]; then
	export ORFS_DEV=iw0 ORFS_ADDR=10.76.0.1 ORFS_RDMA_DEV=siw0
else
	export ORFS_RDMA=rxe ORFS_DEV=dummy0 ORFS_ADDR=10.77.0.1 ORFS_RDMA_DEV=rxe0
fi

# bed_dummy DEV ADDR: a dummy interface up with ADDR/24
bed_dummy() {
	ip link add "$1" type dummy || return 1
	ip addr add "$2/24" dev "$1" || return 1
	ip link set "$1" up
}

bed_net_up() {
	modprobe dummy numdummies=0 || return 1
	bed_dummy dummy0 10.77.0.1 || return 1
	modprobe rdma_rxe || return 1
	rdma link add rxe0 type rxe netdev dummy0 || return 1
	if [ "$ORFS_RDMA" = siw ]; then
		modprobe -a ib_core libcrc32c || return 1
		# The debug kernel has siw; Debian's get scripts/build-siw.sh's.
		modprobe siw 2>/dev/null || insmod "$ORFS_PROJ/build/siw/$ORFS_KVER/siw.ko" || return 1
		bed_dummy iw0 10.76.0.1 || return 1
		rdma link add siw0 type siw netdev iw0 || return 1
	fi
	rdma link show
}
