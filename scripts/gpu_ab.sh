#!/usr/bin/env bash
# A GPU change measured as an A/B in one run: this tree (B) against a baseline commit (A), both
# built on the GPU machine, the op tests of B run first, then `optimus bench --device cuda`
# alternated A, B, A, B, ... on stage 1 at GPT-2 124M's shapes (B = 8): each run's step time is
# the median of 5 steps after 2 of warm-up, and the table gives each build's median over the rounds
# and its spread (lowest to highest).
#
#   here:   scripts/gpu_check.sh --prepare; scripts/gpu_ab.sh --prepare COMMIT
#           (the baseline's files, git archive of COMMIT, into .device-carry/base)
#   there:  bash scripts/gpu_ab.sh   (carrying .device-carry; GPU_AB_ROUNDS rounds, default 3)
# Writes ab.txt (the table), ab.log (every run) and build.log under $OUT (out/gpu_ab when unset).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/gpu_deps.sh"
base=$root/.device-carry/base
script=gpu_ab
source "$root/scripts/script_args.sh"
usage="scripts/gpu_ab.sh --prepare COMMIT (here) | scripts/gpu_ab.sh (there)"
if [[ ${1:-} == --prepare ]]; then
  args_value --prepare $#
  (($# == 2)) || args_fail "--prepare takes one commit and nothing else (usage: $usage)"
  git -C "$root" rev-parse --verify --quiet "$2^{commit}" >/dev/null ||
    args_fail "--prepare $2: not a commit of this repository; name one (a hash, a branch, HEAD)"
elif (($# > 0)); then
  args_fail "unknown argument '$1' (usage: $usage)"
else
  args_whole GPU_AB_ROUNDS "${GPU_AB_ROUNDS:-3}" 1 100
fi

if [[ ${1:-} == --prepare ]]; then
  commit=$2
  rm -rf "$base"
  mkdir -p "$base"
  git -C "$root" archive "$commit" | tar -x -C "$base" || exit 1
  git -C "$root" rev-parse --short "$commit" >"$base/.commit"
  echo "baseline $(cat "$base/.commit") in $base ($(du -sh "$base" | cut -f1))"
  exit 0
fi

out=${OUT:-$root/out/gpu_ab}
mkdir -p "$out"
cores=$(env -u OMP_NUM_THREADS nproc)
start=$(date +%s)
say() { echo "gpu_ab: $* ($(($(date +%s) - start)) s)" | tee -a "$out/ab.txt"; }
: >"$out/ab.txt"
[[ -f $base/.commit ]] || { say "no baseline: run scripts/gpu_ab.sh --prepare COMMIT here"; exit 1; }
gpu_env "$root" 0 >>"$out/ab.txt" || { say "packages missing and none carried: scripts/gpu_check.sh --prepare"; exit 1; }

# Both builds at once, half the cores each.
build_one() {  # build_one SOURCE BUILD
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DOPTIMUS_CUDA=ON \
    -DOPTIMUS_DOCS=OFF "${gpu_cmake_args[@]}" && cmake --build "$2" --parallel $((cores / 2)) --target optimus test_gpu_ops
}
build_one "$base" "$root/build-gpu-base" >"$out/build.log" 2>&1 &
build_one "$root" "$root/build-gpu" >>"$out/build.log" 2>&1
b_rc=$?
wait $!
a_rc=$?
if ((a_rc != 0 || b_rc != 0)); then say "build FAILED (A rc $a_rc, B rc $b_rc; build.log)"; tail -20 "$out/build.log"; exit 1; fi
say "built A ($(cat "$base/.commit")) and B (this tree)"

"$root/build-gpu/tests/gpu/test_gpu_ops" >>"$out/ab.log" 2>&1
say "B's op tests: rc $? ($(grep -E "test cases" "$out/ab.log" | tail -1))"

export OMP_NUM_THREADS=8
for round in $(seq 1 "${GPU_AB_ROUNDS:-3}"); do
  for side in A B; do
    build=$root/build-gpu
    [[ $side == A ]] && build=$root/build-gpu-base
    line=$(timeout 120 "$build/optimus" bench --device cuda --model gpt2 --batch 8 --steps 5 --warmup 2 2>>"$out/ab.log" |
      grep '^{')
    echo "$side $line" >>"$out/ab.log"
    say "round $round $side: step $(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["step_ms"])' "$line" 2>/dev/null) ms"
  done
done
python3 - "$out/ab.log" <<'PY' | tee -a "$out/ab.txt"
import json, statistics, sys
runs = {"A": [], "B": []}
for l in open(sys.argv[1]):
    side, _, rest = l.partition(" ")
    if side in runs and rest.startswith("{"):
        runs[side].append(json.loads(rest))
print(f"{'build':6} {'runs':>4} {'step ms median':>15} {'spread':>17} {'forward ms':>11}")
for side, rs in runs.items():
    s = [r["step_ms"] for r in rs]
    if s:
        print(f"{side:6} {len(s):>4} {statistics.median(s):>15.1f} {min(s):>8.1f} - {max(s):<7.1f} "
              f"{statistics.median(r['forward_ms'] for r in rs):>11.1f}")
if runs["A"] and runs["B"]:
    a = statistics.median(r["step_ms"] for r in runs["A"])
    b = statistics.median(r["step_ms"] for r in runs["B"])
    print(f"B / A step time: {b / a:.3f}")
PY
