# SPDX-License-Identifier: GPL-2.0-only
# Host-side verdicts on a guest run (sourced by tests/harness/vm).

# Kernel log lines that fail a run whatever the scripts said.
BAD_KERNEL_LINES='WARNING:|BUG:|BUG [^ ]+ \((Not tainted|Tainted)|Oops|kernel BUG at|general protection fault|list_(add|del) corruption|list corruption|possible circular locking|possible recursive locking|inconsistent lock state|lockdep is turned off|INFO: task .* blocked for more than|soft lockup|hard LOCKUP|rcu_sched detected stall|rcu: INFO|Kernel panic|UBSAN:|refcount_t:|KASAN:|unreferenced object|suspected memory leak|ODEBUG:'

# bad_lines FILE: print the kernel log lines of FILE that fail a run
bad_lines() {
	[ -f "$1" ] || return 0
	grep -aE "$BAD_KERNEL_LINES" "$1" || true
}

# boot_failed_early RESULTS QEMU_RC: true when the guest's kernel died
# while booting, before the guest's init ran (it writes boot.dmesg before
# loading anything of ours), or when tests/harness/vm stopped a boot whose init
# had not started in time (the mark init-late), so before any module or
# script of ours: tests/harness/vm boots such a guest once more. Any other hang
# (QEMU killed, 137) or a crash after init is never retried.
boot_failed_early() {
	[ -e "$1/init-late" ] && return 0
	[ "$2" -ne 137 ] && [ ! -e "$1/boot.dmesg" ] &&
		grep -qaE 'Oops|Kernel panic|BUG:' "$1/console.log" 2>/dev/null
}

# verdicts RESULTS KVER QEMU_RC: print PASS/FAIL/SKIP per planned script,
# then write "passed failed skipped" to RESULTS/summary.
verdicts() {
	local res=$1 kver=$2 qrc=$3 pass=0 fail=0 skip=0
	local limit script name rc why bad step

	while read -r limit script name _; do
		name=${name:-$(basename "$script" .sh)}
		why=""
		if [ -f "$res/$name.frozen" ]; then
			why=$(cat "$res/$name.frozen")
		elif [ ! -f "$res/$name.rc" ]; then
			if [ "$qrc" -eq 137 ]; then
				why="guest hung or exceeded its time limit (console log: $res/console.log)"
			else
				why="guest stopped before the script finished (qemu exit $qrc, console log: $res/console.log)"
			fi
		else
			rc=$(cat "$res/$name.rc")
			case "$rc" in
			0) ;;
			77) ;;
			124) why="timed out after ${limit}s" ;;
			137) if [ "$(cat "$res/$name.ms" 2>/dev/null || echo 0)" -ge $((limit * 1000)) ]; then
				why="timed out after ${limit}s and was killed"
			else
				why="killed (exit 137)"
			fi ;;
			*) why="exit code $rc" ;;
			esac
		fi
		bad=$(bad_lines "$res/$name.dmesg")
		[ -n "$bad" ] && why="${why:+$why; }kernel log has bad lines"
		if [ -z "$why" ] && [ "$(cat "$res/$name.rc")" = 77 ]; then
			echo "SKIP $kver $name: $(grep '^SKIP:' "$res/$name.log" | tail -n 1 | sed 's/^SKIP: *//')"
			skip=$((skip + 1))
		elif [ -z "$why" ]; then
			echo "PASS $kver $name ($(cat "$res/$name.log" 2>/dev/null | grep -cE '^ok [0-9]+ - ') steps, $(cat "$res/$name.ms" 2>/dev/null || echo '?') ms)"
			pass=$((pass + 1))
		else
			# The step that failed, as the script's TAP lines say.
			step=$(grep -m1 '^not ok ' "$res/$name.log" 2>/dev/null) || step=
			echo "FAIL $kver $name: $why${step:+ ($step)}"
			[ -f "$res/$name.log" ] && tail -n 25 "$res/$name.log" | sed 's/^/    | /'
			[ -n "$bad" ] && echo "$bad" | head -n 20 | sed 's/^/    ! /'
			fail=$((fail + 1))
		fi
	done < "$res/plan"

	# Lines in the console log that no script's segment explains (boot,
	# shutdown, or a guest that hung before saving its segment), of every
	# boot but one retried for failing before our init (console-boot1.log).
	bad=$(for f in "$res"/console.log "$res"/console-freeze*.log "$res"/boot.dmesg "$res"/boot-freeze*.dmesg; do
		bad_lines "$f"
	done)
	if [ -n "$bad" ]; then
		echo "FAIL $kver kernel-log: the guest kernel log has bad lines"
		echo "$bad" | head -n 20 | sed 's/^/    ! /'
		fail=$((fail + 1))
	fi
	echo "$pass $fail $skip" > "$res/summary"
}

# guest_run SPEC KVER RDMA SCRIPT...: for make check and make check-debug,
# one guest boot of kernel SPEC (tests/harness/vm --kernel), version KVER, over
# RDMA (rxe or siw), or over knet's TCP transport when GUEST_TRANSPORT=tcp;
# its verdicts are added to the caller's pass, fail and skip, its output
# kept in $log/guest-KVER-RDMA[-tcp].log
guest_run() {
	local spec=$1 v=$2 rdma=$3 tr=${GUEST_TRANSPORT:-rdma} gp gf gs
	local sfx=$3${GUEST_TRANSPORT:+-$GUEST_TRANSPORT}
	local res=build/vm/$2/results-$sfx
	shift 3
	[ $# -gt 0 ] || return 0
	echo "== in-guest tests on $v over $rdma${GUEST_TRANSPORT:+, knet over $tr}"
	tests/harness/vm run --kernel "$spec" --rdma "$rdma" --transport "$tr" --results "$res" "$@" |
		tee "$log/guest-$v-$sfx.log"
	if [ -f "$res/summary" ]; then
		read -r gp gf gs < "$res/summary"
		pass=$((pass + gp)); fail=$((fail + gf)); skip=$((skip + gs))
	else
		echo "FAIL in-guest tests on $v over $rdma: the harness produced no summary"
		fail=$((fail + 1))
	fi
}
