#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/demo.sh (make demo): build everything, boot a guest of the newest
# kernel (DEMO_KERNEL=6.1 for the other), bring up soft-RoCE, load the
# suite and show what it does, narrating each step.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib-kernel.sh

kver=$(resolve_kernel "${DEMO_KERNEL:-}") || { echo "demo: no kernel installed (make deps)" >&2; exit 2; }
echo "demo: building the modules for $kver, the server, tools and tests"
make --no-print-directory all KVER="$kver" > build-demo.log 2>&1 ||
	{ tail -n 30 build-demo.log; echo "demo: build failed (build-demo.log)" >&2; exit 1; }
rm -f build-demo.log
echo "demo: booting $kver under QEMU with soft-RoCE (about 20 s)"
res=build/vm/$kver/demo
mkdir -p "$res"
set +e
tests/harness/vm run --kernel "$kver" --results "$res" tests/demo/demo.sh > "$res.verdict" 2>&1
set -e
cat "$res/demo.log" 2>/dev/null || true
echo
cat "$res.verdict"
grep -q '^PASS' "$res.verdict"
