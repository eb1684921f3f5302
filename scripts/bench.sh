#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/bench.sh [NAME] (make bench [BENCH=NAME]): run every benchmark in
# tests/bench/ (or only NAME) in one guest boot of the newest kernel (or
# BENCH_KERNEL=6.1). A benchmark writes "$ORFS_RESULTS/NAME.tsv", one row a
# figure: metric<TAB>ours<TAB>peer<TAB>unit, peer empty where there is none,
# both measured in the same boot. Results land in build/bench/NAME.tsv and
# are printed as a table with the ratio ours/peer. Benchmarks report; they
# do not fail for being slow, only for not producing their figures. The
# guest boots without the memory checks of make check's guests.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib-kernel.sh

name=${1:-}
kver=$(resolve_kernel "${BENCH_KERNEL:-}") || { echo "bench: no kernel installed (make deps)" >&2; exit 2; }
mkdir -p build
make --no-print-directory all KVER="$kver" > build/bench-build.log 2>&1 ||
	{ tail -n 30 build/bench-build.log; echo "bench: build failed" >&2; exit 1; }

if [ -n "$name" ]; then
	[ -f "tests/bench/$name.sh" ] || { echo "bench: no benchmark '$name' (have: $(cd tests/bench && ls -- *.sh | sed 's/\.sh$//' | tr '\n' ' '))" >&2; exit 2; }
	scripts=("tests/bench/$name.sh")
else
	mapfile -t scripts < <(ls tests/bench/*.sh)
fi

res=build/vm/$kver/bench
# Without make check's memory checks (slub_debug, KFENCE, page
# poisoning): a benchmark measures what users run. BENCH_VM_DEBUG sets
# them for a run that wants them.
VM_DEBUG=${BENCH_VM_DEBUG:-} tests/harness/vm run --kernel "$kver" --results "$res" --timeout 900 "${scripts[@]}" | tee build/bench-run.log
mkdir -p build/bench
rc=0
for s in "${scripts[@]}"; do
	n=$(basename "$s" .sh)
	if [ ! -s "$res/$n.tsv" ]; then
		echo "bench: $n produced no figures (log: $res/$n.log)" >&2
		rc=1
		continue
	fi
	cp "$res/$n.tsv" "build/bench/$n.tsv"
	echo
	echo "== $n ($kver, build/bench/$n.tsv)"
	awk -F'\t' 'BEGIN { printf "%-28s %12s %12s %8s  %s\n", "metric", "ours", "peer", "ratio", "unit" }
		{ ratio = ($3 != "" && $3 + 0 != 0) ? sprintf("%.2f", $2 / $3) : "-";
		  printf "%-28s %12s %12s %8s  %s\n", $1, $2, ($3 == "" ? "-" : $3), ratio, $4 }' "$res/$n.tsv"
done
exit $rc
