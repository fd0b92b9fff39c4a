// The precision table of plan/precision.h, and the fp32 ledgers and profile read through it.
#include "plan/precision.h"

#include "core/errors.h"

namespace optimus::plan {

Precision parse_precision(const std::string& name) {
  if (name == "fp32") return Precision::fp32;
  if (name == "bf16-mixed") return Precision::bf16_mixed;
  throw core::ConfigError("--precision must be fp32 or bf16-mixed, but is '" + name.substr(0, 40) + "'");
}

const char* to_string(Precision p) {
  return p == Precision::fp32 ? "fp32" : "bf16-mixed";
}

int bytes_per_element(Precision p, core::MemoryCategory category) {
  if (p == Precision::fp32) return 4;
  switch (category) {
    case core::MemoryCategory::parameters:
      return 4 + 2;  // the fp32 master the optimizer updates, and the bf16 copy the products read
    case core::MemoryCategory::gradients:
    case core::MemoryCategory::optimizer:
      return 4;
    case core::MemoryCategory::activations:
    case core::MemoryCategory::communication:
    case core::MemoryCategory::workspace:
      return 2;
  }
  return 4;
}

int bytes_per_element(Precision p, const std::string& communicator) {
  return p == Precision::fp32 || communicator == "data" ? 4 : 2;
}

void count_at_precision(core::MemoryLedger& ledger, Precision p) {
  for (int c = 0; c < core::kMemoryCategoryCount; ++c) {
    const auto category = static_cast<core::MemoryCategory>(c);
    ledger.set_bytes_per_element(category, bytes_per_element(p, category));
  }
}

comm::CommLedger at_precision(const comm::CommLedger& fp32, Precision p) {
  comm::CommLedger out;
  for (const std::string& name : fp32.communicators()) {
    const int64_t element_bytes = bytes_per_element(p, name);
    for (int k = 0; k < comm::kCommOpCount; ++k) {
      const auto op = static_cast<comm::CommOp>(k);
      const int64_t calls = fp32.calls(name, op);
      if (calls == 0) continue;
      // The ledger keeps totals, not each call: the first call carries the scaled bytes, the others
      // none, so the totals (all the time model reads) are exact.
      out.record(name, op, fp32.bytes(name, op) / 4 * element_bytes, fp32.group_size(name));
      for (int64_t i = 1; i < calls; ++i) out.record(name, op, 0, fp32.group_size(name));
    }
  }
  return out;
}

core::OpLedger at_precision(const core::OpLedger& fp32, Precision p) {
  if (p == Precision::fp32) return fp32;
  core::OpLedger out;
  for (int k = 0; k < core::kOpKindCount; ++k) {
    const auto kind = static_cast<core::OpKind>(k);
    const core::OpLedger::Totals& t = fp32.of(kind);
    if (t.calls == 0) continue;
    const int64_t share = kind == core::OpKind::optimizer ? 1 : 2;  // bytes divided by
    // As for a CommLedger: the first record carries the bytes (and a product's first class), one
    // record per further class of a product, empty records bring the calls to the fp32 run's.
    core::OpCost first{
        .kind = kind, .flops = t.flops, .bytes_read = t.bytes_read / share, .bytes_written = t.bytes_written / share};
    auto cls = t.flops_by_min_dim.begin();
    if (cls != t.flops_by_min_dim.end()) first.flops = cls->second, first.min_dim = cls->first, ++cls;
    out.record(first);
    int64_t calls = 1;
    for (; cls != t.flops_by_min_dim.end(); ++cls, ++calls) {
      out.record({.kind = kind, .flops = cls->second, .min_dim = cls->first});
    }
    for (; calls < t.calls; ++calls) out.record({.kind = kind});
  }
  return out;
}

HardwareProfile at_precision(const HardwareProfile& hardware, Precision p) {
  if (p == Precision::fp32) return hardware;
  if (hardware.matmul_bf16.empty()) {
    throw core::ConfigError("hardware profile " + hardware.name +
                            " has no matmul_bf16_flops_per_s, so --precision bf16-mixed has no product rate on it; "
                            "use --precision fp32 or a profile with tensor-core rates (data/hardware/README.md)");
  }
  HardwareProfile h = hardware;
  h.matmul = hardware.matmul_bf16;
  return h;
}

}  // namespace optimus::plan
