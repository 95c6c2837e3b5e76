#!/usr/bin/env bash
# build-image.sh — build IronVise's own container image (the Containerfile at
# the repository root) without pulling from any registry.
#
# Usage: scripts/build-image.sh [IMAGE]        (default localhost/ironvise:latest)
#
# 1. Builds the static linux binary (CGO_ENABLED=0, -trimpath) into
#    bin/image/ironvise; bin/image is the build context, so nothing else of
#    the checkout is sent to the engine (podman and docker alike).
# 2. Picks the base: $BASE when set (e.g. BASE=docker.io/library/debian:bookworm-slim
#    with registry access); otherwise a small local base,
#    localhost/ironvise-base:bookworm, assembled once from Debian packages
#    (apt-get download + dpkg -x, so only the configured Debian mirror is
#    needed) and imported with `podman import`, the way
#    scripts/setup-podman.sh imports its busybox image. REBUILD_BASE=1
#    assembles it again.
# 3. podman build --pull=never (ENGINE=docker uses docker instead).
#
# Environment: GO (default go), GOARCH (default the Go toolchain's),
# LDFLAGS (the Makefile passes its version stamp), ENGINE, BASE,
# REBUILD_BASE, DEB_CACHE (default /var/tmp/ironvise-image-debs).
set -euo pipefail
cd "$(dirname "$0")/.."

image=${1:-localhost/ironvise:latest}
engine=${ENGINE:-podman}
go_cmd=${GO:-go}
base_local=localhost/ironvise-base:bookworm
deb_cache=${DEB_CACHE:-/var/tmp/ironvise-image-debs}

# The base's packages: busybox-static is the shell and the core utilities (sh,
# ls, cat, ps, wget …, one static binary); perl-base (with the C library it
# links against) lets `sandbox doctor` attempt the socket and ptrace escapes
# instead of reporting them "(not probed)"; ca-certificates is the trust store
# for HTTPS model endpoints; libc-bin is taken only for the C.UTF-8 locale
# (the sandbox sets LANG=C.UTF-8, and perl warns on every start without it).
base_pkgs=(libc6 libgcc-s1 libcrypt1 perl-base busybox-static ca-certificates libc-bin)

command -v "$engine" >/dev/null 2>&1 || {
	echo "build-image: $engine is not installed; install it (Debian: scripts/setup-podman.sh) or set ENGINE=docker" >&2
	exit 1
}

echo "build-image: building the static linux binary"
mkdir -p bin/image
GO="$go_cmd" GOOS=linux GOARCH=${GOARCH:-$("$go_cmd" env GOARCH)} LDFLAGS="${LDFLAGS:--s -w}" \
	./scripts/build-ironvise.sh bin/image/ironvise

build_base() {
	command -v apt-get >/dev/null 2>&1 && command -v dpkg >/dev/null 2>&1 || {
		echo "build-image: no local base image and no apt-get/dpkg to assemble one; set BASE to an image you can pull (e.g. BASE=docker.io/library/debian:bookworm-slim)" >&2
		exit 1
	}
	echo "build-image: assembling $base_local from Debian packages: ${base_pkgs[*]}"
	mkdir -p "$deb_cache"
	# The debs are kept in $deb_cache, so a second build needs no network.
	local pkg missing=()
	for pkg in "${base_pkgs[@]}"; do
		compgen -G "$deb_cache/${pkg}_*.deb" >/dev/null || missing+=("$pkg")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		if ! (cd "$deb_cache" && apt-get download -qq "${missing[@]}" 2>/dev/null); then
			apt-get update -qq >/dev/null
			(cd "$deb_cache" && apt-get download -qq "${missing[@]}")
		fi
	fi
	local root
	root=$(mktemp -d)
	# shellcheck disable=SC2064 # expand $root now: it is local
	trap "rm -rf '$root' '$root.tar' '$root.libc-bin'" EXIT
	for pkg in "${base_pkgs[@]}"; do
		# The newest version in the cache, should several be there.
		local deb
		deb=$(ls -1 "$deb_cache/${pkg}"_*.deb | sort -V | tail -n 1)
		if [ "$pkg" = libc-bin ]; then
			mkdir -p "$root.libc-bin" "$root/usr/lib/locale"
			dpkg -x "$deb" "$root.libc-bin"
			cp -a "$root.libc-bin/usr/lib/locale/C.utf8" "$root/usr/lib/locale/"
			rm -rf "$root.libc-bin"
		else
			dpkg -x "$deb" "$root"
		fi
	done
	mkdir -p "$root/bin" "$root/etc/ssl/certs" "$root/tmp" "$root/var/tmp" "$root/root"
	chmod 1777 "$root/tmp" "$root/var/tmp"
	chmod 0700 "$root/root"
	local applet
	for applet in $("$root/bin/busybox" --list); do
		[ "$applet" = busybox ] || [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
	done
	# What update-ca-certificates would write: the one PEM bundle Go reads.
	cat "$root"/usr/share/ca-certificates/mozilla/*.crt >"$root/etc/ssl/certs/ca-certificates.crt"
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' >"$root/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
	chmod 0644 "$root/etc/passwd" "$root/etc/group" "$root/etc/ssl/certs/ca-certificates.crt"
	# Documentation, manuals and locales are not needed to run a command.
	rm -rf "$root/usr/share/doc" "$root/usr/share/man" "$root/usr/share/lintian" "$root/usr/share/locale"
	tar --numeric-owner --owner=0 --group=0 -C "$root" -cf "$root.tar" .
	"$engine" rmi -f "$base_local" >/dev/null 2>&1 || true
	"$engine" import --quiet --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' --change 'CMD ["/bin/sh"]' \
		"$root.tar" "$base_local" >/dev/null
	rm -rf "$root" "$root.tar"
	trap - EXIT
}

base=${BASE:-}
if [ -z "$base" ]; then
	base=$base_local
	if [ "${REBUILD_BASE:-0}" = 1 ] || ! "$engine" image inspect "$base" >/dev/null 2>&1; then
		build_base
	fi
fi

# podman would otherwise try a registry for a localhost/ name it lacks;
# docker builds on a local image without asking.
pull=()
[ -z "${BASE:-}" ] && [ "$engine" = podman ] && pull=(--pull=never)
echo "build-image: $engine build $image on $base"
old=$("$engine" image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
"$engine" build --quiet "${pull[@]}" --build-arg "BASE=$base" -f Containerfile -t "$image" bin/image >/dev/null
# The image this tag named before is left without a name; remove it so that
# repeated builds (every CI run) do not pile up. A container still using it
# keeps it.
new=$("$engine" image inspect --format '{{.Id}}' "$image")
if [ -n "$old" ] && [ "$old" != "$new" ]; then
	"$engine" rmi "$old" >/dev/null 2>&1 || true
fi
echo "build-image: $image is ready ($("$engine" image inspect --format '{{.Size}}' "$image") bytes)"
