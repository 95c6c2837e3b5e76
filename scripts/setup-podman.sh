#!/usr/bin/env bash
# setup-podman.sh — prepare a Debian host (as root) for IronVise's container
# tier without any registry access: install Podman and runc, make runc the
# OCI runtime and give containers explicit default ulimits, and build a small
# local busybox image from Debian's busybox-static.
#
# Usage: scripts/setup-podman.sh [IMAGE]   (default localhost/ironvise-busybox:latest)
#
# Why runc and explicit ulimits: on hosts with a hybrid cgroup hierarchy crun
# cannot start containers, and on hosts whose hard rlimits are capped below
# Podman's defaults the runtime fails with "error setting rlimit".
# Then:  ECTO_DOCKER_IMAGE=localhost/ironvise-busybox:latest ironvise sandbox doctor
set -euo pipefail

image=${1:-localhost/ironvise-busybox:latest}
export DEBIAN_FRONTEND=noninteractive

missing=()
for pkg in podman runc busybox-static; do
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "setup-podman: installing ${missing[*]}"
	apt-get update -qq >/dev/null || true
	apt-get install -y -qq "${missing[@]}" >/dev/null
fi

conf_dir=/etc/containers/containers.conf.d
mkdir -p "$conf_dir"
cat >"$conf_dir/60-ironvise.conf" <<'EOF'
# Written by IronVise's scripts/setup-podman.sh.
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]

[engine]
runtime = "runc"
EOF

# The probe the tier depends on: uid 65534 can write the /tmp tmpfs. runc
# gives the tmpfs the mode of the image's own /tmp (the mode= option is
# overridden), so an image whose /tmp is not world-writable — one imported
# from a root made with a plain mkdir, mode 0755 — is rebuilt.
probe() {
	podman run --rm --pull=never --network=none --read-only --read-only-tmpfs=false \
		--security-opt no-new-privileges --user 65534:65534 --memory 64m --memory-swap 64m --cpus 1 \
		--cap-drop ALL --tmpfs /tmp:rw,nosuid,nodev,size=8m,mode=1777 --log-driver passthrough \
		--ulimit nofile=64:64 --ulimit nproc=4096:4096 \
		"$image" sh -c 'test "$(id -u)" = 65534 && echo ok > /tmp/probe && test -s /tmp/probe' >/dev/null 2>&1
}

if podman image exists "$image" && probe; then
	echo "setup-podman: $image is ready"
	exit 0
fi

root=$(mktemp -d)
trap 'rm -rf "$root" "$root.tar"' EXIT
mkdir -p "$root/bin" "$root/etc" "$root/workspace" "$root/tmp" "$root/var/tmp"
chmod 0755 "$root" "$root/bin" "$root/etc" "$root/workspace"
chmod 1777 "$root/tmp" "$root/var/tmp"
install -m 0755 /bin/busybox "$root/bin/busybox"
for applet in $("$root/bin/busybox" --list); do
	[ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
chmod 0644 "$root/etc/passwd" "$root/etc/group"
tar --numeric-owner --owner=0 --group=0 -C "$root" -cf "$root.tar" .
podman rmi -f "$image" >/dev/null 2>&1 || true
podman import --quiet --change 'ENV PATH=/bin' --change 'CMD ["/bin/sh"]' "$root.tar" "$image" >/dev/null

if ! probe; then
	echo "setup-podman: $image was built but a hardened container does not run; see: podman run --rm --user 65534:65534 $image id" >&2
	exit 1
fi
echo "setup-podman: $image is ready"
