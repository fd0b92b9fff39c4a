// The device communicators against the MPI one (L1): every collective on
// integer-valued data, where any order of summation is exact, must give exactly what
// MpiCommunicator gives on the same host data; splits must group and order ranks alike; the
// ledger must count the same calls and bytes. Run for each kind (nccl, staged, staged-cpu) at
// 1, 2 and 4 ranks by tests/gpu/CMakeLists.txt.
#include <cstdint>
#include <string>
#include <vector>

#include "comm/mpi_communicator.h"
#include "comm_test.h"
#include "mpi/mpi_test.h"

namespace {

using namespace optimus;
using comm_test::DeviceArray;
using mpi_test::equal;
using mpi_test::world;

/// n integer-valued numbers that differ per rank and per element: (rank + 1) · 1000 + k % 97.
template <typename T>
std::vector<T> rank_data(int64_t n, int rank, int salt = 0) {
  std::vector<T> x(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) x[static_cast<size_t>(k)] = static_cast<T>((rank + 1) * 1000 + (k * 7 + salt) % 97);
  return x;
}

/// all_reduce through the device communicator equals all_reduce through MPI, for type T and op.
template <typename T>
bool all_reduce_agrees(comm::Communicator& dev, comm::Communicator& ref, comm::ReduceOp op) {
  const int64_t n = 1001;
  std::vector<T> want = rank_data<T>(n, dev.rank());
  DeviceArray<T> d(want);
  dev.all_reduce(d.data(), n, op);
  ref.all_reduce(want.data(), n, op);
  return equal(d.host(), want);
}

}  // namespace

TEST_CASE("device all_reduce equals MPI's for float, double and int, sum and max", "[device_comm]") {
  comm::CommLedger dev_ledger, ref_ledger;
  auto dev = comm_test::make_communicator(MPI_COMM_WORLD, "world", dev_ledger);
  comm::MpiCommunicator ref(MPI_COMM_WORLD, "world", ref_ledger);
  for (comm::ReduceOp op : {comm::ReduceOp::sum, comm::ReduceOp::max}) {
    MPI_CHECK(all_reduce_agrees<float>(*dev, ref, op));
    MPI_CHECK(all_reduce_agrees<double>(*dev, ref, op));
    MPI_CHECK(all_reduce_agrees<int32_t>(*dev, ref, op));
  }
}

TEST_CASE("device broadcast from every root equals MPI's", "[device_comm]") {
  comm::CommLedger dev_ledger, ref_ledger;
  auto dev = comm_test::make_communicator(MPI_COMM_WORLD, "world", dev_ledger);
  comm::MpiCommunicator ref(MPI_COMM_WORLD, "world", ref_ledger);
  for (int root = 0; root < dev->size(); ++root) {
    std::vector<float> want = rank_data<float>(777, dev->rank(), root);
    DeviceArray<float> d(want);
    dev->broadcast(d.data(), 777, root);
    ref.broadcast(want.data(), 777, root);
    MPI_CHECK(equal(d.host(), want));
  }
}

TEST_CASE("device reduce to every root equals MPI's, and leaves the other ranks' buffers alone", "[device_comm]") {
  comm::CommLedger dev_ledger, ref_ledger;
  auto dev = comm_test::make_communicator(MPI_COMM_WORLD, "world", dev_ledger);
  comm::MpiCommunicator ref(MPI_COMM_WORLD, "world", ref_ledger);
  for (int root = 0; root < dev->size(); ++root) {
    const std::vector<int32_t> mine = rank_data<int32_t>(500, dev->rank(), root);
    std::vector<int32_t> want = mine;
    DeviceArray<int32_t> d(mine);
    dev->reduce(d.data(), 500, root);
    ref.reduce(want.data(), 500, root);
    MPI_CHECK(equal(d.host(), dev->rank() == root ? want : mine));
  }
}

TEST_CASE("device all_gather equals MPI's, from a separate buffer and in place", "[device_comm]") {
  comm::CommLedger dev_ledger, ref_ledger;
  auto dev = comm_test::make_communicator(MPI_COMM_WORLD, "world", dev_ledger);
  comm::MpiCommunicator ref(MPI_COMM_WORLD, "world", ref_ledger);
  const int p = dev->size(), r = dev->rank();
  const int64_t n = 333;
  const std::vector<float> mine = rank_data<float>(n, r);
  std::vector<float> want(static_cast<size_t>(p * n));
  ref.all_gather(want.data(), mine.data(), n);

  DeviceArray<float> send(mine);
  DeviceArray<float> recv(std::vector<float>(static_cast<size_t>(p * n), -1.0f));
  dev->all_gather(recv.data(), send.data(), n);
  MPI_CHECK(equal(recv.host(), want));

  std::vector<float> staged(static_cast<size_t>(p * n), -1.0f);
  std::copy(mine.begin(), mine.end(), staged.begin() + r * n);
  DeviceArray<float> in_place(staged);
  dev->all_gather(in_place.data(), in_place.data() + r * n, n);
  MPI_CHECK(equal(in_place.host(), want));
}

TEST_CASE("device reduce_scatter equals MPI's", "[device_comm]") {
  comm::CommLedger dev_ledger, ref_ledger;
  auto dev = comm_test::make_communicator(MPI_COMM_WORLD, "world", dev_ledger);
  comm::MpiCommunicator ref(MPI_COMM_WORLD, "world", ref_ledger);
  const int p = dev->size();
  const int64_t n = 250;
  const std::vector<double> send = rank_data<double>(p * n, dev->rank());
  std::vector<double> want(static_cast<size_t>(n));
  ref.reduce_scatter(want.data(), send.data(), n);
  DeviceArray<double> d_send(send);
  DeviceArray<double> d_recv(std::vector<double>(static_cast<size_t>(n), -1.0));
  dev->reduce_scatter(d_recv.data(), d_send.data(), n);
  MPI_CHECK(equal(d_recv.host(), want));
}

TEST_CASE("device split groups and orders ranks as MPI's, and its collectives work", "[device_comm]") {
  comm::CommLedger dev_ledger, ref_ledger;
  auto dev = comm_test::make_communicator(MPI_COMM_WORLD, "world", dev_ledger);
  comm::MpiCommunicator ref(MPI_COMM_WORLD, "world", ref_ledger);
  // two colours by parity; keys reverse the order inside each
  const int color = dev->rank() % 2, key = -dev->rank();
  auto dev_child = dev->split(color, key, "half");
  auto ref_child = ref.split(color, key, "half");
  MPI_CHECK(dev_child->size() == ref_child->size());
  MPI_CHECK(dev_child->rank() == ref_child->rank());
  // a gather shows the order of the members, a reduction their data
  const int64_t n = 64;
  const std::vector<int32_t> mine = rank_data<int32_t>(n, dev->rank());
  std::vector<int32_t> want(static_cast<size_t>(ref_child->size() * n));
  ref_child->all_gather(want.data(), mine.data(), n);
  DeviceArray<int32_t> send(mine);
  DeviceArray<int32_t> recv(std::vector<int32_t>(want.size(), -1));
  dev_child->all_gather(recv.data(), send.data(), n);
  MPI_CHECK(equal(recv.host(), want));
  MPI_CHECK(all_reduce_agrees<float>(*dev_child, *ref_child, comm::ReduceOp::sum));
  dev_child->barrier();
}

TEST_CASE("the device ledger counts the calls and bytes the MPI ledger counts", "[device_comm]") {
  comm::CommLedger dev_ledger, ref_ledger;
  auto dev = comm_test::make_communicator(MPI_COMM_WORLD, "world", dev_ledger);
  comm::MpiCommunicator ref(MPI_COMM_WORLD, "world", ref_ledger);
  const int p = dev->size();
  const int64_t n = 100;
  std::vector<float> host = rank_data<float>(p * n, dev->rank()), host_out(static_cast<size_t>(p * n));
  DeviceArray<float> a(host), b(host_out);
  for (comm::Communicator* c : {dev.get(), static_cast<comm::Communicator*>(&ref)}) {
    const bool on_device = c == dev.get();
    float* x = on_device ? a.data() : host.data();
    float* y = on_device ? b.data() : host_out.data();
    c->all_reduce(x, n);
    c->broadcast(x, n, 0);
    c->reduce(x, n, p - 1);
    c->all_gather(y, x, n);
    c->reduce_scatter(y, x, n);
    c->barrier();
  }
  bool same = true;
  for (comm::CommOp op : {comm::CommOp::all_reduce, comm::CommOp::broadcast, comm::CommOp::reduce,
                          comm::CommOp::all_gather, comm::CommOp::reduce_scatter, comm::CommOp::barrier}) {
    same = same && dev_ledger.calls("world", op) == ref_ledger.calls("world", op) &&
           dev_ledger.bytes("world", op) == ref_ledger.bytes("world", op);
  }
  MPI_CHECK(same);
  MPI_CHECK(dev_ledger.calls() == 6);
}

TEST_CASE("device started collectives, several in flight at once, equal MPI's blocking ones", "[device_comm]") {
  comm::CommLedger dev_ledger, ref_ledger;
  auto dev = comm_test::make_communicator(MPI_COMM_WORLD, "world", dev_ledger);
  comm::MpiCommunicator ref(MPI_COMM_WORLD, "world", ref_ledger);
  const int64_t n = 1001;
  const int root = dev->size() - 1;
  std::vector<float> b_want = rank_data<float>(n, dev->rank(), 1), r_want = rank_data<float>(n, dev->rank(), 2),
                     a_want = rank_data<float>(n, dev->rank(), 3);
  DeviceArray<float> b(b_want), r(r_want), a(a_want);
  // All three in flight before any wait (a device communicator's all run on its communication stream).
  comm::Request rb = dev->start_broadcast(b.data(), n, root);
  comm::Request rr = dev->start_reduce(r.data(), n, root);
  comm::Request ra = dev->start_all_reduce(a.data(), n);
  ra.wait();
  rr.wait();
  rb.wait();
  ref.broadcast(b_want.data(), n, root);
  ref.reduce(r_want.data(), n, root);
  ref.all_reduce(a_want.data(), n);
  MPI_CHECK(equal(b.host(), b_want));
  MPI_CHECK(equal(r.host(), r_want));  // on the other ranks the buffer is left as it was, on both sides
  MPI_CHECK(equal(a.host(), a_want));
  MPI_CHECK(dev_ledger.calls() == 3);
}
