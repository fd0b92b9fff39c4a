// StagedCommunicator: device -> host copy, the MPI collective on the host copy, host -> device copy.
// Only the data a rank needs moves: a broadcast's root only sends, a reduce's non-roots only send.
#include "comm/staged_communicator.h"

#include <stdexcept>
#include <type_traits>

namespace optimus::comm {

namespace {

/// Calls f with a null pointer of the element type `t` names, e.g. f(static_cast<float*>(nullptr)).
template <typename F>
void with_type(DType t, F&& f) {
  switch (t) {
    case DType::f32:
      f(static_cast<float*>(nullptr));
      return;
    case DType::f64:
      f(static_cast<double*>(nullptr));
      return;
    case DType::i32:
      f(static_cast<int32_t*>(nullptr));
      return;
  }
}

}  // namespace

StagedCommunicator::StagedCommunicator(MPI_Comm comm, const core::Context& ctx, std::string name, CommLedger& ledger)
    : Communicator(detail::rank_in(comm), detail::size_of(comm), std::move(name), ledger), comm_(comm), ctx_(ctx) {
  host_ = std::make_unique<MpiCommunicator>(comm_, this->name(), uncounted_);
}

StagedCommunicator::~StagedCommunicator() {
  host_.reset();  // it does not own comm_
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owned_ && !finalized) OPTIMUS_MPI_CHECK(MPI_Comm_free(&comm_));
}

void* StagedCommunicator::staging(size_t bytes) {
  if (bytes > staging_.bytes()) {
    const int64_t floats = static_cast<int64_t>((bytes + sizeof(float) - 1) / sizeof(float));
    staging_ = core::Buffer();  // release the old one first: the ledger sees one staging buffer at a time
    staging_ = core::Buffer(core::MemoryLedger::host(), core::MemoryCategory::communication, {floats});
  }
  return staging_.data();
}

void StagedCommunicator::do_all_reduce(void* buf, int64_t n, DType t, ReduceOp op) {
  const size_t bytes = static_cast<size_t>(n * dtype_size(t));
  void* host = staging(bytes);
  core::copy_bytes_to_host(ctx_, host, buf, bytes);
  with_type(t, [&](auto* type) { host_->all_reduce(static_cast<decltype(type)>(host), n, op); });
  core::copy_bytes_to_device(ctx_, buf, host, bytes);
}

void StagedCommunicator::do_broadcast(void* buf, int64_t n, DType t, int root) {
  const size_t bytes = static_cast<size_t>(n * dtype_size(t));
  void* host = staging(bytes);
  if (rank() == root) core::copy_bytes_to_host(ctx_, host, buf, bytes);
  with_type(t, [&](auto* type) { host_->broadcast(static_cast<decltype(type)>(host), n, root); });
  if (rank() != root) core::copy_bytes_to_device(ctx_, buf, host, bytes);
}

void StagedCommunicator::do_reduce(void* buf, int64_t n, DType t, int root, ReduceOp op) {
  const size_t bytes = static_cast<size_t>(n * dtype_size(t));
  void* host = staging(bytes);
  core::copy_bytes_to_host(ctx_, host, buf, bytes);
  with_type(t, [&](auto* type) { host_->reduce(static_cast<decltype(type)>(host), n, root, op); });
  if (rank() == root) core::copy_bytes_to_device(ctx_, buf, host, bytes);
}

void StagedCommunicator::do_all_gather(void* recv, const void* send, int64_t n, DType t) {
  // Host layout (size·n): this rank's block is staged at its place, and MPI gathers in place.
  // Copying send before recv is written also serves send == recv + rank·n.
  const size_t block = static_cast<size_t>(n * dtype_size(t));
  char* host = static_cast<char*>(staging(block * static_cast<size_t>(size())));
  char* mine = host + block * static_cast<size_t>(rank());
  core::copy_bytes_to_host(ctx_, mine, send, block);
  with_type(t, [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    host_->all_gather(reinterpret_cast<T*>(host), reinterpret_cast<const T*>(mine), n);
  });
  core::copy_bytes_to_device(ctx_, recv, host, block * static_cast<size_t>(size()));
}

void StagedCommunicator::do_reduce_scatter(void* recv, const void* send, int64_t n, DType t, ReduceOp op) {
  // Host layout: send's size·n elements, then the n this rank keeps.
  const size_t block = static_cast<size_t>(n * dtype_size(t));
  const size_t whole = block * static_cast<size_t>(size());
  char* host_send = static_cast<char*>(staging(whole + block));
  char* host_recv = host_send + whole;
  core::copy_bytes_to_host(ctx_, host_send, send, whole);
  with_type(t, [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    host_->reduce_scatter(reinterpret_cast<T*>(host_recv), reinterpret_cast<const T*>(host_send), n, op);
  });
  core::copy_bytes_to_device(ctx_, recv, host_recv, block);
}

void StagedCommunicator::do_barrier() {
  core::synchronize(ctx_);  // this rank's queued work is done, then every rank meets
  host_->barrier();
}

std::unique_ptr<Communicator> StagedCommunicator::do_split(int color, int key, std::string name) {
  MPI_Comm child = MPI_COMM_NULL;
  OPTIMUS_MPI_CHECK(MPI_Comm_split(comm_, color, key, &child));
  auto result = std::make_unique<StagedCommunicator>(child, ctx_, std::move(name), ledger());
  result->owned_ = true;
  return result;
}

}  // namespace optimus::comm
