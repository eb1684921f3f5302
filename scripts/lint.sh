#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/lint.sh (make lint): checkpatch and kernel-doc over our kernel
# code, shellcheck over our shell scripts, man --warnings over our manual
# pages, the test matrix's rules (scripts/lint-matrix.sh). checkpatch and
# kernel-doc are extracted at run time from Debian's
# linux-source-6.1 package into build/ and never committed. Exits non-zero
# on any error or warning.
set -euo pipefail
cd "$(dirname "$0")/.."

tarball=$(ls /usr/src/linux-source-6.1.tar.* 2>/dev/null | head -n 1 || true)
[ -n "$tarball" ] || { echo "lint: linux-source-6.1 is not installed (run 'make deps')" >&2; exit 2; }
cp_dir=build/checkpatch
if [ ! -x "$cp_dir/scripts/kernel-doc" ] || [ "$tarball" -nt "$cp_dir/scripts/checkpatch.pl" ]; then
	rm -rf "$cp_dir"
	mkdir -p "$cp_dir"
	tar -xf "$tarball" -C "$cp_dir" --strip-components=1 --wildcards \
		'*/scripts/checkpatch.pl' '*/scripts/spelling.txt' \
		'*/scripts/const_structs.checkpatch' '*/scripts/kernel-doc'
fi

# A check that passed on exactly these files (and this script and the
# checker) is not run again: a warm make check-quick takes seconds. The
# marks are in build/lint-passed/, one a check, named by a digest of all
# it read; any change to them runs the check again.
passed=build/lint-passed
mkdir -p "$passed"
# digest FILE...: one digest of this script and the files' names and bytes
digest() { { cat "$0"; for f in "$@"; do echo "$f"; cat "$f"; done; } | sha256sum | cut -c1-64; }
# passed_before NAME DIGEST: NAME passed on what DIGEST covers
passed_before() { [ -e "$passed/$1-$2" ]; }
# passed_now NAME DIGEST: record it (and forget the older ones)
passed_now() { rm -f "$passed/$1"-*; : > "$passed/$1-$2"; }

mapfile -t files < <(git ls-files -co --exclude-standard -- \
	'knet/*.[ch]' 'regcache/*.[ch]' 'orfs/*.[ch]' 'mxbd/*.[ch]' 'tests/kmod/*.[ch]')
[ ${#files[@]} -gt 0 ] || { echo "lint: no kernel sources found" >&2; exit 2; }
k=$(digest "$cp_dir/scripts/checkpatch.pl" "$cp_dir/scripts/kernel-doc" "${files[@]}")
if passed_before kernel "$k"; then
	echo "lint: checkpatch and kernel-doc clean on ${#files[@]} files (unchanged since they passed)"
else
	# Tracepoint headers keep the TRACE_EVENT() layout the kernel's own use,
	# which --strict reads as misaligned or open-ended lines: those two checks
	# are off for them, every other check stays.
	plain=() trace=()
	for f in "${files[@]}"; do
		case $f in
		*_trace.h) trace+=("$f") ;;
		*) plain+=("$f") ;;
		esac
	done
	"$cp_dir/scripts/checkpatch.pl" --no-tree --strict --quiet --show-types \
		--max-line-length=100 -f "${plain[@]}"
	if [ ${#trace[@]} -gt 0 ]; then
		"$cp_dir/scripts/checkpatch.pl" --no-tree --strict --quiet --show-types \
			--max-line-length=100 --ignore PARENTHESIS_ALIGNMENT,OPEN_ENDED_LINE \
			-f "${trace[@]}"
	fi
	echo "lint: checkpatch clean on ${#files[@]} files"

	# kernel-doc: every documented function and structure says what each of
	# its parameters and members is (warnings only; no output is made).
	kdoc=$("$cp_dir/scripts/kernel-doc" -none "${files[@]}" 2>&1)
	[ -z "$kdoc" ] || { echo "$kdoc"; echo "lint: kernel-doc warnings" >&2; exit 1; }
	echo "lint: kernel-doc clean on ${#files[@]} files"
	passed_now kernel "$k"
fi

# Every script of ours, by its #! line, through shellcheck (warnings, errors).
command -v shellcheck > /dev/null || { echo "lint: shellcheck is not installed (run 'make deps')" >&2; exit 2; }
scripts=()
while IFS= read -r f; do
	[ -f "$f" ] && head -n 1 "$f" | grep -qE '^#!.*[/ ](ba)?sh( |$)' && scripts+=("$f")
done < <(git ls-files -co --exclude-standard -- ':!build')
# What they source (tests/guest/lib.sh, common/*.sh) counts too.
mapfile -t sourced < <(git ls-files -co --exclude-standard -- '*.sh' ':!build')
k=$(digest "$(command -v shellcheck)" "${scripts[@]}" "${sourced[@]}")
if passed_before shellcheck "$k"; then
	echo "lint: shellcheck clean on ${#scripts[@]} scripts (unchanged since they passed)"
else
	shellcheck -x -S warning "${scripts[@]}"
	passed_now shellcheck "$k"
	echo "lint: shellcheck clean on ${#scripts[@]} scripts"
fi

# Every manual page through man's own check (troff's warnings go to
# stderr; man exits 0 with them, so any output is a failure).
command -v man > /dev/null || { echo "lint: man is not installed (run 'make deps')" >&2; exit 2; }
pages=(Documentation/man/*.[1-8])
bad=0
for p in "${pages[@]}"; do
	w=$(MANWIDTH=80 man --warnings -l "$p" 2>&1 > /dev/null) || { echo "$p: man failed: $w"; bad=1; continue; }
	[ -z "$w" ] || { echo "$p: $w"; bad=1; }
done
[ "$bad" = 0 ] || { echo "lint: manual page warnings" >&2; exit 1; }
echo "lint: man --warnings clean on ${#pages[@]} pages"

# The test matrix: every guest script's lanes, the transports make check
# covers, the compatibility branches 6.1 runs, testbed.md's table.
scripts/lint-matrix.sh
