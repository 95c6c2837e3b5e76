#!/usr/bin/env bash
# setup-firecracker.sh — install the Firecracker project's "hello" guest kernel
# and root filesystem, and optionally boot them once.
#
#   scripts/setup-firecracker.sh [--prefix DIR] [--check FIRECRACKER]
#
# THIS IS A PLUMBING TEST ONLY. It shows that KVM, the firecracker binary, a
# guest kernel and block devices work on this host. The hello rootfs contains
# no IronVise guest agent and executes no intent: a Firecracker tier pointed
# at it aborts every command. For the tier itself use
# scripts/provision-firecracker.sh --rootfs busybox.
#
# Options:
#   --prefix DIR        install into DIR (default /opt/ectoledger): hello-vmlinux.bin, hello-rootfs.ext4
#   --base-url URL      where the images are (default: the Firecracker project's S3 bucket)
#   --check BINARY      boot the hello image with this firecracker binary for a few seconds
#                       and report whether the guest kernel started
set -euo pipefail

prefix=/opt/ectoledger
base_url="https://s3.amazonaws.com/spec.ccfc.min/img/hello"
check=""

die() { echo "setup-firecracker: $*" >&2; exit 1; }
say() { echo "setup-firecracker: $*"; }

while [ $# -gt 0 ]; do
	case "$1" in
	--prefix) [ $# -ge 2 ] || die "--prefix needs a directory"; prefix=$2; shift 2 ;;
	--base-url) [ $# -ge 2 ] || die "--base-url needs a URL"; base_url=$2; shift 2 ;;
	--check) [ $# -ge 2 ] || die "--check needs the firecracker binary"; check=$2; shift 2 ;;
	-h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
done

[ "$(uname -m)" = x86_64 ] || die "the hello images exist for x86_64 only"
mkdir -p "$prefix" || die "cannot create $prefix (run as root, or choose --prefix)"
kernel="$prefix/hello-vmlinux.bin"
rootfs="$prefix/hello-rootfs.ext4"

for pair in "kernel/hello-vmlinux.bin:$kernel" "fsfiles/hello-rootfs.ext4:$rootfs"; do
	src=${pair%%:*} dst=${pair#*:}
	if [ -s "$dst" ]; then
		say "$dst is already there"
		continue
	fi
	say "downloading $base_url/$src"
	curl -fsSL --retry 2 --connect-timeout 15 -o "$dst.part" "$base_url/$src" ||
		{ rm -f "$dst.part"; die "download of $base_url/$src failed (no network? pass --base-url)"; }
	mv -f "$dst.part" "$dst"
done
say "installed $kernel and $rootfs"
say "PLUMBING TEST ONLY: this rootfs has no IronVise guest agent and executes no intent."
say "for the Firecracker tier run: scripts/provision-firecracker.sh --rootfs busybox --prefix $prefix"

[ -n "$check" ] || exit 0
[ -x "$check" ] || die "--check $check: not an executable"
[ -r /dev/kvm ] && [ -w /dev/kvm ] || die "/dev/kvm is missing or not read-writable for $(id -un): load kvm_intel/kvm_amd, add the user to the kvm group"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$rootfs" "$work/rootfs.ext4"
cat >"$work/config.json" <<EOF
{
  "boot-source": {"kernel_image_path": "$kernel", "boot_args": "console=ttyS0 reboot=k panic=1 pci=off"},
  "drives": [{"drive_id": "rootfs", "path_on_host": "$work/rootfs.ext4", "is_root_device": true, "is_read_only": false}],
  "machine-config": {"vcpu_count": 1, "mem_size_mib": 128}
}
EOF
say "booting the hello image for up to 10 s with $check"
timeout 10 "$check" --no-api --config-file "$work/config.json" </dev/null >"$work/serial.log" 2>&1 || true
if grep -qE "Linux version|login:" "$work/serial.log"; then
	say "plumbing OK: the guest kernel booted (KVM, firecracker, kernel and block device work)"
else
	tail -n 20 "$work/serial.log" >&2
	die "the guest did not boot within 10 s (nested virtualization or KVM not working?)"
fi
