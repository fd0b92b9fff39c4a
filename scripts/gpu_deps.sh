# What a bare GPU machine lacks for the build, carried as Debian packages (sourced by
# scripts/gpu_check.sh and scripts/gpu_bare_dry_run). Such a machine has a C++ compiler, CMake,
# ninja, the CUDA toolkit and Python, and nothing else of ours; everything below is unpacked under
# one prefix and found there alone. Add a package here when the build gains a dependency: the bare
# dry run (scripts/gpu_bare_dry_run) fails at configure until it is.

# Debian 12 packages: headers (-dev, header-only), OpenBLAS (OpenMP build), Open MPI with its
# runtime libraries, PCRE2 (the pre-tokenizer's regex) and pkg-config (how CMake finds PCRE2).
gpu_packages=(
  librandom123-dev catch2 libcli11-dev nlohmann-json3-dev
  libopenblas-openmp-dev libopenblas0-openmp libgfortran5 libquadmath0
  libopenmpi-dev libopenmpi3 openmpi-bin openmpi-common
  libhwloc15 libevent-core-2.1-7 libevent-pthreads-2.1-7 libpmix2 libfabric1 libucx0 libibverbs1
  ibverbs-providers librdmacm1 libpsm2-2 libpsm-infinipath1 libnl-3-200 libnl-route-3-200 libmunge2
  libnuma1 libatomic1
  libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3
  pkgconf pkgconf-bin libpkgconf3
)

# gpu_deps_use DEBS_DIR PREFIX: unpacks every .deb of DEBS_DIR under PREFIX, points PATH,
# LD_LIBRARY_PATH, pkg-config and Open MPI at it, and sets gpu_cmake_args (the configure flags that
# make CMake search PREFIX). Returns 1 when DEBS_DIR holds no package.
gpu_deps_use() {
  local debs_dir=$1 deps=$2 arch=x86_64-linux-gnu deb member
  shopt -s nullglob
  local debs=("$debs_dir"/*.deb)
  shopt -u nullglob
  ((${#debs[@]} > 0)) || return 1
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
  export PATH=$deps/usr/bin:$PATH
  export LD_LIBRARY_PATH=$deps/usr/lib/$arch:$deps/usr/lib/$arch/openmpi/lib:$deps/usr/lib/$arch/openblas-openmp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  # pkg-config: only the carried .pc files, their /usr paths moved under the prefix.
  # (Its flags are kept whole: under the prefix, /usr/include is no system directory.)
  export PKG_CONFIG_LIBDIR=$deps/usr/lib/$arch/pkgconfig:$deps/usr/share/pkgconfig PKG_CONFIG_SYSROOT_DIR=$deps
  export PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1
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
  gpu_cmake_args=("-DCMAKE_PREFIX_PATH=$deps/usr" "-DCMAKE_FIND_ROOT_PATH=$deps"
                  -DCMAKE_FIND_ROOT_PATH_MODE_INCLUDE=BOTH -DCMAKE_FIND_ROOT_PATH_MODE_LIBRARY=BOTH
                  -DCMAKE_FIND_ROOT_PATH_MODE_PACKAGE=BOTH -DCMAKE_FIND_ROOT_PATH_MODE_PROGRAM=BOTH
                  "-DPKG_CONFIG_EXECUTABLE=$deps/usr/bin/pkgconf"
                  "-DMPI_CXX_COMPILER=$deps/usr/bin/mpicxx.openmpi" "-DMPIEXEC_EXECUTABLE=$deps/usr/bin/mpiexec.openmpi")
}

# gpu_env ROOT OWN: the environment of a build and its runs on this machine. Its own packages when
# OWN is 1 or it has them all (unless GPU_CHECK_CARRIED=1: a dry run of a bare machine), else the
# carried ones (GPU_CHECK_DEBS, default ROOT/.device-carry/debs); NCCL from the CUDA toolkit, else
# from Python's nvidia-nccl wheel; MPI allowed as root and oversubscribed. Sets gpu_cmake_args, prints
# what it chose, and returns 1 when packages are missing and none are carried.
gpu_env() {
  local root=$1 own=$2 wheel header
  gpu_cmake_args=()
  if ((own)) || { [[ ${GPU_CHECK_CARRIED:-0} != 1 && -f /usr/include/Random123/philox.h && -f /usr/include/pcre2.h ]] &&
    command -v mpicxx >/dev/null && command -v pkg-config >/dev/null; }; then
    echo "gpu_check: dependencies: the machine's own"
  elif gpu_deps_use "${GPU_CHECK_DEBS:-$root/.device-carry/debs}" /tmp/optimus-deps; then
    echo "gpu_check: dependencies: the carried packages, unpacked in /tmp/optimus-deps"
  else
    return 1
  fi
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  # Shared memory without the kernel's single-copy mechanism (CMA), which a virtual machine may
  # refuse; NCCL says what goes wrong, if anything does.
  export OMPI_MCA_btl_vader_single_copy_mechanism=none NCCL_DEBUG=${NCCL_DEBUG:-WARN}
  [[ -d /usr/local/cuda/bin ]] && export PATH=$PATH:/usr/local/cuda/bin
  [[ -f /usr/local/cuda/include/nccl.h ]] && return 0
  # The wheel has only libnccl.so.2 and FindNCCL looks for libnccl.so: link both under /tmp.
  wheel=$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null || true)
  if [[ -z $wheel || ! -f $wheel/include/nccl.h ]]; then  # another layout: look for the header
    header=$(timeout 20 find /usr /opt /root -name nccl.h -path "*nccl/include/*" 2>/dev/null | head -1)
    wheel=${header%/include/nccl.h}
  fi
  if [[ -n $wheel && -f $wheel/include/nccl.h ]]; then
    mkdir -p /tmp/optimus-nccl/lib
    ln -sfn "$wheel/include" /tmp/optimus-nccl/include
    ln -sf "$wheel/lib/libnccl.so.2" /tmp/optimus-nccl/lib/libnccl.so
    ln -sf "$wheel/lib/libnccl.so.2" /tmp/optimus-nccl/lib/libnccl.so.2
    export NCCL_ROOT=/tmp/optimus-nccl LD_LIBRARY_PATH=/tmp/optimus-nccl/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    echo "gpu_check: NCCL: from $wheel"
  else
    echo "gpu_check: NCCL: not in /usr/local/cuda nor in Python's nvidia.nccl; the CUDA backend will not configure"
  fi
}
