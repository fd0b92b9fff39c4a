#!/bin/bash
# scripts/calibrate --quick runs and writes a profile with every field of the format; the committed
# profiles have every field too. Checks fields and types, never the measured values.
# Usage: run_calibrate.sh SOURCE_DIR TIME_COLLECTIVES
set -euo pipefail
src=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
/usr/bin/python3 "$src/scripts/calibrate" --quick --timer "$2" --out "$out/local.json"
/usr/bin/python3 "$src/tests/plan/check_profile.py" "$out/local.json" "$src"/data/hardware/*.json
