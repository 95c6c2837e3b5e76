#!/usr/bin/env bash
# Runs every fuzz target of the module for a given time each (default 2m).
set -euo pipefail
cd "$(dirname "$0")/.."
t=${1:-2m}
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/func //'); do
    echo "== $pkg $f ($t)"
    go test -run '^$' -fuzz "^$f\$" -fuzztime "$t" "$pkg"
  done
done
