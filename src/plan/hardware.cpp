// Reading a hardware profile: every number is {"value": …, "source": …}; the model keeps the values.
#include "plan/hardware.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <limits>
#include <map>
#include <utility>

#include "core/errors.h"
#include "io/file_io.h"
#include "io/json_text.h"

#ifndef OPTIMUS_HARDWARE_DIR
#define OPTIMUS_HARDWARE_DIR "data/hardware"
#endif

namespace optimus::plan {

namespace {

using Json = nlohmann::ordered_json;

// The range a profile's number must lie in, and how the message states it. The ranges are
// data/hardware/README.md's "What a profile may hold": wide enough for any machine built or planned,
// narrow enough that every time and size the model derives from them stays finite and in range.
struct Range {
  double least, most;
  bool whole;        // a count or a number of bytes
  const char* text;  // "a whole number from 1 to 1048576 (2^20)"
};

constexpr double kPebibyte = 1125899906842624.0;  // 2^50
constexpr Range kCount{1, 1048576, true, "a whole number from 1 to 1048576 (2^20)"};
constexpr Range kMemory{1, kPebibyte, true, "a whole number of bytes from 1 to 1125899906842624 (1 PiB)"};
constexpr Range kRate{1e3, 1e21, false, "a rate from 1e3 to 1e21 per second"};
constexpr Range kLatency{0, 1, false, "a time from 0 to 1 s"};
constexpr Range kPerByte{0, 1e-3, false, "a time per byte from 0 to 1e-3 s (a link of at least 1 kB/s)"};

// Reads fields of one profile file, each failure one sentence naming the file and the field.
class Fields {
 public:
  explicit Fields(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    throw core::ConfigError("hardware profile " + path_ + ": " + field + " " + problem +
                            " (data/hardware/README.md lists the fields)");
  }

  const Json& member(const Json& object, const std::string& key, const std::string& field) const {
    if (!object.is_object() || !object.contains(key)) fail(field, "is missing");
    return object.at(key);
  }

  // A plain number in `range`.
  double in_range(const Json& v, const std::string& field, const Range& range) const {
    if (!v.is_number()) fail(field, "is not a number");
    const double x = v.get<double>();
    const bool fits = x >= range.least && x <= range.most && (!range.whole || x == std::floor(x));
    if (!fits) fail(field, "must be " + std::string(range.text) + ", but is " + io::json_excerpt(v));
    return x;
  }

  // A {"value": number, "source": …} field in `range`.
  double number(const Json& object, const std::string& key, const std::string& field, const Range& range) const {
    return in_range(member(member(object, key, field), "value", field + ".value"), field, range);
  }

  int count(const Json& object, const std::string& key, const std::string& field) const {
    return static_cast<int>(number(object, key, field, kCount));
  }

  Link link(const Json& links, const std::string& key) const {
    const std::string field = "links." + key;
    const Json& l = member(links, key, field);
    return {.alpha_s = number(l, "alpha_s", field + ".alpha_s", kLatency),
            .beta_s_per_byte = number(l, "beta_s_per_byte", field + ".beta_s_per_byte", kPerByte),
            .gamma_s_per_byte = number(l, "gamma_s_per_byte", field + ".gamma_s_per_byte", kPerByte),
            .devices_per_link = count(l, "devices_per_link", field + ".devices_per_link"),
            .nics_per_node = key == "inter_node" ? count(l, "nics_per_node", field + ".nics_per_node") : 1};
  }

  // {"attention": {"value": FLOP/s, …}, "elementwise": {"value": bytes/s, …}, …}: any kinds but matmul.
  std::array<double, core::kOpKindCount> op_rates(const Json& rates) const {
    if (!rates.is_object()) fail("op_rates", "must be an object of op kinds");
    std::array<double, core::kOpKindCount> out{};
    for (const auto& [key, value] : rates.items()) {
      int k = 0;
      while (k < core::kOpKindCount && key != core::op_kind_name(static_cast<core::OpKind>(k))) ++k;
      if (k == core::kOpKindCount || static_cast<core::OpKind>(k) == core::OpKind::matmul) {
        fail("op_rates." + key,
             "is not an op kind other than matmul (attention, layernorm, crossentropy, "
             "elementwise, reduction, embedding, optimizer)");
      }
      out[static_cast<size_t>(k)] = number(rates, key, "op_rates." + key, kRate);
    }
    return out;
  }

  std::vector<MatmulClass> matmul(const Json& rows, const std::string& field) const {
    if (!rows.is_array() || rows.empty()) fail(field, "must be a list of shape classes");
    std::vector<MatmulClass> classes;
    for (size_t k = 0; k < rows.size(); ++k) {
      const std::string at = field + "[" + std::to_string(k) + "]";
      const Json& bound = member(rows[k], "min_dim_at_most", at + ".min_dim_at_most");
      const bool last = k + 1 == rows.size();
      if (last != bound.is_null()) fail(at + ".min_dim_at_most", "must be null in the last class, and only there");
      if (!last && (!bound.is_number_integer() || bound.get<int64_t>() < 1)) {
        fail(at + ".min_dim_at_most", "must be a positive whole number");
      }
      const int64_t at_most = last ? std::numeric_limits<int64_t>::max() : bound.get<int64_t>();
      if (!classes.empty() && at_most <= classes.back().min_dim_at_most) fail(field, "bounds must increase");
      classes.push_back({at_most, in_range(member(rows[k], "value", at + ".value"), at + ".value", kRate)});
    }
    return classes;
  }

  // measurements.collective_fits: {"P": {"OP": {"alpha_s": a, "beta_s_per_byte": b}}}, plain numbers.
  std::map<std::pair<int, comm::CommOp>, MeasuredFit> fits(const Json& measurements) const {
    std::map<std::pair<int, comm::CommOp>, MeasuredFit> out;
    if (!measurements.contains("collective_fits")) return out;
    const Json& by_ranks = measurements["collective_fits"];
    if (!by_ranks.is_object()) fail("measurements.collective_fits", "is not an object");
    for (const auto& [ranks, by_op] : by_ranks.items()) {
      const std::string at = "measurements.collective_fits." + ranks.substr(0, 10);
      const bool digits =
          !ranks.empty() && ranks.size() <= 7 && ranks.find_first_not_of("0123456789") == std::string::npos;
      const int p = digits ? std::stoi(ranks) : 0;
      if (p < 2 || p > kCount.most || std::to_string(p) != ranks || !by_op.is_object()) {
        fail(at, "must be a rank count from 2 to 1048576 (2^20)");
      }
      for (comm::CommOp op : {comm::CommOp::all_reduce, comm::CommOp::broadcast, comm::CommOp::reduce,
                              comm::CommOp::all_gather, comm::CommOp::reduce_scatter}) {
        const std::string name = comm::comm_op_name(op);
        if (!by_op.contains(name)) continue;
        const Json& fit = by_op[name];
        const auto plain = [&](const char* key, const Range& range) {
          return in_range(member(fit, key, at + "." + name + "." + key), at + "." + name + "." + key, range);
        };
        out[{p, op}] = {plain("alpha_s", kLatency), plain("beta_s_per_byte", kPerByte)};
      }
    }
    return out;
  }

  Algorithm algorithm(const Json& collectives, comm::CommOp op) const {
    const std::string name = comm::comm_op_name(op), field = "collectives." + name + ".algorithm";
    const Json& a = member(member(collectives, name, "collectives." + name), "algorithm", field);
    const std::string text = a.is_string() ? a.get<std::string>() : "";
    if (text == "ring") return Algorithm::ring;
    const bool rooted = op == comm::CommOp::broadcast || op == comm::CommOp::reduce;
    if (rooted && text == "binomial_tree") return Algorithm::binomial_tree;
    if (op == comm::CommOp::broadcast && text == "scatter_allgather") return Algorithm::scatter_allgather;
    fail(field, "is " + io::json_excerpt(a) + ", which the model has no cost for");
  }

 private:
  std::string path_;
};

std::string resolve(const std::string& name_or_path) {
  const bool is_path = name_or_path.find('/') != std::string::npos ||
                       (name_or_path.size() > 5 && name_or_path.substr(name_or_path.size() - 5) == ".json");
  if (is_path) return name_or_path;
  const std::string path = hardware_dir() + "/" + name_or_path + ".json";
  if (std::filesystem::is_regular_file(path)) return path;
  std::string known;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(hardware_dir(), error)) {
    if (entry.path().extension() == ".json") known += (known.empty() ? "" : ", ") + entry.path().stem().string();
  }
  throw core::ConfigError("no hardware profile named '" + name_or_path.substr(0, 40) + "' in " + hardware_dir() +
                          (known.empty() ? "" : "; the known ones: " + known) + " (or give a path to a .json file)");
}

}  // namespace

const char* algorithm_name(Algorithm a) {
  // In the enum's order.
  static constexpr const char* kNames[] = {"ring", "binomial_tree", "scatter_allgather"};
  static_assert(std::size(kNames) == static_cast<size_t>(Algorithm::scatter_allgather) + 1);
  return kNames[static_cast<size_t>(a)];
}

double HardwareProfile::matmul_rate(int64_t min_dim) const {
  for (const MatmulClass& c : matmul) {
    if (min_dim <= c.min_dim_at_most) return c.flops_per_s;
  }
  return matmul.back().flops_per_s;
}

std::string hardware_dir() {
  const char* dir = std::getenv("OPTIMUS_HARDWARE_DIR");
  return dir != nullptr && *dir != '\0' ? dir : OPTIMUS_HARDWARE_DIR;
}

HardwareProfile load_hardware(const std::string& name_or_path) {
  const std::string path = resolve(name_or_path);
  const Json profile =
      io::parse_json(io::read_whole_file(path, "hardware profile", io::kMaxJsonFileBytes), "hardware profile " + path);
  const Fields f(path);
  HardwareProfile h;
  const Json& name = f.member(profile, "name", "name");
  if (!name.is_string()) f.fail("name", "is not text");
  h.name = name.get<std::string>();
  h.devices_per_node = f.count(profile, "devices_per_node", "devices_per_node");
  h.device_memory_bytes =
      static_cast<int64_t>(f.number(profile, "device_memory_bytes", "device_memory_bytes", kMemory));
  h.matmul = f.matmul(f.member(profile, "matmul_flops_per_s", "matmul_flops_per_s"), "matmul_flops_per_s");
  if (profile.contains("matmul_bf16_flops_per_s")) {
    h.matmul_bf16 = f.matmul(profile["matmul_bf16_flops_per_s"], "matmul_bf16_flops_per_s");
  }
  h.memory_bytes_per_s = f.number(profile, "memory_bytes_per_s", "memory_bytes_per_s", kRate);
  h.collective_launch_s = f.number(profile, "collective_launch_s", "collective_launch_s", kLatency);
  const Json& links = f.member(profile, "links", "links");
  h.intra_node = f.link(links, "intra_node");
  h.inter_node = f.link(links, "inter_node");
  const Json& collectives = f.member(profile, "collectives", "collectives");
  for (comm::CommOp op : {comm::CommOp::all_reduce, comm::CommOp::broadcast, comm::CommOp::reduce,
                          comm::CommOp::all_gather, comm::CommOp::reduce_scatter}) {
    h.algorithm[static_cast<size_t>(op)] = f.algorithm(collectives, op);
  }
  if (profile.contains("op_rates")) h.op_rate = f.op_rates(profile["op_rates"]);
  if (profile.contains("measurements")) h.measured = f.fits(profile["measurements"]);
  return h;
}

}  // namespace optimus::plan
