#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/lint-matrix.sh (part of make lint): the test matrix keeps its
# rules (Documentation/testbed.md, "The matrix"):
#   - every guest script has a valid "# lanes:" line, its check= lanes
#     among its all= ones, and runs in make check on the newest kernel;
#   - in make check, each transport (rxe, siw, tcp) carries ORFS and MXBD
#     data: an orfs-* and an mxbd* script run on it;
#   - every compatibility branch of the kernel code (a preprocessor
#     conditional on a macro that the kernel's version decides) is listed
#     in tests/compat-branches with the scripts that run it, and each of
#     those runs on 6.1 in make check (6.1 builds the other side of each);
#   - the matrix in Documentation/testbed.md is the one the headers give
#     (scripts/lint-matrix.sh --table prints it).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib-kernel.sh
. scripts/lib-kernel.sh
# shellcheck source=scripts/lib-lanes.sh
. scripts/lib-lanes.sh

newest=${LANE_KERNELS##* }
mapfile -t scripts < <(CHECK_TESTS='' guest_tests)

# table: the matrix as a Markdown table, a row a script
table() {
	local s k t row cell
	printf '| script |'
	for k in $LANE_KERNELS; do for t in $LANE_TRANSPORTS; do printf ' %s/%s |' "$k" "$t"; done; done
	printf '\n|---|'
	for k in $LANE_KERNELS; do for t in $LANE_TRANSPORTS; do printf -- '---|'; done; done
	printf '\n'
	for s in "${scripts[@]}"; do
		row="| \`$(basename "$s")\` |"
		check=$(lanes_of "$s" check 2> /dev/null || true)
		all=$(lanes_of "$s" all 2> /dev/null || true)
		for k in $LANE_KERNELS; do
			for t in $LANE_TRANSPORTS; do
				cell=
				grep -qx "$k $t" <<< "$all" && cell=all
				grep -qx "$k $t" <<< "$check" && cell=check
				row+=" $cell |"
			done
		done
		echo "$row"
	done
}

if [ "${1:-}" = --table ]; then
	table
	exit 0
fi

bad=0
err() { echo "lint-matrix: $*"; bad=1; }

declare -A check_of=()
for s in "${scripts[@]}"; do
	check=$(lanes_of "$s" check 2>&1) || { err "$check"; continue; }
	all=$(lanes_of "$s" all 2>&1) || { err "$all"; continue; }
	check_of[$s]=$check
	while read -r l; do
		grep -qx "$l" <<< "$all" || err "$s: check lane '${l/ //}' is not among its all= lanes"
	done <<< "$check"
	grep -q "^$newest " <<< "$check" || err "$s: make check does not run it on $newest"
done

for t in $LANE_TRANSPORTS; do
	for kind in orfs mxbd; do
		found=
		for s in "${!check_of[@]}"; do
			case $(basename "$s") in "$kind"*) ;; *) continue ;; esac
			grep -q " $t\$" <<< "${check_of[$s]}" && found=$s
		done
		[ -n "$found" ] || err "make check runs no $kind script over $t"
	done
done

# The compatibility branches: conditionals in our kernel code on anything
# but header guards, CONFIG_ options and __KERNEL__.
mapfile -t kfiles < <(git ls-files -co --exclude-standard -- \
	'knet/*.[ch]' 'regcache/*.[ch]' 'orfs/*.[ch]' 'mxbd/*.[ch]')
mapfile -t used < <(grep -hE '^\s*#\s*(if|ifdef|ifndef|elif)\b' "${kfiles[@]}" |
	sed -E 's/^\s*#\s*(if|ifdef|ifndef|elif)\b//; s/defined//g' |
	grep -oE '\b[A-Z_][A-Z0-9_]*\b' |
	grep -vE '^(CONFIG_.*|__KERNEL__|TRACE_HEADER_MULTI_READ|_?[A-Z0-9_]+_H_?)$' | sort -u)
list=tests/compat-branches
for m in "${used[@]}"; do
	line=$(grep -E "^$m\s" "$list" || true)
	if [ -z "$line" ]; then
		err "$m: a compatibility branch that $list does not list with the 6.1 scripts that run it"
		continue
	fi
	read -r _ names _ <<< "$line"
	IFS=, read -r -a names <<< "$names"
	for n in "${names[@]}"; do
		s=tests/guest/$n.sh
		[ -f "$s" ] || { err "$list: $m names $n, which is no guest script"; continue; }
		grep -q '^6\.1 ' <<< "${check_of[$s]:-}" || err "$list: $m is run by $n, which make check does not run on 6.1"
	done
done
while read -r m _; do
	[[ "$m" == \#* || -z "$m" ]] && continue
	printf '%s\n' "${used[@]}" | grep -qx "$m" || err "$list: $m is no longer in the kernel code"
done < "$list"

# The matrix in testbed.md, between its markers, is the headers' own.
doc=Documentation/testbed.md
if ! diff <(table) <(sed -n '/^<!-- matrix: begin/,/^<!-- matrix: end/p' "$doc" | sed '1d;$d') > /dev/null; then
	err "$doc: the matrix differs from the scripts' lanes (scripts/lint-matrix.sh --table prints it)"
fi

[ "$bad" = 0 ] || exit 1
echo "lint: the test matrix of ${#scripts[@]} scripts keeps its rules; ${#used[@]} compatibility branches run on 6.1"
