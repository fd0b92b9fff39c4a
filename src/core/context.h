// The Context every op receives: which backend runs it (CPU, CUDA or meta), which ledger records its
// memory and, when one is given, which op ledger records what its ops cost. Ops dispatch on
// ctx.device (core/dispatch.h). A meta context runs nothing: its buffers hold no numbers, its ops
// only record their cost, so a model of any size can be measured without the memory to hold it. A CUDA context also
// carries the stream its ops run on and the cuBLAS handle bound to that stream; it shares the ownership of both, so
// they live as long as any copy of the context. Also here: moving numbers between the host and a context's device, for
// stages that keep their tensors on a GPU (chapter 01's GPU section).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/memory_ledger.h"
#include "core/op_ledger.h"
#include "core/tensor.h"

namespace optimus::core {

/// The stream, the cuBLAS handle and the device of a CUDA context (defined by the CUDA backend).
struct CudaResources;

struct Context {
  Device device = Device::cpu;
  MemoryLedger* ledger = &MemoryLedger::host();
  OpLedger* ops = nullptr;        // records every op's cost; nullptr records nothing
  OpClock* clock = nullptr;       // times every op's CPU code by kind; nullptr times nothing
  int cuda_device = -1;           // the GPU's index when device == cuda
  void* cuda_stream = nullptr;    // cudaStream_t when device == cuda
  void* cublas_handle = nullptr;  // cublasHandle_t when device == cuda
  /// On meta: the CPU threads of the device planned for. A CPU op's per-thread scratch (attention's
  /// dropout slots) is recorded for this many threads, not for the planning machine's OpenMP count.
  int meta_threads = 1;
  /// Owns cuda_stream and cublas_handle: they are destroyed with the last copy of the context.
  std::shared_ptr<const CudaResources> cuda_resources;
};

/// A CPU context recording into `ledger` (the process's host ledger by default), and the ops'
/// costs into `ops` when it is given.
Context cpu_context(MemoryLedger& ledger = MemoryLedger::host(), OpLedger* ops = nullptr);

/// A meta context: Buffers on it are recorded in `ledger` exactly as CPU buffers of the same shape
/// and category, but hold no storage (their addresses are reserved, with no access allowed); ops
/// record their cost in `ops` (when given) and compute nothing. Values that reach the host are NaN:
/// core::sum and core::sum_squares give NaN, and a copy to the host fills it with bytes 0xFF (a
/// float or double NaN, an int -1). A meta run says it has no value rather than inventing one.
/// Scratch that a CPU op holds per OpenMP thread is recorded for `threads` threads (the device
/// planned for; 1, the least, unless told), so a plan is the same on every planning machine.
Context meta_context(MemoryLedger& ledger, OpLedger* ops = nullptr, int threads = 1);

/// The threads a CPU op's per-thread scratch is sized for: the context's meta_threads on meta,
/// OpenMP's thread count (omp_get_max_threads) otherwise.
int scratch_threads(const Context& ctx);

/// How a CUDA context runs its matrix products.
struct CudaOptions {
  /// Let cuBLAS round float32 operands to TF32 on the tensor cores (about 1e-3 relative error
  /// instead of 1e-7). Off by default: the equivalence tests compare float32 to 1e-5.
  bool allow_tf32 = false;
};

/// A CUDA context on GPU `device_index`, recording device memory into `ledger`: makes that GPU
/// current for the calling thread (Buffers on Device::cuda are allocated there), creates a stream
/// and a cuBLAS handle on it (default float32 math: no TF32 unless options ask for it). Throws
/// std::runtime_error naming the index and the GPUs found if there is no such GPU, or the build
/// has no CUDA backend.
Context cuda_context(MemoryLedger& ledger, int device_index, CudaOptions options = {});

/// Whether this build has the CUDA backend compiled in.
bool cuda_backend_built();

/// What the CUDA runtime reports about GPUs, as one sentence: "2 GPUs: ...", or why there is none
/// ("no GPU: CUDA driver is missing or too old (cudaErrorInsufficientDriver)"), or that the
/// backend is not built. Never throws.
std::string cuda_device_report();

/// Number of usable GPUs (0 when none, or when the backend is not built).
int cuda_device_count();

/// The PCI bus id of each GPU this process sees, in CUDA's device order ("0000:3B:00.0"; empty
/// without the backend or a GPU). Two processes that see one GPU under different indices (each
/// with its own CUDA_VISIBLE_DEVICES) find the same id for it.
std::vector<std::string> cuda_bus_ids();

// ---- moving numbers between the host and the context's device -------------------------------
// On a CPU context these are plain memcpy. On a CUDA context they are ordered on its stream and
// return when the copy is complete, so the host may read (or reuse) its side at once. On a meta
// context nothing moves, and a copy to the host fills the host side with bytes 0xFF (NaN).

/// device_dst = host_src, `bytes` bytes.
void copy_bytes_to_device(const Context& ctx, void* device_dst, const void* host_src, size_t bytes);
/// host_dst = device_src, `bytes` bytes; waits for the work queued before it on the stream.
void copy_bytes_to_host(const Context& ctx, void* host_dst, const void* device_src, size_t bytes);
/// device_dst = device_src, `bytes` bytes, both on the context's device (they must not overlap).
void copy_bytes_on_device(const Context& ctx, void* device_dst, const void* device_src, size_t bytes);

/// dst (n) on the device = src (n) on the host: floats (activations) or ints (token ids, targets).
template <typename T>
void copy_to_device(const Context& ctx, T* dst, const T* src, int64_t n) {
  static_assert(std::is_trivially_copyable_v<T>);
  copy_bytes_to_device(ctx, dst, src, static_cast<size_t>(n) * sizeof(T));
}
/// dst (n) on the host = src (n) on the device.
template <typename T>
void copy_to_host(const Context& ctx, T* dst, const T* src, int64_t n) {
  static_assert(std::is_trivially_copyable_v<T>);
  copy_bytes_to_host(ctx, dst, src, static_cast<size_t>(n) * sizeof(T));
}
/// dst (n) = src (n), both on the device.
template <typename T>
void copy_on_device(const Context& ctx, T* dst, const T* src, int64_t n) {
  static_assert(std::is_trivially_copyable_v<T>);
  copy_bytes_on_device(ctx, dst, src, static_cast<size_t>(n) * sizeof(T));
}

/// Waits until every op queued on the context has finished (a no-op on the CPU). Timing a GPU
/// region needs it, or CUDA events, on both ends.
void synchronize(const Context& ctx);

}  // namespace optimus::core
