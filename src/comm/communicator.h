// The Communicator interface: the collectives the stages use, over a group of ranks.
// Stage 2 needs all_reduce; stage 3 adds broadcast and reduce (SUMMA), all_gather and
// reduce_scatter (the embedding) over the row_comm and col_comm of the q×q grid. Implementations:
// MpiCommunicator (host memory); every completed call is counted in a CommLedger. Chapter 6 adds
// started collectives (start_broadcast, start_reduce, start_all_reduce): a Request in flight that
// the caller waits for later, so that a product can run while the transfer moves.
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "comm/comm_ledger.h"

namespace optimus::comm {

enum class ReduceOp { sum, max };
enum class DType { f32, f64, i32 };
inline constexpr int kDTypeCount = 3;

/// Bytes of one element of type t.
inline int64_t dtype_size(DType t) {
  return t == DType::f64 ? 8 : 4;
}

/// The element types the collectives carry.
template <typename T>
concept CommElement = std::same_as<T, float> || std::same_as<T, double> || std::same_as<T, int32_t>;

template <CommElement T>
constexpr DType dtype_of() {
  if constexpr (std::same_as<T, float>) return DType::f32;
  if constexpr (std::same_as<T, double>) return DType::f64;
  return DType::i32;
}

/// What an implementation returns for a collective it has started and not finished.
class Pending {
 public:
  virtual ~Pending() = default;
  /// Returns when the collective has completed on this rank (for a device communicator: when the
  /// work queued after this call on the context's stream will see its result).
  virtual void wait() = 0;
  /// Whether it has completed, without waiting; a call also lets the implementation move it on.
  virtual bool test() = 0;
};

/// A started collective. wait() returns once it has completed on this rank: only then may its
/// buffer be read (its result) or written (its next use). A Request not waited for is waited for
/// by its destructor, and by assigning another to it. Move-only; a default Request is complete.
/// The destructor never throws: a transfer that fails there (a device error, say, while an
/// exception unwinds past the Request) is reported on stderr and ends the whole job, since the
/// other ranks may be waiting in the same collective.
class Request {
 public:
  Request() = default;
  explicit Request(std::unique_ptr<Pending> pending) : pending_(std::move(pending)) {}
  Request(Request&&) noexcept = default;
  Request& operator=(Request&& other) {
    wait();
    pending_ = std::move(other.pending_);
    return *this;
  }
  ~Request() { wait_or_abort(); }

  void wait() {
    if (pending_ == nullptr) return;
    pending_->wait();
    pending_.reset();
  }

  /// Whether it has completed, without waiting. Open MPI moves a transfer only inside MPI calls, so
  /// asking now and then, between products, is what moves it on while this rank computes.
  bool done() {
    if (pending_ != nullptr && pending_->test()) pending_.reset();
    return pending_ == nullptr;
  }

 private:
  void wait_or_abort() noexcept;

  std::unique_ptr<Pending> pending_;
};

/// For an error on this rank alone: prints "rank r: error: <message>" to stderr and ends every rank
/// of the job (MPI_Abort on the world; a plain abort where MPI is not running).
[[noreturn]] void abort_world(const std::string& message) noexcept;

/// A group of `size()` ranks; this process is `rank()` in it. Every member must make the same
/// calls in the same order with the same n (and root) — as with MPI. Counts are elements, not
/// bytes. Buffers live where the implementation expects them (host memory for MpiCommunicator).
/// Bad arguments (n < 0, a root outside the group, n beyond what the implementation can send in
/// one call) throw std::invalid_argument or std::length_error before any communication.
class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  /// The name the ledger records under ("world", "row", "col", ...).
  const std::string& name() const { return name_; }
  CommLedger& ledger() const { return *ledger_; }

  /// buf[0..n) becomes the element-wise reduction over all ranks, on every rank.
  template <CommElement T>
  void all_reduce(T* buf, int64_t n, ReduceOp op = ReduceOp::sum) {
    check_count("all_reduce", n);
    do_all_reduce(buf, n, dtype_of<T>(), op);
    record(CommOp::all_reduce, n * int64_t{sizeof(T)});
  }

  /// buf[0..n) of rank `root` is copied into buf on every rank.
  template <CommElement T>
  void broadcast(T* buf, int64_t n, int root) {
    check_count("broadcast", n);
    check_root("broadcast", root);
    do_broadcast(buf, n, dtype_of<T>(), root);
    record(CommOp::broadcast, n * int64_t{sizeof(T)});
  }

  /// buf[0..n) on `root` becomes the reduction over all ranks; on other ranks buf is only read.
  template <CommElement T>
  void reduce(T* buf, int64_t n, int root, ReduceOp op = ReduceOp::sum) {
    check_count("reduce", n);
    check_root("reduce", root);
    do_reduce(buf, n, dtype_of<T>(), root, op);
    record(CommOp::reduce, n * int64_t{sizeof(T)});
  }

  /// recv (size()·n) gets rank k's send (n) at recv[k·n]. send may be recv + rank()·n (in place).
  template <CommElement T>
  void all_gather(T* recv, const T* send, int64_t n) {
    check_count("all_gather", n);
    do_all_gather(recv, send, n, dtype_of<T>());
    record(CommOp::all_gather, size_ * n * int64_t{sizeof(T)});
  }

  /// send (size()·n) is reduced element-wise over all ranks; recv (n) gets block rank() of the
  /// result, i.e. the reduction of send[rank()·n .. rank()·n + n). recv must not overlap send.
  template <CommElement T>
  void reduce_scatter(T* recv, const T* send, int64_t n, ReduceOp op = ReduceOp::sum) {
    check_count("reduce_scatter", n);
    do_reduce_scatter(recv, send, n, dtype_of<T>(), op);
    record(CommOp::reduce_scatter, size_ * n * int64_t{sizeof(T)});
  }

  // ---- started collectives: the same operations, returning before they complete -------------
  // Each is recorded in the ledger when it starts, exactly as its blocking twin. Every member of the
  // group must start the same collectives in the same order (started and blocking calls of one
  // group may not interleave while a started one is in flight). An implementation without
  // non-blocking collectives completes the call before returning (the Request is then complete).

  /// broadcast, started.
  template <CommElement T>
  [[nodiscard]] Request start_broadcast(T* buf, int64_t n, int root) {
    check_count("broadcast", n);
    check_root("broadcast", root);
    Request r(do_start_broadcast(buf, n, dtype_of<T>(), root));
    record(CommOp::broadcast, n * int64_t{sizeof(T)});
    return r;
  }

  /// reduce, started.
  template <CommElement T>
  [[nodiscard]] Request start_reduce(T* buf, int64_t n, int root, ReduceOp op = ReduceOp::sum) {
    check_count("reduce", n);
    check_root("reduce", root);
    Request r(do_start_reduce(buf, n, dtype_of<T>(), root, op));
    record(CommOp::reduce, n * int64_t{sizeof(T)});
    return r;
  }

  /// all_reduce, started.
  template <CommElement T>
  [[nodiscard]] Request start_all_reduce(T* buf, int64_t n, ReduceOp op = ReduceOp::sum) {
    check_count("all_reduce", n);
    Request r(do_start_all_reduce(buf, n, dtype_of<T>(), op));
    record(CommOp::all_reduce, n * int64_t{sizeof(T)});
    return r;
  }

  /// Returns once every rank of the group has entered it.
  void barrier();

  /// Collective over this group: ranks with the same color (≥ 0) form a new group, ordered by key
  /// (ties by rank here). The child records into this communicator's ledger under `name`.
  std::unique_ptr<Communicator> split(int color, int key, std::string name);

 protected:
  Communicator(int rank, int size, std::string name, CommLedger& ledger)
      : rank_(rank), size_(size), name_(std::move(name)), ledger_(&ledger) {}

  // What an implementation provides; arguments are already checked (n ≥ 0, root in the group).
  virtual void do_all_reduce(void* buf, int64_t n, DType t, ReduceOp op) = 0;
  virtual void do_broadcast(void* buf, int64_t n, DType t, int root) = 0;
  virtual void do_reduce(void* buf, int64_t n, DType t, int root, ReduceOp op) = 0;
  virtual void do_all_gather(void* recv, const void* send, int64_t n, DType t) = 0;
  virtual void do_reduce_scatter(void* recv, const void* send, int64_t n, DType t, ReduceOp op) = 0;
  virtual void do_barrier() = 0;
  // The started forms. By default the blocking call runs to completion and nothing is pending.
  virtual std::unique_ptr<Pending> do_start_broadcast(void* buf, int64_t n, DType t, int root) {
    do_broadcast(buf, n, t, root);
    return nullptr;
  }
  virtual std::unique_ptr<Pending> do_start_reduce(void* buf, int64_t n, DType t, int root, ReduceOp op) {
    do_reduce(buf, n, t, root, op);
    return nullptr;
  }
  virtual std::unique_ptr<Pending> do_start_all_reduce(void* buf, int64_t n, DType t, ReduceOp op) {
    do_all_reduce(buf, n, t, op);
    return nullptr;
  }
  virtual std::unique_ptr<Communicator> do_split(int color, int key, std::string name) = 0;

 private:
  void check_count(const char* op, int64_t n) const;
  void check_root(const char* op, int root) const;
  void record(CommOp op, int64_t bytes) { ledger_->record(name_, op, bytes, size_); }

  int rank_;
  int size_;
  std::string name_;
  CommLedger* ledger_;  // not owned; outlives the communicator
};

}  // namespace optimus::comm
