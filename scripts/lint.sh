#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/lint.sh (make lint): checkpatch and kernel-doc over our kernel
# code, shellcheck over our shell scripts, man --warnings over our manual
# pages. checkpatch and kernel-doc are extracted at run time from Debian's
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

mapfile -t files < <(git ls-files -co --exclude-standard -- \
	'knet/*.[ch]' 'regcache/*.[ch]' 'orfs/*.[ch]' 'mxbd/*.[ch]' 'tests/kmod/*.[ch]')
[ ${#files[@]} -gt 0 ] || { echo "lint: no kernel sources found" >&2; exit 2; }
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

# Every script of ours, by its #! line, through shellcheck (warnings, errors).
command -v shellcheck > /dev/null || { echo "lint: shellcheck is not installed (run 'make deps')" >&2; exit 2; }
scripts=()
while IFS= read -r f; do
	[ -f "$f" ] && head -n 1 "$f" | grep -qE '^#!.*[/ ](ba)?sh( |$)' && scripts+=("$f")
done < <(git ls-files -co --exclude-standard -- ':!build')
shellcheck -x -S warning "${scripts[@]}"
echo "lint: shellcheck clean on ${#scripts[@]} scripts"

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
