// The memory ledger's accounting: current and peak bytes per category, and the budget.
#include <catch2/catch.hpp>

#include "core/memory_ledger.h"
#include "core/tensor.h"

using optimus::core::Buffer;
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
    Buffer a(ledger, MemoryCategory::gradients, {8, 16});
    CHECK(a.numel() == 128);
    CHECK(a.bytes() == 512);
    CHECK(ledger.current(MemoryCategory::gradients) == 512);
    for (int64_t k = 0; k < a.numel(); ++k) REQUIRE(a.data()[k] == 0.0f);  // zero-initialised
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
