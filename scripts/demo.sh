#!/usr/bin/env bash
# Runs the main job: `ironvise demo`, a complete scripted audit of a bundled
# sample service with the deterministic mock LLM (no LLM, network or setup).
# The session is recorded in the ledger of $ECTO_DATA_DIR (default
# ~/.local/share/ironvise), so it can be verified and exported afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x ./bin/ironvise ] || make -s build
exec ./bin/ironvise demo "$@"
