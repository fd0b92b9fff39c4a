#!/usr/bin/env bash
# The GPU check: one script for a lent GPU machine, which has CMake, ninja, nvcc and
# PyTorch but no network, and may lack MPI, OpenBLAS and the header-only libraries. Two steps:
#
#   here (with the network):   scripts/gpu_check.sh --prepare
#       downloads Debian's packages of what the GPU machine may lack into .device-carry/debs
#       (ignored by git; about 20 MiB), to travel with the working tree;
#   there (carry .device-carry): scripts/gpu_check.sh
#       unpacks them under /tmp/optimus-deps where the machine lacks them, builds the CUDA backend,
#       optimus and the gpu tests in build-gpu (sm_90), runs `ctest -L gpu`, then benchmarks stage 1
#       on GPT-2 124M's shapes (C=768, L=12, NH=12, T=1024, V=50304, B=$GPU_CHECK_BATCH, default 8):
#       optimus bench --device cuda (which measures cuBLAS sgemm's float32 rate first), and the same
#       model in PyTorch eager in the same run (scripts/bench_torch.py --device cuda, float32, then
#       TF32). Model FLOPs per token: 6·N + 6·L·C·T (N parameters, the tied head counted once), the
#       formula of `optimus bench`. Results under $OUT (out/gpu_check when $OUT is unset):
#       gpu.txt (the machine), build.log, ctest_gpu.log, ctest_gpu.xml, bench.log, gpu.jsonl (one
#       line per implementation, dated, with the machine and the commit: the lines to append to
#       bench/gpu.jsonl) and summary.txt (the table, and the row for bench/README.md). Exits
#       non-zero if the build, a gpu test or the benchmark fails; made to end within 8 minutes (each
#       step gets what is left of them). Through the device tool:
#       run(command="GPU_CHECK_COMMIT=<git rev-parse --short HEAD, here> bash scripts/gpu_check.sh",
#           carry=[".device-carry"], timeout_s=600)
#   here, to check this script without a GPU:   scripts/gpu_check.sh --dry-run
#       every step on this machine's own dependencies, in $GPU_CHECK_BUILD_DIR (default build-gpu;
#       point it at an existing CUDA build to skip most of the compiling): the gpu tests must all be
#       skipped, and the benchmark runs on the CPU with the tiny model, so that the results files
#       and the summary are made by the same code as on a GPU (their numbers mean nothing).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
carry=$root/.device-carry
start=$(date +%s)
cores=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)  # nproc alone obeys OMP_NUM_THREADS
budget=${GPU_CHECK_SECONDS:-480}  # the 8 minutes
left() { echo $((budget - ($(date +%s) - start))); }
dry_run=0
if [[ ${1:-} == --dry-run ]]; then dry_run=1; fi

# Debian 12 packages the build and the gpu tests need beyond a C++ compiler, CMake and CUDA:
# headers (-dev, header-only), OpenBLAS (OpenMP build), and Open MPI with its runtime libraries.
packages=(
  librandom123-dev catch2 libcli11-dev nlohmann-json3-dev
  libopenblas-openmp-dev libopenblas0-openmp libgfortran5 libquadmath0
  libopenmpi-dev libopenmpi3 openmpi-bin openmpi-common
  libhwloc15 libevent-core-2.1-7 libevent-pthreads-2.1-7 libpmix2 libfabric1 libucx0 libibverbs1
  ibverbs-providers librdmacm1 libpsm2-2 libpsm-infinipath1 libnl-3-200 libnl-route-3-200 libmunge2
  libnuma1 libatomic1
)

if [[ ${1:-} == --prepare ]]; then
  rm -rf "$carry/debs"
  mkdir -p "$carry/debs"
  (cd "$carry/debs" && apt-get download "${packages[@]}")
  du -sh "$carry/debs"
  echo "now run scripts/gpu_check.sh on the GPU machine, carrying .device-carry"
  exit 0
fi

if [[ -d /usr/local/cuda/bin ]]; then export PATH=$PATH:/usr/local/cuda/bin; fi
out=${OUT:-$root/out/gpu_check}
mkdir -p "$out"
log() { echo "gpu_check: $*" | tee -a "$out/summary.txt"; }
: >"$out/summary.txt"
((dry_run)) && log "DRY RUN: no GPU expected; the numbers below mean nothing"

# ---- the machine --------------------------------------------------------------------------------
{
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi -L
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  else
    echo "no nvidia-smi on this machine"
  fi
  nvcc --version 2>&1 | tail -1 || true
  cmake --version | head -1
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 || true
  # The commit: $GPU_CHECK_COMMIT (the device machine's copy of the tree may have no .git), else git's.
  commit=${GPU_CHECK_COMMIT:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)}
  echo "$cores cores; $(date -u +%Y-%m-%dT%H:%MZ); commit $commit"
} >"$out/gpu.txt" 2>&1
log "machine: $(head -1 "$out/gpu.txt"); $cores cores"

# ---- what this machine lacks, from the carried packages -----------------------------------------
deps=/tmp/optimus-deps
cmake_args=()
# (GPU_CHECK_CARRIED=1 uses the carried packages even where the machine has its own: a dry run.)
if ((dry_run)) || { [[ ${GPU_CHECK_CARRIED:-0} != 1 && -f /usr/include/Random123/philox.h ]] &&
  command -v mpicxx >/dev/null 2>&1; }; then
  log "dependencies: the machine's own"
else
  shopt -s nullglob
  debs=("$carry"/debs/*.deb)
  if ((${#debs[@]} == 0)); then
    log "dependencies missing and no packages carried: run scripts/gpu_check.sh --prepare here and carry .device-carry"
    exit 1
  fi
  rm -rf "$deps"
  mkdir -p "$deps"
  for deb in "${debs[@]}"; do
    if command -v dpkg >/dev/null 2>&1; then
      dpkg -x "$deb" "$deps"
    else  # a .deb is an ar archive holding data.tar.*
      member=$(mktemp -d)
      (cd "$member" && ar x "$deb")
      tar -xf "$member"/data.tar.* -C "$deps"
      rm -rf "$member"
    fi
  done
  arch=x86_64-linux-gnu
  export PATH=$deps/usr/bin:$PATH
  export LD_LIBRARY_PATH=$deps/usr/lib/$arch:$deps/usr/lib/$arch/openmpi/lib:$deps/usr/lib/$arch/openblas-openmp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  # Open MPI and PMIx were built for /usr: point them at the unpacked tree instead. (Debian names
  # the programs mpicxx.openmpi and mpiexec.openmpi; the plain names are alternatives links.)
  export OPAL_PREFIX=$deps/usr OPAL_EXEC_PREFIX=$deps/usr OPAL_BINDIR=$deps/usr/bin
  export OPAL_LIBDIR=$deps/usr/lib/$arch/openmpi/lib OPAL_INCLUDEDIR=$deps/usr/lib/$arch/openmpi/include
  export OPAL_DATADIR=$deps/usr/share OPAL_PKGDATADIR=$deps/usr/share/openmpi OPAL_SYSCONFDIR=$deps/etc/openmpi
  export PMIX_INSTALL_PREFIX=$deps/usr/lib/$arch/pmix2
  export PMIX_MCA_mca_base_component_path=$deps/usr/lib/$arch/pmix2/lib/pmix
  # One node, shared memory only: no network transports to probe.
  export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader OMPI_MCA_osc=^ucx
  # The top-level CMakeLists looks for OpenBLAS under /usr: FIND_ROOT_PATH re-roots that search.
  cmake_args+=("-DCMAKE_PREFIX_PATH=$deps/usr" "-DCMAKE_FIND_ROOT_PATH=$deps"
               -DCMAKE_FIND_ROOT_PATH_MODE_INCLUDE=BOTH -DCMAKE_FIND_ROOT_PATH_MODE_LIBRARY=BOTH
               -DCMAKE_FIND_ROOT_PATH_MODE_PACKAGE=BOTH -DCMAKE_FIND_ROOT_PATH_MODE_PROGRAM=BOTH
               "-DMPI_CXX_COMPILER=$deps/usr/bin/mpicxx.openmpi" "-DMPIEXEC_EXECUTABLE=$deps/usr/bin/mpiexec.openmpi")
  log "dependencies: ${#debs[@]} carried packages unpacked in $deps"
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

# NCCL: the CUDA toolkit's copy, else the one in Python's nvidia-nccl wheel (linked under /tmp,
# since the wheel has only libnccl.so.2 and FindNCCL looks for libnccl.so).
if [[ ! -f /usr/local/cuda/include/nccl.h ]]; then
  wheel=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null ||
    python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null || true)
  if [[ -n $wheel && -f $wheel/include/nccl.h ]]; then
    mkdir -p /tmp/optimus-nccl/lib
    ln -sf "$wheel/include" /tmp/optimus-nccl/include
    ln -sf "$wheel/lib/libnccl.so.2" /tmp/optimus-nccl/lib/libnccl.so
    ln -sf "$wheel/lib/libnccl.so.2" /tmp/optimus-nccl/lib/libnccl.so.2
    export NCCL_ROOT=/tmp/optimus-nccl
    export LD_LIBRARY_PATH=/tmp/optimus-nccl/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    log "NCCL: from $wheel"
  else
    log "NCCL: not found in /usr/local/cuda nor in Python's nvidia.nccl; the CUDA backend will not configure"
  fi
fi

# ---- build ----------------------------------------------------------------------------------------
build=${GPU_CHECK_BUILD_DIR:-$root/build-gpu}
generator=()
if [[ ! -f $build/CMakeCache.txt ]] && command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
set +e
docs=(-DOPTIMUS_DOCS=OFF)  # no doxygen there; a dry run leaves an existing build's choice alone
if ((dry_run)); then docs=(); fi
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DOPTIMUS_CUDA=ON "${docs[@]}" "${cmake_args[@]}" >"$out/build.log" 2>&1
configure_rc=$?
set -e
grep "optimus: backends built" "$out/build.log" | tee -a "$out/summary.txt" || true
if ((configure_rc != 0)) || ! grep -q "backends built: .* + CUDA" "$out/build.log"; then
  tail -30 "$out/build.log"
  log "configure FAILED, or the CUDA backend was not found (build.log)"
  exit 1
fi
set +e
timeout "$(left)" cmake --build "$build" --parallel "$cores" \
  --target optimus gpu_probe test_gpu_ops test_gpu_comm test_gpu_stages >>"$out/build.log" 2>&1
build_rc=$?
set -e
if ((build_rc != 0)); then
  tail -30 "$out/build.log"
  log "build FAILED (or ran out of time) after $(($(date +%s) - start)) s (build.log)"
  exit 1
fi
log "built in $(($(date +%s) - start)) s"

# ---- the gpu tests --------------------------------------------------------------------------------
# About half of what is left after the build; the benchmark needs about two minutes.
test_budget=$(($(left) - 150))
if ((test_budget < 60)); then test_budget=60; fi
set +e
(cd "$build" && timeout "$test_budget" ctest -L gpu --output-on-failure --timeout 300 \
  --output-junit "$out/ctest_gpu.xml") >"$out/ctest_gpu.log" 2>&1
test_rc=$?
set -e
grep -E "tests passed|tests failed|\*\*\*Failed|Not Run" "$out/ctest_gpu.log" | tee -a "$out/summary.txt" || true
skipped=$(grep -c "(Skipped)" "$out/ctest_gpu.log" || true)
log "$skipped gpu tests skipped"
if ((test_rc == 124)); then log "the gpu tests ran out of their $test_budget s"; fi
if ((dry_run)); then
  # Without a GPU every gpu test must be skipped, never passed or failed.
  total=$(grep -oE "out of [0-9]+" "$out/ctest_gpu.log" | grep -oE "[0-9]+" || echo 0)
  if ((test_rc == 0 && skipped == total && total > 0)); then
    log "dry run: all $total gpu tests were skipped, as they must be without a GPU"
  else
    log "dry run: expected all gpu tests skipped, but $skipped of $total were (rc $test_rc)"
    test_rc=1
  fi
elif grep -q "gpu:.*(Skipped)" "$out/ctest_gpu.log"; then
  # Here a skipped op test means the GPU was not usable: that fails the check. (NCCL at more ranks
  # than GPUs is skipped by design.)
  log "the op tests were skipped: the CUDA runtime saw no usable GPU (see ctest_gpu.log)"
  test_rc=1
fi

# ---- stage 1 on GPT-2 124M's shapes: optimus, then PyTorch eager, in the same run -------------------
B=${GPU_CHECK_BATCH:-8}
if ((dry_run)); then
  ours=(--device cpu --model tiny --batch 2 --steps 1 --warmup 0)
  theirs=(--device cpu --models tiny --batch 2 --steps 1 --warmup 0)
else
  ours=(--device cuda --model gpt2 --batch "$B" --steps 5 --warmup 2)
  theirs=(--device cuda --models gpt2 --batch "$B" --steps 5 --warmup 2)
fi
bench_rc=0
: >"$out/bench.log"
raw=$(mktemp)
run_bench() {  # run_bench WHAT SECONDS COMMAND...: its JSON line(s) into $raw, its output into bench.log
  local what=$1 seconds=$2
  shift 2
  if ((seconds < 20)); then
    log "benchmark: no time left for $what"
    bench_rc=1
    return
  fi
  echo "+ $*" >>"$out/bench.log"
  if timeout "$seconds" "$@" >"$raw.one" 2>>"$out/bench.log"; then
    tee -a "$out/bench.log" <"$raw.one" | grep '^{' >>"$raw" || true
  else
    log "benchmark: $what FAILED or ran out of its $seconds s (bench.log)"
    cat "$raw.one" >>"$out/bench.log"
    bench_rc=1
  fi
}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
run_bench "optimus" $(($(left) - 60)) "$build/optimus" bench "${ours[@]}"
python=${GPU_CHECK_PYTHON:-python3}  # the one with PyTorch (there: the image's python3)
run_bench "pytorch float32" $(($(left) - 30)) "$python" "$root/scripts/bench_torch.py" "${theirs[@]}"
if ((!dry_run)); then
  run_bench "pytorch tf32" "$(left)" "$python" "$root/scripts/bench_torch.py" "${theirs[@]}" --tf32
fi

# One dated line per implementation (gpu.jsonl), and the table with the row for bench/README.md.
python3 - "$raw" "$out/gpu.jsonl" "$out/gpu.txt" "$dry_run" <<'PY' | tee -a "$out/summary.txt"
import json, sys
raw, jsonl, machine_file, dry = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
rows = [json.loads(l) for l in open(raw) if l.startswith("{")]
lines = open(machine_file).read().splitlines()
# nvidia-smi's query line "NVIDIA H200, <driver>, <memory> MiB, <clock> MHz", else its -L line
gpu = next((l for l in lines if l.endswith("MHz")), next((l for l in lines if l.startswith("GPU ")), "no GPU"))
stamp = lines[-1] if lines else ""
ours = next((r for r in rows if r.get("impl") == "optimus"), None)
if ours is None:
    print("gpu_check: no optimus benchmark line: nothing to report")
    open(jsonl, "w").close()
    sys.exit(0)
L, C, T, B = ours["L"], ours["C"], ours["T"], ours["B"]
flops_per_token = 6 * ours["params"] + 6 * L * C * T  # the formula of optimus bench
sgemm = ours["matmul_gflops"] / 1e3                   # TFLOP/s, cuBLAS float32, measured first
common = {"date": stamp.split("; ")[1] if "; " in stamp else "", "machine": gpu,
          "commit": stamp.rsplit("commit ", 1)[-1], "model": ours["model"], "B": B, "T": T, "L": L, "C": C,
          "NH": ours["NH"], "V": ours["V"], "params": ours["params"], "flops_per_token": "6N + 6*L*C*T",
          "sgemm_fp32_tflops": round(sgemm, 2), "dry_run": dry}
out = []
for r in rows:
    name = "optimus serial" if r.get("impl") == "optimus" else f"pytorch eager {r.get('math', 'fp32')}"
    tflops = flops_per_token * r.get("B", B) * T / (r["step_ms"] * 1e-3) / 1e12
    peak = r["peak_memory_mib"]["total"] if isinstance(r.get("peak_memory_mib"), dict) else r.get("peak_memory_mib")
    out.append(dict(common, impl=name, step_ms=r["step_ms"], forward_ms=r["forward_ms"],
                    tokens_per_s=r["tokens_per_s"], tflops=round(tflops, 2),
                    fraction_of_sgemm=round(tflops / sgemm, 3), peak_memory_mib=peak))
with open(jsonl, "w") as f:
    for o in out:
        f.write(json.dumps(o) + "\n")
print(f"\nstage 1 on {ours['model']} shapes (L={L} C={C} NH={ours['NH']} T={T} V={ours['V']}), B={B}, "
      f"on {gpu}; sgemm (fp32) {sgemm:.1f} TFLOP/s")
print(f"{'impl':22} {'step ms':>9} {'fwd ms':>8} {'tokens/s':>10} {'TFLOP/s':>8} {'of sgemm':>9} {'peak MiB':>9}")
for o in out:
    print(f"{o['impl']:22} {o['step_ms']:>9.1f} {o['forward_ms']:>8.1f} {o['tokens_per_s']:>10.0f} "
          f"{o['tflops']:>8.2f} {100 * o['fraction_of_sgemm']:>8.0f}% {o['peak_memory_mib'] or 0:>9.0f}")
torch32 = next((o for o in out if o["impl"] == "pytorch eager fp32"), None)
ratio = f"{torch32['step_ms'] / out[0]['step_ms']:.2f}x" if torch32 else "n/a"
print(f"PyTorch eager fp32 step time over ours: {ratio} (> 1: optimus is faster)")
print("\nTO COMMIT" + (" (a dry run: do NOT commit these)" if dry else "") + ":")
print(f"  append the lines of {jsonl} to bench/gpu.jsonl, and this row to bench/README.md's GPU table:")
print(f"  | {common['date']} | {gpu} | {ours['model']} B={B} | {out[0]['step_ms']:.1f} | "
      f"{out[0]['tokens_per_s']:.0f} | {out[0]['tflops']:.2f} | {sgemm:.1f} | "
      f"{format(torch32['step_ms'], '.1f') if torch32 else 'n/a'} | {common['commit']} |")
PY
rm -f "$raw" "$raw.one"

ok=$((test_rc == 0 && bench_rc == 0))
verdict=passed
if ((dry_run)); then verdict="all skipped, as they must be here"; fi
log "done in $(($(date +%s) - start)) s; gpu tests $([[ $test_rc == 0 ]] && echo "$verdict" || echo FAILED)," \
  "benchmark $([[ $bench_rc == 0 ]] && echo "finished" || echo FAILED)"
((ok)) || exit 1
