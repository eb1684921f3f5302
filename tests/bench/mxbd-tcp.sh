#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# MXBD over knet's TCP transport against NVMe/TCP (nvmet_tcp target,
# nvme_tcp host) in the same guest boot, with MXBD over RDMA beside it:
# tests/bench/mxbd.sh's jobs and rounds, with BENCH_TRANSPORT=tcp.
# timeout: 2700
BENCH_TRANSPORT=tcp
# shellcheck source=tests/bench/mxbd.sh
. "$(dirname "$0")/mxbd.sh"
