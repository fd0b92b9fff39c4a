// Shapes, buffers and the backend report.
#include <catch2/catch.hpp>

#include "core/context.h"
#include "core/tensor.h"

using namespace optimus::core;

TEST_CASE("shapes count elements and print themselves", "[tensor]") {
  Shape s{4, 8, 3};
  CHECK(s.rank() == 3);
  CHECK(s.numel() == 96);
  CHECK(s.str() == "[4, 8, 3]");
  CHECK(Shape{}.numel() == 1);
  CHECK(Shape{5, 0}.numel() == 0);
}

TEST_CASE("a buffer has its shape, size and device, and refuses a negative dimension", "[tensor]") {
  MemoryLedger ledger;
  Buffer b(ledger, MemoryCategory::workspace, {2, 3});
  CHECK(b.data() != nullptr);
  CHECK(b.shape() == Shape{2, 3});
  CHECK(b.device() == Device::cpu);
  CHECK(b.bytes() == 24);
  CHECK_THROWS_AS(Buffer(ledger, MemoryCategory::workspace, {2, -1}), std::invalid_argument);
}

TEST_CASE("the CUDA probe reports a sentence and never throws", "[tensor]") {
  const std::string report = cuda_device_report();
  INFO(report);
  CHECK(!report.empty());
  if (cuda_device_count() == 0) CHECK(report.rfind("no GPU", 0) == 0);
}
