#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scripts/deps.sh (make deps): install with apt-get everything the project
# builds, tests and benchmarks with, on Debian 12 (bookworm). Idempotent;
# when everything is present it only checks and returns in well under a
# second. Needs root (or sudo) only when something is missing.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/lib-kernel.sh
. "$here/lib-kernel.sh"

# The 6.1 kernel is bookworm's default; 6.12 comes from bookworm-backports
# (bookworm's security suite carries the same 6.12 meta packages).
PACKAGES=(
	linux-image-amd64 linux-headers-amd64
	linux-image-6.12-amd64 linux-headers-6.12-amd64
	linux-source-6.1 linux-source-6.12
	build-essential bc kmod cpio xz-utils zstd sparse flex bison libelf-dev
	qemu-system-x86 busybox-static
	rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest
	libibverbs-dev librdmacm-dev libfabric-dev libfabric-bin
	libssl-dev libcunit1-dev clang-14 libfuzzer-14-dev libclang-rt-14-dev liburing-dev
	fio e2fsprogs xfsprogs iproute2 procps util-linux python3 nfs-kernel-server dmsetup udev keyutils
	shellcheck man-db groff-base dkms debhelper dh-dkms lintian
)

BACKPORTS=/etc/apt/sources.list.d/orfs-bookworm-backports.sources

missing=()
for p in "${PACKAGES[@]}"; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[ "$st" = "install ok installed" ] || missing+=("$p")
done

have_kernel() { resolve_kernel "$1" >/dev/null; }

# source_pins: "linux-source-X.Y=VERSION" for each series whose source
# package is not the version of the kernel image the guests boot. The siw
# driver (build-siw.sh) and the debug kernel are built from those sources
# and must match the image; the registry may publish a series' newer
# sources before its newer image.
source_pins() {
	local k kver want have
	for k in 6.1 6.12; do
		kver=$(resolve_kernel "$k") || continue
		want=$(dpkg-query -W -f='${Version}' "linux-image-$kver" 2>/dev/null) || continue
		have=$(dpkg-query -W -f='${Version}' "linux-source-$k" 2>/dev/null || true)
		[ "$want" = "$have" ] || echo "linux-source-$k=$want"
	done
}

if [ ${#missing[@]} -eq 0 ] && have_kernel 6.1 && have_kernel 6.12 && [ -z "$(source_pins)" ]; then
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null; then
		exec sudo "$0" "$@"
	fi
	mapfile -t pins < <(source_pins)
	need=("${missing[@]}" "${pins[@]}")
	echo "deps: missing packages (${need[*]}) and not root: run 'make deps' as root" >&2
	exit 1
fi

. /etc/os-release
if [ "${VERSION_CODENAME:-}" != bookworm ]; then
	echo "deps: this setup step knows Debian 12 (bookworm); this is ${PRETTY_NAME:-unknown}" >&2
	exit 1
fi

if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
	echo "deps: adding the bookworm-backports suite ($BACKPORTS)"
	cat > "$BACKPORTS" <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
fi

echo "deps: installing ${missing[*]:-kernel packages}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q -o Dpkg::Use-Pty=0 || echo "deps: apt-get update reported errors; going on with the lists it has" >&2
apt-get install -y -q --no-install-recommends -o Dpkg::Use-Pty=0 "${PACKAGES[@]}"

for k in 6.1 6.12; do
	have_kernel "$k" || { echo "deps: the $k kernel image or headers did not install" >&2; exit 1; }
done
mapfile -t pins < <(source_pins)
if [ ${#pins[@]} -gt 0 ]; then
	echo "deps: kernel sources to match the images: ${pins[*]}"
	apt-get install -y -q --no-install-recommends --allow-downgrades -o Dpkg::Use-Pty=0 \
		"${pins[@]}" ||
		echo "deps: could not install ${pins[*]}; the siw driver and the debug kernel need them" >&2
fi
echo "deps: ready; kernels: $(list_kernels | tr '\n' ' ')"
