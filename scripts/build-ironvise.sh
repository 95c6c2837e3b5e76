#!/usr/bin/env bash
# Builds ./cmd/ironvise into OUT, static (no cgo), with the native tier's
# sandbox launcher embedded when the target is Linux
# (internal/sandbox/native/launcherbin has why and how it is trusted).
#
#   scripts/build-ironvise.sh OUT
#
# The environment passes the rest: GO (the go command), LDFLAGS (extra
# linker flags, e.g. the version stamps), TAGS (build tags: noserver
# builds ironvise without serve and mcp, which it then hands to
# ironvise-server; make build builds both), GOOS and GOARCH (a cross build).
# The launcher is built first from this same tree and given to the main
# build with `go build -overlay`, so the tree never holds a launcher binary;
# the main build is stamped with the launcher's SHA-256, which the tier
# checks before it starts the embedded launcher. A target other than Linux
# builds without it.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: scripts/build-ironvise.sh OUT" >&2; exit 2; }
out=$1
case $out in /*) ;; *) out=$PWD/$out ;; esac
go=${GO:-go}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export CGO_ENABLED=0
if [ "$("$go" env GOOS)" != linux ]; then
  exec "$go" build -trimpath -tags "${TAGS:-}" -ldflags "${LDFLAGS:-}" -o "$out" ./cmd/ironvise
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$go" build -trimpath -ldflags "-s -w" -o "$tmp/launcher" ./internal/sandbox/native/launcherbin/launcher
sum=$(sha256sum "$tmp/launcher" | cut -d' ' -f1)
# The overlay is JSON: paths with a quote or a backslash would need
# escaping, which no directory this script builds in should need.
embed="$root/internal/sandbox/native/launcherbin/bin/launcher"
case $embed$tmp in *'"'* | *'\'*)
  echo "build-ironvise: the paths $root and $tmp must not contain \" or \\" >&2
  exit 1 ;;
esac
printf '{"Replace":{"%s":"%s"}}\n' "$embed" "$tmp/launcher" >"$tmp/overlay.json"
"$go" build -trimpath -overlay "$tmp/overlay.json" -tags "${TAGS:-}" \
  -ldflags "${LDFLAGS:-} -X github.com/ironvise/ironvise/internal/sandbox/native/launcherbin.wantSHA256=$sum" \
  -o "$out" ./cmd/ironvise
