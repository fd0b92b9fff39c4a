// The memory ledger's accounting: current and peak bytes per category, and the budget.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <catch2/catch.hpp>

#include "core/memory_ledger.h"
#include "core/tensor.h"

using optimus::core::Buffer;
using optimus::core::Device;
using optimus::core::Fill;
using optimus::core::MemoryBudgetExceeded;
using optimus::core::MemoryCategory;
using optimus::core::MemoryLedger;

TEST_CASE("memory ledger records current and peak bytes per category", "[ledger]") {
  MemoryLedger ledger;
  ledger.allocate(MemoryCategory::parameters, 1000);
  ledger.allocate(MemoryCategory::activations, 300);
  ledger.release(MemoryCategory::activations, 300);
  ledger.allocate(MemoryCategory::activations, 200);
  CHECK(ledger.current(MemoryCategory::parameters) == 1000);
  CHECK(ledger.current(MemoryCategory::activations) == 200);
  CHECK(ledger.peak(MemoryCategory::activations) == 300);
  CHECK(ledger.current_total() == 1200);
  CHECK(ledger.peak_total() == 1300);
  CHECK(ledger.current(MemoryCategory::gradients) == 0);
  ledger.reset_peaks();
  CHECK(ledger.peak_total() == 1200);
  CHECK(ledger.peak(MemoryCategory::activations) == 200);
}

TEST_CASE("memory ledger refuses to release more than was allocated", "[ledger]") {
  MemoryLedger ledger;
  ledger.allocate(MemoryCategory::workspace, 10);
  CHECK_THROWS_AS(ledger.release(MemoryCategory::workspace, 11), std::logic_error);
}

TEST_CASE("memory ledger refuses a total past 2^63 - 1 bytes instead of wrapping, and records nothing", "[ledger]") {
  MemoryLedger ledger;  // no budget
  const size_t quarter = size_t{1} << 62;
  ledger.allocate(MemoryCategory::parameters, quarter);
  CHECK_THROWS_AS(ledger.allocate(MemoryCategory::activations, quarter), MemoryBudgetExceeded);
  CHECK(ledger.current_total() == quarter);
  CHECK(ledger.current(MemoryCategory::activations) == 0);
  ledger.allocate(MemoryCategory::activations, quarter - 1);  // exactly 2^63 - 1 in all: still recorded
  CHECK(ledger.current_total() == static_cast<size_t>(INT64_MAX));
  ledger.release(MemoryCategory::activations, quarter - 1);
  ledger.release(MemoryCategory::parameters, quarter);
  CHECK(ledger.current_total() == 0);
}

TEST_CASE("an allocation past the budget fails with a clear error and records nothing", "[ledger]") {
  MemoryLedger ledger(4096);
  Buffer a(ledger, MemoryCategory::parameters, {512});  // 2048 bytes
  CHECK(ledger.current_total() == 2048);
  try {
    Buffer b(ledger, MemoryCategory::activations, {1024});  // 4096 more: over
    FAIL("expected MemoryBudgetExceeded");
  } catch (const MemoryBudgetExceeded& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find("budget") != std::string::npos);
    CHECK(msg.find("activations") != std::string::npos);
  }
  CHECK(ledger.current_total() == 2048);
  CHECK(ledger.current(MemoryCategory::activations) == 0);
  Buffer c(ledger, MemoryCategory::activations, {512});  // exactly fills the budget
  CHECK(ledger.current_total() == 4096);
}

TEST_CASE("buffers record their bytes while alive and release them when destroyed or moved from", "[ledger]") {
  MemoryLedger ledger;
  {
    Buffer a(ledger, MemoryCategory::gradients, {8, 16}, Device::cpu, Fill::zero);
    CHECK(a.numel() == 128);
    CHECK(a.bytes() == 512);
    CHECK(ledger.current(MemoryCategory::gradients) == 512);
    for (int64_t k = 0; k < a.numel(); ++k) REQUIRE(a.data()[k] == 0.0f);  // zero-initialised, as asked
    Buffer b = std::move(a);
    CHECK(ledger.current(MemoryCategory::gradients) == 512);  // moved, not copied
    Buffer c(ledger, MemoryCategory::gradients, {4});
    c = std::move(b);  // c's old 16 bytes are released
    CHECK(ledger.current(MemoryCategory::gradients) == 512);
  }
  CHECK(ledger.current_total() == 0);
  CHECK(ledger.peak(MemoryCategory::gradients) == 528);
}

TEST_CASE("ledger report names every category", "[ledger]") {
  MemoryLedger ledger;
  ledger.allocate(MemoryCategory::optimizer, 3 << 20);
  const std::string r = ledger.report();
  for (const char* name : {"parameters", "gradients", "optimizer", "activations", "communication", "workspace"}) {
    CHECK(r.find(name) != std::string::npos);
  }
  CHECK(r.find("3.000 MiB") != std::string::npos);
}

// ---- the ledger's pool: blocks kept by exact size, reused, zero-filled when asked -----------------

TEST_CASE("a released buffer's block is reused by the next buffer of its size, zero-filled when it asks",
          "[ledger][pool]") {
  MemoryLedger ledger;
  float* first = nullptr;
  {
    Buffer a(ledger, MemoryCategory::workspace, {64});
    first = a.data();
    for (int64_t k = 0; k < a.numel(); ++k) a.data()[k] = 3.0f;  // dirty it
    CHECK(ledger.system_allocations() == 1);
    CHECK(ledger.cached_bytes() == 0);
    CHECK(ledger.reserved_bytes() == 256);
  }
  CHECK(ledger.cached_bytes() == 256);  // kept, not freed
  CHECK(ledger.reserved_bytes() == 256);
  {
    Buffer b(ledger, MemoryCategory::activations, {8, 8});  // the same 256 bytes, another shape and category
    CHECK(b.data() == first);
    CHECK(ledger.system_allocations() == 1);
    CHECK(ledger.cached_bytes() == 0);
    for (int64_t k = 0; k < b.numel(); ++k) REQUIRE(b.data()[k] == 3.0f);  // not filled: nobody asked
    for (int64_t k = 0; k < b.numel(); ++k) b.data()[k] = 5.0f;
  }
  Buffer z(ledger, MemoryCategory::gradients, {64}, Device::cpu, Fill::zero);
  CHECK(z.data() == first);
  for (int64_t k = 0; k < z.numel(); ++k) REQUIRE(z.data()[k] == 0.0f);  // zero again, as asked
  Buffer c(ledger, MemoryCategory::workspace, {65});                     // another size: a block of its own
  CHECK(c.data() != first);
  CHECK(ledger.system_allocations() == 2);
  CHECK(ledger.reserved_bytes() == 256 + 260);
}

TEST_CASE("the pool leaves the ledger's logical record, its peaks and its budget as they were", "[ledger][pool]") {
  MemoryLedger ledger(4096);
  for (int round = 0; round < 3; ++round) {
    Buffer a(ledger, MemoryCategory::parameters, {512});   // 2048 bytes
    Buffer b(ledger, MemoryCategory::activations, {256});  // 1024
    CHECK_THROWS_AS(Buffer(ledger, MemoryCategory::workspace, {512}), MemoryBudgetExceeded);
    CHECK(ledger.current_total() == 3072);
  }
  // Nothing is held; the blocks are cached, outside the record and the budget.
  CHECK(ledger.current_total() == 0);
  CHECK(ledger.peak_total() == 3072);
  CHECK(ledger.peak(MemoryCategory::parameters) == 2048);
  CHECK(ledger.peak(MemoryCategory::workspace) == 0);
  CHECK(ledger.system_allocations() == 2);
  CHECK(ledger.cached_bytes() == 3072);
  Buffer whole(ledger, MemoryCategory::workspace, {1024});  // the whole budget, beside the cache
  CHECK(ledger.current_total() == 4096);
  CHECK(ledger.reserved_bytes() == 3072 + 4096);
}

TEST_CASE("release_cached returns the free blocks to the system and keeps those in use", "[ledger][pool]") {
  MemoryLedger ledger;
  Buffer kept(ledger, MemoryCategory::parameters, {100}, Device::cpu, Fill::zero);
  { Buffer gone(ledger, MemoryCategory::workspace, {200}); }
  CHECK(ledger.cached_bytes() == 800);
  CHECK(ledger.reserved_bytes() == 1200);
  ledger.release_cached();
  CHECK(ledger.cached_bytes() == 0);
  CHECK(ledger.reserved_bytes() == 400);
  CHECK(kept.data()[99] == 0.0f);
  Buffer again(ledger, MemoryCategory::workspace, {200});  // asked of the system again
  CHECK(ledger.system_allocations() == 3);
}

TEST_CASE("a snapshot of a ledger keeps its numbers as they were, and meta or empty buffers use no block",
          "[ledger][pool]") {
  static_assert(!std::is_copy_constructible_v<MemoryLedger> && !std::is_copy_assignable_v<MemoryLedger>,
                "a ledger's Buffers point to it and its pool owns their blocks");
  MemoryLedger ledger;
  { Buffer gone(ledger, MemoryCategory::workspace, {16}); }
  Buffer held(ledger, MemoryCategory::parameters, {16});
  const optimus::core::MemorySnapshot snapshot = ledger.snapshot();
  { Buffer later(ledger, MemoryCategory::workspace, {1024}); }  // the ledger moves on, the snapshot does not
  CHECK(snapshot.current_total() == 64);
  CHECK(snapshot.peak_total() == 64);
  CHECK(snapshot.current(MemoryCategory::parameters) == 64);
  CHECK(snapshot.peak(MemoryCategory::workspace) == 64);
  CHECK(ledger.peak_total() == 64 + 4096);
  CHECK(ledger.system_allocations() == 2);
  Buffer empty(ledger, MemoryCategory::workspace, {0});
  Buffer meta(ledger, MemoryCategory::activations, {1 << 20}, Device::meta);
  CHECK(ledger.system_allocations() == 2);
  CHECK(ledger.current(MemoryCategory::activations) == 4 << 20);  // recorded as before
  CHECK(ledger.reserved_bytes() == 64 + 4096);
}

TEST_CASE("meta buffers count the blocks a CPU run's pool would hold: a free block is taken again by its size only",
          "[ledger][pool]") {
  // The same Buffers on the CPU and on meta: the CPU pool's largest reserved bytes is the meta count.
  auto sequence = [](MemoryLedger& ledger, Device device, size_t& peak_reserved) {
    auto note = [&] { peak_reserved = std::max(peak_reserved, ledger.reserved_bytes()); };
    Buffer kept(ledger, MemoryCategory::parameters, {100}, device);  // 400 bytes
    {
      Buffer a(ledger, MemoryCategory::activations, {300}, device);  // 1200
      note();
    }
    Buffer b(ledger, MemoryCategory::activations, {300}, device);  // takes a's block again
    note();
    {
      Buffer c(ledger, MemoryCategory::workspace, {200}, device);  // 800: a block of its own beside the free ones
      note();
    }
    Buffer d(ledger, MemoryCategory::workspace, {250}, device);  // 1000: c's 800 free block does not fit it
    note();
  };
  MemoryLedger cpu, meta;
  size_t cpu_peak = 0, unused = 0;
  sequence(cpu, Device::cpu, cpu_peak);
  sequence(meta, Device::meta, unused);
  CHECK(cpu_peak == 400 + 1200 + 800 + 1000);
  CHECK(meta.pool().peak_counted_bytes() == cpu_peak);
  CHECK(meta.peak_total() == 400 + 1200 + 1000);  // the Buffers' own peak is less: c's block stays free
  CHECK(meta.system_allocations() == 0);          // and meta asks the system for nothing
  CHECK(meta.reserved_bytes() == 0);
  CHECK(cpu.pool().peak_counted_bytes() == 0);  // CPU Buffers are not counted there
}
