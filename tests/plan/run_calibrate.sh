#!/bin/bash
# scripts/calibrate --quick runs and writes a profile with every field of the format; the committed
# profiles have every field too. Checks fields and types, never the measured values.
# Usage: run_calibrate.sh SOURCE_DIR TIME_COLLECTIVES OPTIMUS
set -euo pipefail
src=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
/usr/bin/python3 "$src/scripts/calibrate" --quick --timer "$2" --optimus "$3" --out "$out/local.json"
/usr/bin/python3 "$src/tests/plan/check_profile.py" "$out/local.json" "$src"/data/hardware/*.json
# The calibration rates every kind of op the serial step runs but matmul (the profiles may leave it out).
/usr/bin/python3 -c '
import json, sys
rated = set(json.load(open(sys.argv[1]))["op_rates"])
want = {"attention", "layernorm", "crossentropy", "elementwise", "reduction", "embedding", "optimizer"}
sys.exit(f"FAIL: op_rates lacks {sorted(want - rated)}" if want - rated else None)' "$out/local.json"
# The loader takes each profile, its numbers in data/hardware/README.md's ranges (a fit's intercepts
# at least 0 among them): a small plan on each exits 0.
for profile in "$out/local.json" "$src"/data/hardware/*.json; do
  "$3" plan --layers 1 --embd 8 --heads 2 --seq 4 --vocab 16 --hardware "$profile" >/dev/null
done
