#!/usr/bin/env bash
# provision-firecracker.sh — install a root filesystem (and, if asked, a guest
# kernel) for IronVise's Firecracker tier
# (docs/design/sandbox.md#firecracker-tier).
#
#   scripts/provision-firecracker.sh --rootfs busybox [--prefix DIR] [--guest PATH]
#   scripts/provision-firecracker.sh [--prefix DIR]            # tries the official CI rootfs first
#
# --rootfs busybox builds, offline and without root, a minimal root filesystem:
# Debian's static busybox, and IronVise's guest init (cmd/ironvise-guest) as
# /init, which implements the guest protocol. mkfs.ext4 -d writes the image;
# nothing is mounted.
#
# Without --rootfs busybox the script first downloads the Firecracker
# project's official Ubuntu CI rootfs. That image does NOT implement the
# IronVise guest protocol: every command run with it produces no result and is
# aborted (fail-closed). Only if that download fails does the script fall back
# to busybox, and it says so. An existing rootfs is never overwritten: delete
# it and re-run (or pass --force).
#
# Options:
#   --rootfs busybox|official  what to install (default: official, else busybox)
#   --prefix DIR               install into DIR (default /opt/ectoledger)
#   --guest PATH               the guest init to install (default: build it with go)
#   --busybox PATH             a static busybox (default /bin/busybox, from busybox-static)
#   --kernel-url URL           also download a guest kernel to DIR/vmlinux
#   --official-url URL         where the official rootfs is (default: Firecracker CI v1.7)
#   --force                    replace an existing DIR/rootfs.ext4
set -euo pipefail

prefix=/opt/ectoledger
mode=""
guest=""
busybox=/bin/busybox
kernel_url=""
force=0
arch=$(uname -m)
official_url="https://s3.amazonaws.com/spec.ccfc.min/firecracker-ci/v1.7/${arch}/ubuntu-22.04.ext4"
official_kernel_url="https://s3.amazonaws.com/spec.ccfc.min/firecracker-ci/v1.7/${arch}/vmlinux-5.10.204"

die() { echo "provision-firecracker: $*" >&2; exit 1; }
warn() { echo "provision-firecracker: WARNING: $*" >&2; }
say() { echo "provision-firecracker: $*"; }

while [ $# -gt 0 ]; do
	case "$1" in
	--rootfs) [ $# -ge 2 ] || die "--rootfs needs busybox or official"; mode=$2; shift 2 ;;
	--rootfs=*) mode=${1#*=}; shift ;;
	--prefix) [ $# -ge 2 ] || die "--prefix needs a directory"; prefix=$2; shift 2 ;;
	--prefix=*) prefix=${1#*=}; shift ;;
	--guest) [ $# -ge 2 ] || die "--guest needs a path"; guest=$2; shift 2 ;;
	--busybox) [ $# -ge 2 ] || die "--busybox needs a path"; busybox=$2; shift 2 ;;
	--kernel-url) [ $# -ge 2 ] || die "--kernel-url needs a URL"; kernel_url=$2; shift 2 ;;
	--official-url) [ $# -ge 2 ] || die "--official-url needs a URL"; official_url=$2; shift 2 ;;
	--force) force=1; shift ;;
	-h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
done
case "$mode" in "" | busybox | official) ;; *) die "--rootfs '$mode': accepted values are busybox and official" ;; esac

rootfs="$prefix/rootfs.ext4"
mkdir -p "$prefix" || die "cannot create $prefix (run as root, or choose --prefix)"

# An existing rootfs stays: it may be the operator's own.
if [ -e "$rootfs" ] && [ $force -eq 0 ]; then
	if command -v debugfs >/dev/null && debugfs -R "cat /etc/ironvise-rootfs" "$rootfs" 2>/dev/null | grep -q '^ironvise-guest-protocol'; then
		say "$rootfs is already installed and implements the IronVise guest protocol; nothing to do"
	else
		warn "$rootfs is already installed and is NOT an IronVise busybox rootfs: commands run with it are aborted (no framed result)."
		warn "delete it and re-run with --rootfs busybox (or pass --force)."
	fi
	exit 0
fi

fetch() { # fetch URL FILE
	curl -fsSL --retry 2 --connect-timeout 15 -o "$2" "$1"
}

# build_busybox writes the busybox rootfs to $rootfs.
build_busybox() {
	command -v mkfs.ext4 >/dev/null || die "mkfs.ext4 not found: apt-get install e2fsprogs"
	[ -x "$busybox" ] || die "$busybox not found: apt-get install busybox-static (or pass --busybox PATH)"
	if ldd "$busybox" >/dev/null 2>&1; then
		die "$busybox is dynamically linked; the guest has no libc: apt-get install busybox-static"
	fi
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	if [ -z "$guest" ]; then
		command -v go >/dev/null || die "no --guest given and no go tool to build cmd/ironvise-guest"
		repo=$(cd "$(dirname "$0")/.." && pwd)
		case "$arch" in x86_64) goarch=amd64 ;; aarch64) goarch=arm64 ;; *) die "unsupported architecture $arch" ;; esac
		say "building the guest init (cmd/ironvise-guest, static, linux/$goarch)"
		(cd "$repo" && CGO_ENABLED=0 GOOS=linux GOARCH=$goarch go build -trimpath -ldflags "-s -w" -o "$work/ironvise-guest" ./cmd/ironvise-guest) ||
			die "building the guest failed"
		guest="$work/ironvise-guest"
	fi
	[ -f "$guest" ] || die "guest init $guest not found"
	if ldd "$guest" >/dev/null 2>&1; then
		die "$guest is dynamically linked; build it with CGO_ENABLED=0"
	fi

	root="$work/root"
	# /workspace is the command's (empty, read-only) working directory.
	mkdir -p "$root"/{bin,sbin,etc,dev,proc,sys,tmp,root,usr/bin,usr/sbin,workspace}
	chmod 0755 "$root" "$root"/{bin,sbin,etc,dev,proc,sys,root,usr,usr/bin,usr/sbin,workspace}
	chmod 1777 "$root/tmp"
	install -m 0755 "$guest" "$root/init"
	install -m 0755 "$busybox" "$root/bin/busybox"
	for applet in $("$busybox" --list); do
		[ "$applet" = busybox ] || ln -s busybox "$root/bin/$applet"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' >"$root/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
	guest_sum=$(sha256sum "$guest" | cut -d' ' -f1)
	printf 'ironvise-guest-protocol v1\nguest-sha256 %s\nbusybox %s\n' "$guest_sum" "$("$busybox" 2>&1 | head -n 1)" >"$root/etc/ironvise-rootfs"
	chmod 0644 "$root"/etc/*

	# Image size: the contents plus room for ext4's metadata.
	kib=$(du -sk "$root" | cut -f1)
	kib=$((kib + kib / 4 + 8192))
	[ $kib -ge 16384 ] || kib=16384
	tmpimg="$prefix/.rootfs.ext4.$$"
	mkfs.ext4 -q -F -L ironvise-root -O ^has_journal -E root_owner=0:0 -d "$root" "$tmpimg" "${kib}k" >/dev/null ||
		die "mkfs.ext4 -d failed (e2fsprogs 1.43 or newer is needed)"
	# Built as an ordinary user, the files carry that user's uid: make
	# everything root's, as in any root filesystem.
	if [ "$(id -u)" != 0 ] && command -v debugfs >/dev/null; then
		(cd "$root" && find . -mindepth 1 | sed 's|^\.||') | while read -r p; do
			printf 'set_inode_field %s uid 0\nset_inode_field %s gid 0\n' "$p" "$p"
		done >"$work/owners"
		debugfs -w -f "$work/owners" "$tmpimg" >/dev/null 2>&1 || warn "could not make the files root-owned"
	fi
	mv -f "$tmpimg" "$rootfs"
	say "installed $rootfs (busybox root filesystem, /init = IronVise guest init sha256 $guest_sum)"
}

install_official() {
	say "downloading the Firecracker project's official CI rootfs from $official_url"
	tmp="$prefix/.rootfs.ext4.download.$$"
	if fetch "$official_url" "$tmp"; then
		mv -f "$tmp" "$rootfs"
		warn "installed the official CI rootfs at $rootfs. It does NOT implement the IronVise guest protocol:"
		warn "every command run with it produces no framed result and is aborted (fail-closed)."
		warn "for a working Firecracker tier: rm $rootfs && $0 --rootfs busybox --prefix $prefix"
		return 0
	fi
	rm -f "$tmp"
	return 1
}

case "$mode" in
busybox) build_busybox ;;
official) install_official || die "downloading the official rootfs failed" ;;
"")
	if ! install_official; then
		warn "downloading the official rootfs failed; falling back to the busybox rootfs"
		build_busybox
	fi
	;;
esac

# The kernel: downloaded only when asked, or together with the official rootfs.
if [ ! -e "$prefix/vmlinux" ]; then
	url=$kernel_url
	[ -n "$url" ] || [ "$mode" = busybox ] || url=$official_kernel_url
	if [ -n "$url" ]; then
		if fetch "$url" "$prefix/.vmlinux.$$"; then
			mv -f "$prefix/.vmlinux.$$" "$prefix/vmlinux"
			say "installed the guest kernel $prefix/vmlinux from $url"
		else
			rm -f "$prefix/.vmlinux.$$"
			warn "downloading the guest kernel from $url failed"
		fi
	fi
	[ -e "$prefix/vmlinux" ] || say "no guest kernel at $prefix/vmlinux yet: install an uncompressed vmlinux with virtio-blk, ext4 and an 8250 serial console (e.g. --kernel-url $official_kernel_url), or set ECTO_FC_KERNEL"
fi
say "next: export ECTO_FC_BINARY=/usr/local/bin/firecracker ECTO_FC_KERNEL=$prefix/vmlinux ECTO_FC_ROOTFS=$rootfs; ironvise sandbox doctor"
