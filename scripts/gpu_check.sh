#!/usr/bin/env bash
# The GPU check: one script for a GPU machine that has CMake, ninja, nvcc and PyTorch but no
# network, and may lack MPI, OpenBLAS, PCRE2, pkg-config and the header-only libraries.
#
#   here (with the network):   scripts/gpu_check.sh --prepare
#       downloads the Debian packages of scripts/gpu_deps.sh into .device-carry/debs (ignored by
#       git; about 25 MiB), to travel with the working tree; then scripts/gpu_bare_dry_run builds
#       from them alone, as a bare machine would.
#   there (carry .device-carry): GPU_CHECK_COMMIT=<commit> bash scripts/gpu_check.sh
#   here, the steps on this machine's packages, without a GPU:   scripts/gpu_check.sh --dry-run
#       (every gpu test must be skipped; the benchmark runs the tiny model on the CPU, so the
#       results files are made by the same code as on a GPU, their numbers meaningless)
#   --build-only stops after the build (what scripts/gpu_bare_dry_run runs).
#
# The steps, most valuable first, each with its cap (seconds), within a budget of
# GPU_CHECK_SECONDS (default 530: the script ends within 9 minutes; each step gets the smaller of
# its cap and what is left, and a step with under 20 s left is not started):
#   1 machine    the GPU, its compute mode, the driver, compilers, where CUDA and NCCL are    ~5
#   2 configure  the carried packages unpacked where the machine lacks them; CMake, sm_90     ~30
#   3 build      optimus, gpu_probe and the three gpu test programs                   cap 300
#                (GPU_CHECK_BUILD_SECONDS; the bare dry run on 2 cores lifts both caps)
#   4 ops        every CUDA op against the CPU op, all in one process                 cap 120
#   5 train      optimus train/eval/bench --device cuda end to end (ctest)            cap 150
#   6 bench      stage 1 on GPT-2 124M's shapes: ours, PyTorch eager fp32, TF32  120+45+45
#   7 ranks      the multi-rank gpu tests: stages, communicators, allocations (ctest,
#                120 s per test)                                                   what is left
#   8 profile    only with GPU_CHECK_PROFILE=1: one training step's kernels timed by Nsight
#                Compute, summed by kernel (scripts/gpu_check_profile.sh)          what is left
# Each step prints its time. Results under $OUT (out/gpu_check when $OUT is unset), written as the
# steps finish, so a run cut short still returns what it did: summary.txt, gpu.txt (the machine),
# build.log, ops.log, train.log, bench.log, ranks.log, gpu.jsonl (the benchmark's lines for
# bench/gpu.jsonl): eight files, what the device tool brings back. Exits non-zero if a step failed. Through the device tool:
#   run(command="GPU_CHECK_COMMIT=<commit> bash scripts/gpu_check.sh", carry=[".device-carry"], timeout_s=570)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/gpu_deps.sh"
script=gpu_check
source "$root/scripts/script_args.sh"
mode=check
case ${1:-} in
  --prepare | --dry-run | --build-only) mode=${1#--} ;;
  "") ;;
  *) args_fail "unknown argument '$1' (usage: gpu_check.sh [--prepare | --dry-run | --build-only])" ;;
esac
(($# <= 1)) || args_fail "give one of --prepare, --dry-run, --build-only, or nothing; not $# arguments"
args_whole GPU_CHECK_SECONDS "${GPU_CHECK_SECONDS:-530}" 1 86400
args_whole GPU_CHECK_BUILD_SECONDS "${GPU_CHECK_BUILD_SECONDS:-300}" 1 86400
args_whole GPU_CHECK_BATCH "${GPU_CHECK_BATCH:-8}" 1 1024

if [[ $mode == prepare ]]; then
  set -e
  rm -rf "$root/.device-carry/debs"
  mkdir -p "$root/.device-carry/debs"
  (cd "$root/.device-carry/debs" && apt-get download "${gpu_packages[@]}")
  du -sh "$root/.device-carry/debs"
  echo "next: scripts/gpu_bare_dry_run here, then scripts/gpu_check.sh there, carrying .device-carry"
  exit 0
fi

start=$(date +%s)
budget=${GPU_CHECK_SECONDS:-530}
cores=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)  # nproc alone obeys OMP_NUM_THREADS
dry_run=0
[[ $mode == dry-run ]] && dry_run=1
out=${OUT:-$root/out/gpu_check}
mkdir -p "$out"
: >"$out/summary.txt"
log() { echo "gpu_check: $*" | tee -a "$out/summary.txt"; }
left() { echo $((budget - ($(date +%s) - start))); }
cap() { local l; l=$(left); echo $((l < $1 ? l : $1)); }  # cap SECONDS: the smaller of it and what is left

# step NAME: begins a step; done_step RC [WHAT]: ends it (0 passed, 77 skipped, else failed). A gpu
# test skips without a GPU: the verdict a dry run expects, and a failure on a GPU machine.
failed=0 step_name="" step_start=0 step_number=0
step() { step_name=$1 step_start=$(date +%s) step_number=$((step_number + 1)); }
done_step() {
  local rc=$1 verdict=passed
  if ((rc == 77 && dry_run)); then
    verdict="skipped, as it must be without a GPU"
  elif ((rc == 77)); then
    verdict="SKIPPED: the GPU was not usable" failed=1
  elif ((rc != 0)); then
    verdict="FAILED (rc $rc)" failed=1
  elif ((dry_run)) && [[ $step_name == ops || $step_name == train || $step_name == ranks ]]; then
    verdict="FAILED: passed without a GPU" failed=1
  fi
  log "step $step_number $step_name: $verdict${2:+, $2} in $(($(date +%s) - step_start)) s" \
    "($(($(date +%s) - start)) s of $budget)"
  step_name=""
}
trap 'log "cut short during step ${step_name:-?} after $(($(date +%s) - start)) s"; exit 124' TERM INT
enough() {  # enough SECONDS: whether a step needing at least that long may start
  if (($(left) < $1)); then log "step $((step_number + 1)) $2: not started, $(left) s left"; failed=1; return 1; fi
}
((dry_run)) && log "DRY RUN: no GPU expected; the numbers below mean nothing"

# ---- 1 the machine ------------------------------------------------------------------------------
step machine
if [[ -d /usr/local/cuda/bin ]]; then export PATH=$PATH:/usr/local/cuda/bin; fi  # for step 1's nvcc line
commit=${GPU_CHECK_COMMIT:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)}
{
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi -L
    # compute_mode: Exclusive_Process would refuse every test that shares the GPU between ranks.
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,compute_mode --format=csv,noheader
  else
    echo "no nvidia-smi on this machine"
  fi
  grep -h PRETTY_NAME /etc/os-release 2>/dev/null || true
  echo "c++: $(c++ --version 2>/dev/null | head -1)"
  echo "nvcc: $(command -v nvcc) $(nvcc --version 2>/dev/null | tail -1)"
  echo "cmake: $(cmake --version | head -1); ninja: $(ninja --version 2>/dev/null || echo none)"
  echo "pkg-config: $(command -v pkg-config || echo none); mpicxx: $(command -v mpicxx || echo none)"
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -1
  echo "$cores cores; $(date -u +%Y-%m-%dT%H:%MZ); commit $commit"
} >"$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
done_step 0 "$(head -1 "$out/gpu.txt")"

# ---- 2 configure ----------------------------------------------------------------------------------
step configure
said=$(mktemp)
gpu_env "$root" "$dry_run" >"$said"
rc=$?
tee -a "$out/summary.txt" <"$said"
rm -f "$said"
if ((rc != 0)); then
  done_step 1 "dependencies missing and no packages carried: run scripts/gpu_check.sh --prepare here and carry .device-carry"
  exit 1
fi
build=${GPU_CHECK_BUILD_DIR:-$root/build-gpu}
generator=()
if [[ ! -f $build/CMakeCache.txt ]] && command -v ninja >/dev/null; then generator=(-G Ninja); fi
docs=(-DOPTIMUS_DOCS=OFF)  # no doxygen there; a dry run leaves an existing build's choice alone
((dry_run)) && docs=()
timeout "$(cap 120)" cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DOPTIMUS_CUDA=ON "${docs[@]}" "${gpu_cmake_args[@]}" >"$out/build.log" 2>&1
rc=$?
backends=$(grep -o "optimus: backends built.*" "$out/build.log")
if ((rc != 0)); then
  tail -30 "$out/build.log"
  backends="CMake failed (build.log)"
elif [[ $backends != *"+ CUDA"* ]]; then
  rc=1 backends="the CUDA backend was not found (build.log)"
fi
done_step $rc "$backends"
((rc == 0)) || exit 1

# ---- 3 build --------------------------------------------------------------------------------------
step build
timeout "$(cap "${GPU_CHECK_BUILD_SECONDS:-300}")" cmake --build "$build" --parallel "$cores" \
  --target optimus gpu_probe test_gpu_ops test_gpu_comm test_gpu_stages >>"$out/build.log" 2>&1
rc=$?
((rc != 0)) && tail -30 "$out/build.log"
done_step $rc "build.log"
((rc == 0)) || exit 1
if [[ $mode == build-only ]]; then log "built; stopping there (--build-only)"; exit 0; fi

ctest_rc() {  # ctest_rc LOG CTEST_RC: 77 when ctest ran its tests and skipped every one
  local total skipped
  total=$(grep -oE "out of [0-9]+" "$1" | grep -oE "[0-9]+" | tail -1)
  skipped=$(grep -c "(Skipped)" "$1")
  if [[ -n $total ]] && ((total > 0 && skipped == total)); then echo 77; else echo "$2"; fi
}

# ---- 4 the op tests, in one process ---------------------------------------------------------------
if enough 20 ops; then
  step ops
  OMP_NUM_THREADS=4 timeout "$(cap 120)" "$build/tests/gpu/test_gpu_ops" >"$out/ops.log" 2>&1
  rc=$?
  tail -4 "$out/ops.log"
  done_step $rc "$(grep -E "test cases|skipped" "$out/ops.log" | tail -1)"
fi

# ---- 5 optimus train/eval/bench --device cuda, end to end ----------------------------------------
if enough 30 train; then
  step train
  (cd "$build" && timeout "$(cap 150)" ctest -V -R "^gpu: optimus train") >"$out/train.log" 2>&1
  rc=$(ctest_rc "$out/train.log" $?)
  grep -E "relative difference|refused|DIFFERENT|tests passed|tests failed" "$out/train.log" | tail -12
  done_step "$rc" "train.log"
fi

# ---- 6 stage 1 on GPT-2 124M's shapes: optimus, then PyTorch eager, in the same run ----------------
if enough 40 bench; then
  step bench
  source "$root/scripts/gpu_check_bench.sh"
  gpu_check_bench
  done_step $bench_rc "bench.log, gpu.jsonl"
fi

# ---- 7 the multi-rank gpu tests -------------------------------------------------------------------
if enough 30 ranks; then
  step ranks
  (cd "$build" && timeout "$(left)" ctest -V -R "^gpu np") >"$out/ranks.log" 2>&1
  rc=$(ctest_rc "$out/ranks.log" $?)
  grep -E "Test +#|tests passed|tests failed" "$out/ranks.log" | sed 's/^ *//' | tee -a "$out/summary.txt"
  done_step "$rc" "ranks.log"
fi

# ---- 8 (GPU_CHECK_PROFILE=1) where one training step's GPU time goes, kernel by kernel ------------
if [[ ${GPU_CHECK_PROFILE:-0} == 1 ]] && ((!dry_run)) && enough 60 profile; then
  step profile
  source "$root/scripts/gpu_check_profile.sh"
  gpu_check_profile
  done_step $profile_rc "bench.log"
fi

if ((failed)); then
  log "done in $(($(date +%s) - start)) s: a step FAILED"
  exit 1
fi
log "done in $(($(date +%s) - start)) s: every step $( ((dry_run)) && echo "as a machine without a GPU must end" || echo passed)"
