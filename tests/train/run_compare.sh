#!/usr/bin/env bash
# scripts/compare.sh on a small model and its own text: the table prints, and every layout is
# within the equivalence tests' bars (compare_layouts.py exits 1 otherwise). Usage: run_compare.sh COMPARE
set -euo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 -c "
import random
r = random.Random(9)
open('$tmp/text.txt', 'w').write(' '.join(r.choice(['tile', 'grid', 'head', 'sum']) for _ in range(5000)))"
STEPS=3 "$1" --data "$tmp/text.txt" --layers 1 --embd 32 --heads 2 --seq 16 --batch 4 --dropout 0.1
