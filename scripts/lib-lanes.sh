# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
# The test matrix: on which kernels and transports each guest script runs.
#
# Each tests/guest/*.sh says it in its header, beside "# timeout:":
#
#   # lanes: check=6.12/rxe,6.1/tcp all=*
#
# "check=" lists the lanes of make check, "all=" those of make check-all
# (a superset). A lane is KERNEL/TRANSPORT: the kernel series 6.1 or 6.12,
# the transport rxe (RDMA over soft-RoCE), siw (RDMA over soft-iWARP) or
# tcp (knet's TCP transport, in a boot with soft-RoCE beside it); "*"
# stands for every kernel, every transport, or both ("*/rxe", "6.12/*",
# "*"). scripts/check.sh reads nothing else to plan its boots, and
# scripts/lint.sh checks the rules of Documentation/testbed.md ("The
# matrix") against these lines.

# shellcheck disable=SC2034 # read by the scripts that source this
LANE_KERNELS="6.1 6.12"
LANE_TRANSPORTS="rxe siw tcp"

# lanes_line SCRIPT: the script's "# lanes:" line, without its label
lanes_line() {
	sed -n 's/^# lanes: *//p' "$1" | head -n 1
}

# lanes_of SCRIPT KIND: the lanes of kind check or all that SCRIPT names,
# "KERNEL TRANSPORT" a line, each once; fails, saying why on stderr, when
# the header is missing or malformed
lanes_of() {
	local line spec item k t kk tt items=()
	line=$(lanes_line "$1")
	if [ -z "$line" ]; then
		echo "$1: no '# lanes:' line" >&2
		return 1
	fi
	if ! grep -qE "(^| )$2=" <<< "$line"; then
		echo "$1: its lanes name no $2= list" >&2
		return 1
	fi
	for spec in $line; do
		case $spec in
		check=* | all=*) ;;
		*) echo "$1: '$spec' in its lanes is neither check= nor all=" >&2; return 1 ;;
		esac
		[ "${spec%%=*}" = "$2" ] || continue
		IFS=, read -r -a items <<< "${spec#*=}"
		for item in "${items[@]}"; do
			[ "$item" = '*' ] && item='*/*'
			k=${item%%/*} t=${item#*/}
			if [ "$k" != '*' ] && [[ " $LANE_KERNELS " != *" $k "* ]] ||
			   [ "$t" != '*' ] && [[ " $LANE_TRANSPORTS " != *" $t "* ]] ||
			   [ "$item" = "$k" ]; then
				echo "$1: lane '$item' is not KERNEL/TRANSPORT ($LANE_KERNELS; $LANE_TRANSPORTS; or *)" >&2
				return 1
			fi
			for kk in $LANE_KERNELS; do
				[ "$k" = '*' ] || [ "$k" = "$kk" ] || continue
				for tt in $LANE_TRANSPORTS; do
					[ "$t" = '*' ] || [ "$t" = "$tt" ] || continue
					echo "$kk $tt"
				done
			done
		done
	done | sort -u -V
	[ "${PIPESTATUS[0]}" -eq 0 ]
}
