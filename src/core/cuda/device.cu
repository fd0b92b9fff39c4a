// CUDA device set-up: the probe that says whether (and which) GPUs are usable, the CUDA context
// (a stream and a cuBLAS handle, owned by CudaResources), the device allocations behind Buffers,
// the host <-> device copies, and the error reports of the CUDA and cuBLAS check macros. On a
// machine without a driver, cudaGetDeviceCount returns cudaErrorInsufficientDriver (or
// cudaErrorNoDevice); we turn that into "no GPU" and a sentence.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/cuda/check.h"
#include "core/cuda/common.cuh"
#include "core/cuda/cuda_ops.h"
#include "core/cuda/device_memory.h"
#include "core/errors.h"

namespace optimus::core {

// ---- the errors of the check macros ------------------------------------------------------------

namespace cuda::detail {

namespace {

const char* cuda_advice(cudaError_t code) {
  switch (code) {
    case cudaErrorMemoryAllocation:
      return "the GPU is out of memory: use a smaller batch or model, or more ranks";
    case cudaErrorInsufficientDriver:
    case cudaErrorNoDevice:
      return "no usable GPU here: run on the CPU device";
    case cudaErrorInvalidDevice:
      return "pass a device index below the number of GPUs that cuda_device_report() lists";
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
      return "a kernel touched memory outside its buffers (a host pointer or a wrong size?): rerun under "
             "compute-sanitizer to find it; the context cannot be used after this";
    case cudaErrorInvalidConfiguration:
      return "a kernel was launched with an impossible grid: report the op and the sizes passed to it";
    default:
      return "check the sizes and pointers passed to the op; CUDA_LAUNCH_BLOCKING=1 makes the failing kernel "
             "report itself";
  }
}

const char* cublas_advice(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "cuBLAS could not start: check that the GPU is usable (cuda_device_report())";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "the GPU is out of memory: use a smaller batch or model, or more ranks";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "a size is negative or a leading dimension is smaller than its matrix's row: check the matmul's "
             "M, N, K and strides";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "the product's kernel failed on the GPU: rerun under compute-sanitizer";
    default:
      return "check the matmul's arguments and that the handle belongs to the current GPU";
  }
}

}  // namespace

[[noreturn]] void failed(cudaError_t code, const char* call, const char* file, int line) {
  call_failed("CUDA", call, file, line, "cudaSuccess",
              std::string(cudaGetErrorName(code)) + " (" + cudaGetErrorString(code) + ")", cuda_advice(code));
}

[[noreturn]] void failed(cublasStatus_t status, const char* call, const char* file, int line) {
  call_failed("cuBLAS", call, file, line, "CUBLAS_STATUS_SUCCESS",
              std::string(cublasGetStatusName(status)) + " (" + cublasGetStatusString(status) + ")",
              cublas_advice(status));
}

}  // namespace cuda::detail

// ---- the probe ---------------------------------------------------------------------------------

bool cuda_backend_built() {
  return true;
}

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return 0;
  }
  return n;
}

std::vector<std::string> cuda_bus_ids() {
  std::vector<std::string> ids;
  for (int d = 0; d < cuda_device_count(); ++d) {
    char id[32] = "";
    if (cudaDeviceGetPCIBusId(id, sizeof id, d) != cudaSuccess) {
      cudaGetLastError();
      std::snprintf(id, sizeof id, "unknown-%d", d);  // distinct, so that no two GPUs look like one
    }
    ids.emplace_back(id);
  }
  return ids;
}

std::string cuda_device_report() {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    cudaGetLastError();
    std::string why = err == cudaErrorInsufficientDriver ? "CUDA driver is missing or too old"
                      : err == cudaErrorNoDevice         ? "no CUDA-capable device is present"
                                                         : cudaGetErrorString(err);
    return std::string("no GPU: ") + why + " (" + cudaGetErrorName(err) + "); the CPU backend will be used";
  }
  if (n == 0) return "no GPU: the CUDA runtime found no device; the CPU backend will be used";
  std::string s = std::to_string(n) + (n == 1 ? " GPU:" : " GPUs:");
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, d) == cudaSuccess) {
      s += " [" + std::to_string(d) + "] " + p.name + " (sm_" + std::to_string(p.major) + std::to_string(p.minor) +
           ", " + std::to_string(p.totalGlobalMem >> 20) + " MiB)";
    }
  }
  return s;
}

// ---- the context -------------------------------------------------------------------------------

/// What a CUDA context owns. Made once by cuda_context; every copy of the Context shares it, and
/// the last one to go destroys the handle and the stream (queued work still completes).
struct CudaResources {
  int device = -1;
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;

  CudaResources() = default;
  CudaResources(const CudaResources&) = delete;
  CudaResources& operator=(const CudaResources&) = delete;
  ~CudaResources() {
    // No checks: a destructor must not throw, and at exit the driver may already be gone.
    if (cublas != nullptr) cublasDestroy(cublas);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
};

Context cuda_context(MemoryLedger& ledger, int device_index, CudaOptions options) {
  const int count = cuda_device_count();
  if (device_index < 0 || device_index >= count) {
    throw std::runtime_error("cuda_context: there is no GPU " + std::to_string(device_index) + " (" +
                             cuda_device_report() + "); pass an index in [0, " + std::to_string(count) +
                             ") or use the CPU device");
  }
  OPTIMUS_CUDA_CHECK(cudaSetDevice(device_index));
  auto resources = std::make_shared<CudaResources>();
  resources->device = device_index;
  // A blocking stream: it waits for the legacy default stream, where Buffer's cudaMemset runs.
  OPTIMUS_CUDA_CHECK(cudaStreamCreate(&resources->stream));
  OPTIMUS_CUDA_CHECK(cublasCreate(&resources->cublas));
  OPTIMUS_CUDA_CHECK(cublasSetStream(resources->cublas, resources->stream));
  // CUBLAS_DEFAULT_MATH computes float32 products in float32; TF32 only when asked for.
  OPTIMUS_CUDA_CHECK(
      cublasSetMathMode(resources->cublas, options.allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));

  Context ctx;
  ctx.device = Device::cuda;
  ctx.ledger = &ledger;
  ctx.cuda_device = device_index;
  ctx.cuda_stream = resources->stream;
  ctx.cublas_handle = resources->cublas;
  ctx.cuda_resources = std::move(resources);
  return ctx;
}

// ---- Buffers' device memory ----------------------------------------------------------------------

void* device_alloc_zeroed(size_t bytes) {
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, bytes);
  if (err == cudaSuccess) err = cudaMemset(p, 0, bytes);
  if (err != cudaSuccess) {
    if (p != nullptr) cudaFree(p);
    throw std::runtime_error("cudaMalloc of " + std::to_string(bytes) + " bytes failed: " + cudaGetErrorString(err) +
                             "; use a smaller batch or model, or more ranks");
  }
  return p;
}

void device_zero(void* p, size_t bytes) {
  const cudaError_t err = cudaMemset(p, 0, bytes);
  if (err != cudaSuccess) {
    throw std::runtime_error("cudaMemset of " + std::to_string(bytes) + " bytes failed: " + cudaGetErrorString(err));
  }
}

void device_free(void* p) noexcept {
  cudaFree(p);
}

int device_current() {
  int d = 0;
  OPTIMUS_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

// ---- copies (core/context.h on a CUDA context) -----------------------------------------------------
// Each copy is queued on the context's stream, after the ops before it, and waited for, so the host
// side may be read or reused as soon as the call returns (pageable host memory is fine).

namespace cuda {

void copy_bytes_to_device(const Context& ctx, void* device_dst, const void* host_src, size_t bytes) {
  if (bytes == 0) return;
  OPTIMUS_CUDA_CHECK(cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice, stream_of(ctx)));
  OPTIMUS_CUDA_CHECK(cudaStreamSynchronize(stream_of(ctx)));
}

void copy_bytes_to_host(const Context& ctx, void* host_dst, const void* device_src, size_t bytes) {
  if (bytes == 0) return;
  OPTIMUS_CUDA_CHECK(cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDeviceToHost, stream_of(ctx)));
  OPTIMUS_CUDA_CHECK(cudaStreamSynchronize(stream_of(ctx)));
}

void copy_bytes_on_device(const Context& ctx, void* device_dst, const void* device_src, size_t bytes) {
  if (bytes == 0) return;
  // Ordered on the stream like a kernel; no wait is needed, the host touches neither side.
  OPTIMUS_CUDA_CHECK(cudaMemcpyAsync(device_dst, device_src, bytes, cudaMemcpyDeviceToDevice, stream_of(ctx)));
}

void synchronize(const Context& ctx) {
  OPTIMUS_CUDA_CHECK(cudaStreamSynchronize(stream_of(ctx)));
}

}  // namespace cuda

}  // namespace optimus::core
