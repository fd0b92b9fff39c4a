// Shard specs walked in runs (ShardRows): scatter, gather and initialisation give, element for
// element, what the one-element mapping (global_index, initial_value) gives, on the kinds of spec
// the stages use: whole tensors, blocks, padded vocabulary parts, head groups' Q, K, V columns,
// runs that start on an odd canonical index (the sine branch of a Box-Muller pair).
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "model/params.h"
#include "model/shard.h"

using namespace optimus;
using model::kPadding;
using model::ShardSpec;

namespace {

// Specs of the shapes the stages use, on odd widths where they can be.
std::vector<std::pair<std::string, ShardSpec>> sample_specs() {
  std::vector<std::pair<std::string, ShardSpec>> specs;
  specs.emplace_back("whole [5, 7]", ShardSpec::whole({5, 7}));
  specs.emplace_back("whole [9]", ShardSpec::whole({9}));
  specs.emplace_back("block (1 of 3 rows, 1 of 2 columns) of [6, 10]", ShardSpec::block({6, 10}, {3, 2}, {1, 1}));
  specs.emplace_back("column block 1 of 2 of [4, 6] (starts at column 3)", ShardSpec::block({4, 6}, {1, 2}, {0, 1}));
  specs.emplace_back("block 2 of 3 of [9]", ShardSpec::block({9}, {3}, {2}));
  ShardSpec vocab = ShardSpec::block({10, 6}, {1, 2}, {0, 1});
  vocab.dims.front() = model::padded_part(10, 4, 3);  // rows 9 and 2 rows of padding
  specs.emplace_back("padded vocabulary part 3 of 4, column block 1 of 2, of [10, 6]", vocab);
  ShardSpec qkv = ShardSpec::whole({6, 18});
  qkv.dims.back() = model::qkv_group_columns(18, 2, 1);
  qkv.dims.front() = {model::Segment{3, 3}};
  specs.emplace_back("rows 3-5, head group 1 of 2's Q, K, V columns of [6, 18]", qkv);
  ShardSpec bias = ShardSpec::whole({15});
  bias.dims.back() = model::qkv_group_columns(15, 5, 3);  // odd starts: 3, 8, 13
  specs.emplace_back("head group 3 of 5's Q, K, V of [15]", bias);
  return specs;
}

model::ParamInfo normal_info(const core::Shape& shape) {
  model::ParamInfo info;
  info.index = 3;
  info.name = "test";
  info.shape = shape;
  info.init = model::InitRule::normal;
  info.std = 0.02f;
  return info;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("shard rows: scatter and gather by runs equal the element-by-element mapping", "[shard]") {
  for (const auto& [name, spec] : sample_specs()) {
    INFO(name);
    const int64_t n = spec.local_numel(), N = spec.canonical.numel();
    std::vector<float> canonical(static_cast<size_t>(N));
    for (int64_t g = 0; g < N; ++g) canonical[static_cast<size_t>(g)] = 1.0f + static_cast<float>(g);
    std::vector<float> expected(static_cast<size_t>(n)), local(static_cast<size_t>(n), -1.0f);
    for (int64_t k = 0; k < n; ++k) {
      const int64_t g = spec.global_index(k);
      expected[static_cast<size_t>(k)] = g == kPadding ? 0.0f : canonical[static_cast<size_t>(g)];
    }
    model::scatter_from_canonical(local.data(), canonical.data(), spec);
    CHECK(same_bits(local, expected));

    std::vector<float> placed(static_cast<size_t>(N), -1.0f), expected_placed = placed;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t g = spec.global_index(k);
      if (g != kPadding) expected_placed[static_cast<size_t>(g)] = local[static_cast<size_t>(k)];
    }
    model::place_in_canonical(placed.data(), local.data(), spec);
    CHECK(same_bits(placed, expected_placed));
  }
}

TEST_CASE("shard rows: initial values drawn by runs equal initial_value element by element", "[shard]") {
  for (const auto& [name, spec] : sample_specs()) {
    INFO(name);
    const model::ParamInfo info = normal_info(spec.canonical);
    const model::ShardRows rows(spec);
    std::vector<float> drawn(static_cast<size_t>(spec.local_numel()), -1.0f), expected(drawn.size());
    for (int64_t r = 0; r < rows.rows(); ++r) {
      rows.for_each_run(r, [&](int64_t l, int64_t g, int64_t len) {
        if (g == kPadding) {
          std::fill_n(drawn.data() + l, len, 0.0f);
        } else {
          model::initial_values(drawn.data() + l, info, 11u, g, len);
        }
      });
    }
    for (int64_t k = 0; k < spec.local_numel(); ++k) {
      const int64_t g = spec.global_index(k);
      expected[static_cast<size_t>(k)] = g == kPadding ? 0.0f : model::initial_value(info, 11u, g);
    }
    CHECK(same_bits(drawn, expected));
  }
}

TEST_CASE("shard rows: initial values of a run of any start and length equal initial_value's", "[shard]") {
  const model::ParamInfo info = normal_info({64});
  for (int64_t first = 0; first < 5; ++first) {
    for (int64_t n = 0; n < 6; ++n) {
      std::vector<float> run(static_cast<size_t>(n)), expected(static_cast<size_t>(n));
      model::initial_values(run.data(), info, 5u, first, n);
      for (int64_t k = 0; k < n; ++k) expected[static_cast<size_t>(k)] = model::initial_value(info, 5u, first + k);
      CHECK(same_bits(run, expected));
    }
  }
}
