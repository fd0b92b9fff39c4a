// The planner's precision (chapter 4, "Precision"): what a step would cost if it ran in bf16-mixed
// precision, read from the meta run of the fp32 stage code. Accounting only — the kernels compute
// in float32. The convention is a number of bytes per element for each memory category and each
// communicator, and the profile's tensor-core rate for the products; this file is that table.
#pragma once

#include <string>

#include "comm/comm_ledger.h"
#include "core/memory_ledger.h"
#include "core/op_ledger.h"
#include "plan/hardware.h"

namespace optimus::plan {

/// fp32: everything in float32, as the kernels run. bf16_mixed: bf16 activations, activation
/// gradients and tensor-parallel communication; fp32 master weights (plus a bf16 copy for the
/// products), gradients, AdamW moments and the data-parallel gradient all-reduce.
enum class Precision { fp32, bf16_mixed };

/// "fp32" or "bf16-mixed"; anything else is a core::ConfigError in one sentence.
Precision parse_precision(const std::string& name);
const char* to_string(Precision p);

/// Bytes one element of `category` takes (the fp32 run's elements are 4 bytes each):
///   fp32: 4 everywhere.
///   bf16-mixed: parameters 6 (the fp32 master and the bf16 copy the products read), gradients 4,
///   optimizer 4 (each moment), activations 2, workspace 2 (activation gradients and scratch),
///   communication 2 (the tensor-parallel receive buffers; the data-parallel bucket too, see the
///   chapter).
int bytes_per_element(Precision p, core::MemoryCategory category);

/// Bytes one element sent on communicator `name` takes: bf16-mixed sends 4 on "data" (the gradients
/// are all-reduced across copies in fp32) and 2 on every other (the tensor-parallel groups: "world"
/// and "model" of 1D, "row" and "col" of 2D); fp32 sends 4.
int bytes_per_element(Precision p, const std::string& communicator);

/// Makes `ledger` count each 4-byte element of every category at bytes_per_element(p, category).
void count_at_precision(core::MemoryLedger& ledger, Precision p);

/// The fp32 run's collectives with each communicator's bytes at bytes_per_element(p, name); the
/// calls and group sizes unchanged.
comm::CommLedger at_precision(const comm::CommLedger& fp32, Precision p);

/// The fp32 run's ops as the time model reads them at precision p: bf16-mixed moves half the bytes
/// in every memory-bound kind but the optimizer (AdamW reads and writes fp32 masters, gradients and
/// moments); FLOPs and calls unchanged.
core::OpLedger at_precision(const core::OpLedger& fp32, Precision p);

/// The profile as the time model reads it at precision p: bf16-mixed takes the products' rates from
/// matmul_bf16_flops_per_s. A profile without them is a core::ConfigError naming the profile.
HardwareProfile at_precision(const HardwareProfile& hardware, Precision p);

}  // namespace optimus::plan
