#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# ORFS over knet's TCP transport against NFSv3 over TCP (knfsd) in the
# same guest boot, with ORFS over RDMA beside it for the O_DIRECT jobs:
# tests/bench/orfs.sh's jobs and rounds, with BENCH_TRANSPORT=tcp.
# timeout: 2700
BENCH_TRANSPORT=tcp
# shellcheck source=tests/bench/orfs.sh
. "$(dirname "$0")/orfs.sh"
