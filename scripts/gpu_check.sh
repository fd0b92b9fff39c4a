#!/usr/bin/env bash
# The GPU check (issue 7): one script for a lent GPU machine, which has CMake, ninja and nvcc but
# no network, and may lack MPI, OpenBLAS and the header-only libraries. Two steps:
#
#   here (with the network):   scripts/gpu_check.sh --prepare
#       downloads Debian's packages of what the GPU machine may lack into .device-carry/debs
#       (ignored by git; about 20 MiB), to travel with the working tree;
#   there (carry .device-carry): scripts/gpu_check.sh
#       unpacks them under /tmp/optimus-deps where the machine lacks them, builds the CUDA backend
#       and its tests in build-gpu (sm_90), runs `ctest -L gpu`, and writes the results under $OUT
#       (out/gpu_check when $OUT is unset): gpu.txt, build.log, ctest_gpu.log, ctest_gpu.xml,
#       summary.txt. Exits non-zero if the build or a gpu test fails; made to end within 8 minutes.
#       Through the device tool: run(command="bash scripts/gpu_check.sh", carry=[".device-carry"]).
#
# TODO(issue 7, phase 2): benchmark stage 1 on GPT-2 124M shapes on the GPU (`optimus bench
# --device cuda`, median step time, tokens/s, model FLOP/s, peak memory) and write it to
# $OUT/bench_serial_124m.jsonl. Needs the stages on the device (the --device flag), so it is not
# here yet.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
carry=$root/.device-carry
start=$(date +%s)

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

# ---- the machine --------------------------------------------------------------------------------
{
  if command -v nvidia-smi >/dev/null 2>&1; then nvidia-smi -L; else echo "no nvidia-smi on this machine"; fi
  nvcc --version 2>&1 | tail -1 || true
  cmake --version | head -1
  nproc
} >"$out/gpu.txt" 2>&1
log "machine: $(head -1 "$out/gpu.txt"); $(nproc) cores"

# ---- what this machine lacks, from the carried packages -----------------------------------------
deps=/tmp/optimus-deps
cmake_args=()
# (GPU_CHECK_CARRIED=1 uses the carried packages even where the machine has its own: a dry run.)
if [[ ${GPU_CHECK_CARRIED:-0} != 1 && -f /usr/include/Random123/philox.h ]] && command -v mpicxx >/dev/null 2>&1; then
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
build=$root/build-gpu
generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
set +e
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DOPTIMUS_CUDA=ON -DOPTIMUS_DOCS=OFF "${cmake_args[@]}" >"$out/build.log" 2>&1
configure_rc=$?
set -e
grep "optimus: backends built" "$out/build.log" | tee -a "$out/summary.txt" || true
if ((configure_rc != 0)) || ! grep -q "backends built: .* + CUDA" "$out/build.log"; then
  tail -30 "$out/build.log"
  log "configure FAILED, or the CUDA backend was not found (build.log)"
  exit 1
fi
set +e
cmake --build "$build" --parallel "$(nproc)" --target test_gpu_ops test_gpu_comm >>"$out/build.log" 2>&1
build_rc=$?
set -e
if ((build_rc != 0)); then
  tail -30 "$out/build.log"
  log "build FAILED after $(($(date +%s) - start)) s (build.log)"
  exit 1
fi
log "built in $(($(date +%s) - start)) s"

# ---- the gpu tests --------------------------------------------------------------------------------
set +e
(cd "$build" && ctest -L gpu --output-on-failure --timeout 300 --output-junit "$out/ctest_gpu.xml") \
  >"$out/ctest_gpu.log" 2>&1
test_rc=$?
set -e
grep -E "tests passed|tests failed|\*\*\*Failed|Not Run" "$out/ctest_gpu.log" | tee -a "$out/summary.txt" || true
log "$(grep -c "(Skipped)" "$out/ctest_gpu.log" || true) gpu tests skipped"
# Here a skipped op test means the GPU was not usable: that fails the check. (NCCL at more ranks
# than GPUs is skipped by design.)
if grep -q "gpu:.*(Skipped)" "$out/ctest_gpu.log"; then
  log "the op tests were skipped: the CUDA runtime saw no usable GPU (see ctest_gpu.log)"
  test_rc=1
fi

# ---- TODO(issue 7, phase 2): stage 1 on GPT-2 124M shapes -----------------------------------------
log "benchmark: not yet (phase 2: stages on the device)"

log "done in $(($(date +%s) - start)) s; gpu tests $([[ $test_rc == 0 ]] && echo passed || echo FAILED)"
exit $test_rc
