// A hardware profile (data/hardware/*.json, described in data/hardware/README.md): the rates and
// link costs that chapter 4's time model turns the ledgers' counts into seconds with. The sources
// of the numbers stay in the file; this is what the model reads of it.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "comm/comm_ledger.h"
#include "core/op_ledger.h"

namespace optimus::plan {

/// One kind of link a collective can cross.
struct Link {
  double alpha_s = 0;           // latency per message (per step of an algorithm)
  double beta_s_per_byte = 0;   // transfer time per byte (inter_node: through one NIC)
  double gamma_s_per_byte = 0;  // reduction time per byte reduced
  int devices_per_link = 1;     // devices that share one such link when they all send at once
  int nics_per_node = 1;        // inter_node only: the node's network ports (NICs), each at 1/beta
};

/// Products whose smallest dimension is at most `min_dim_at_most` run at `flops_per_s`.
struct MatmulClass {
  int64_t min_dim_at_most = 0;  // INT64_MAX for the last class (every larger product)
  double flops_per_s = 0;
};

/// The algorithm a collective is costed by (data/hardware/README.md's table).
enum class Algorithm { ring, binomial_tree, scatter_allgather };

const char* algorithm_name(Algorithm a);

/// A collective's time measured on the machine itself at one group size: t = alpha_s + n·beta.
struct MeasuredFit {
  double alpha_s = 0;
  double beta_s_per_byte = 0;  // per byte of the ledger's n for the call
};

struct HardwareProfile {
  std::string name;
  int devices_per_node = 1;
  int64_t device_memory_bytes = 0;
  std::vector<MatmulClass> matmul;  // ordered by bound, the last one unbounded
  /// Optional: the products' rates in bf16 with fp32 accumulation on tensor cores (or what the
  /// profile's source says stands for them), by the same shape classes; empty if the profile has none.
  std::vector<MatmulClass> matmul_bf16;
  double memory_bytes_per_s = 0;
  /// Optional (scripts/calibrate's measurement, from `optimus bench --op-times`): the rate each kind
  /// of op other than matmul ran at on this machine, on one thread — attention in FLOP/s, every
  /// other kind in bytes (read + written) per second; 0 for a kind the profile does not rate, which
  /// the model then costs at memory_bytes_per_s (attention at the matmul classes).
  std::array<double, core::kOpKindCount> op_rate{};
  double collective_launch_s = 0;
  Link intra_node, inter_node;
  std::array<Algorithm, comm::kCommOpCount> algorithm{};  // by CommOp (barrier and split unused)
  /// Optional (scripts/calibrate's measurements): per (group size, operation), the machine's own
  /// fit inside one node, which the model uses in place of the algorithm's formula for a group of
  /// that size on one node.
  std::map<std::pair<int, comm::CommOp>, MeasuredFit> measured;

  /// The rate of a product whose smallest dimension is `min_dim`.
  double matmul_rate(int64_t min_dim) const;
};

/// The folder profiles are looked up in by name: $OPTIMUS_HARDWARE_DIR if set, else the
/// repository's data/hardware.
std::string hardware_dir();

/// Reads the profile `name_or_path`: a path when it contains '/' or ends in ".json", else
/// hardware_dir()/NAME.json. A missing file, a missing or mistyped field, a number out of its range
/// (data/hardware/README.md: counts 1 to 2^20, device memory up to 1 PiB, rates 1e3 to 1e21 per
/// second, latencies 0 to 1 s, times per byte 0 to 1e-3 s, measured fits' intercepts too), or an
/// unknown algorithm is a core::ConfigError naming the file and the field (and, for an unknown
/// name, the known ones).
HardwareProfile load_hardware(const std::string& name_or_path);

}  // namespace optimus::plan
