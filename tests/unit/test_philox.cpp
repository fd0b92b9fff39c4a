// Tests of the counter-based generator: Philox-4x32-10 against Random123's published
// known answers, the project's counter and key layout, and the uniform and normal numbers built on it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/philox.h"

using namespace optimus;

namespace {

struct KnownAnswer {
  std::array<uint32_t, 4> counter;
  std::array<uint32_t, 2> key;
  std::array<uint32_t, 4> output;
};

// The "philox4x32 10" lines of Random123's tests/kat_vectors (DEShawResearch/random123, v1.14.0):
// counter words 0..3, key words 0..1, output words 0..3. The third uses the hex digits of pi.
const KnownAnswer kKnownAnswers[] = {
    {{0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u},
     {0x00000000u, 0x00000000u},
     {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
    {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
     {0xffffffffu, 0xffffffffu},
     {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
    {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
     {0xa4093822u, 0x299f31d0u},
     {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
};

const core::PhiloxKey kKey{2024u, core::streams::kInit + 3u};

}  // namespace

TEST_CASE("Random123's Philox4x32-10 gives the published known answers", "[philox]") {
  for (const KnownAnswer& kat : kKnownAnswers) {
    r123::Philox4x32 gen;
    const r123::Philox4x32::ctr_type ctr = {{kat.counter[0], kat.counter[1], kat.counter[2], kat.counter[3]}};
    const r123::Philox4x32::key_type key = {{kat.key[0], kat.key[1]}};
    const r123::Philox4x32::ctr_type out = gen(ctr, key);
    for (int w = 0; w < 4; ++w) {
      INFO("counter word 0 = " << std::hex << kat.counter[0] << ", output word " << w);
      CHECK(out.v[w] == kat.output[w]);
    }
  }
}

TEST_CASE("philox() puts (seed, stream) in the key and (lo(c), hi(c), c2, c3) in the counter", "[philox]") {
  for (const KnownAnswer& kat : kKnownAnswers) {
    const uint64_t c = (static_cast<uint64_t>(kat.counter[1]) << 32) | kat.counter[0];
    const auto out = core::philox(core::PhiloxKey{kat.key[0], kat.key[1]}, c, kat.counter[2], kat.counter[3]);
    for (int w = 0; w < 4; ++w) {
      INFO("counter word 0 = " << std::hex << kat.counter[0] << ", output word " << w);
      CHECK(out.v[w] == kat.output[w]);
    }
  }
}

TEST_CASE("philox_uniform is word index%4 of counter (index/4, step) scaled below 1, with mean 1/2", "[philox]") {
  for (uint64_t index : {0ull, 1ull, 2ull, 3ull, 4ull, 1001ull, (1ull << 40) + 7}) {
    const uint32_t step = 17u;
    const uint32_t word = core::philox(kKey, index / 4, step).v[index % 4];
    CAPTURE(index);
    CHECK(core::philox_uniform(kKey, index, step) == static_cast<float>(word >> 8) / 16777216.0f);
  }

  const int n = 200000;
  double sum = 0.0, lo = 1.0, hi = 0.0;
  for (int k = 0; k < n; ++k) {
    const double u = core::philox_uniform(kKey, static_cast<uint64_t>(k), 3u);
    sum += u;
    lo = std::min(lo, u);
    hi = std::max(hi, u);
  }
  const double mean = sum / n;
  CAPTURE(mean, lo, hi);
  CHECK(lo >= 0.0);
  CHECK(hi < 1.0);
  CHECK(std::abs(mean - 0.5) < 5.0 * std::sqrt(1.0 / 12.0 / n));  // 5 standard errors
}

TEST_CASE("philox_normal has mean 0 and variance 1 over many draws", "[philox]") {
  const int n = 200000;
  double sum = 0.0, sum_sq = 0.0;
  for (int k = 0; k < n; ++k) {
    const double x = core::philox_normal(kKey, static_cast<uint64_t>(k));
    sum += x;
    sum_sq += x * x;
  }
  const double mean = sum / n;
  const double variance = sum_sq / n - mean * mean;
  CAPTURE(mean, variance);
  CHECK(std::abs(mean) < 5.0 / std::sqrt(n));                  // standard error 1/√n
  CHECK(std::abs(variance - 1.0) < 5.0 * std::sqrt(2.0 / n));  // standard error √(2/n)
}

TEST_CASE("Philox numbers are pure functions of (key, index, step) and change with each", "[philox]") {
  for (uint64_t index : {0ull, 5ull, 123456789ull}) {
    CAPTURE(index);
    CHECK(core::philox_uniform(kKey, index, 2u) == core::philox_uniform(kKey, index, 2u));
    CHECK(core::philox_normal(kKey, index, 2u) == core::philox_normal(kKey, index, 2u));
    CHECK(core::philox_uniform(kKey, index, 2u) != core::philox_uniform(kKey, index, 3u));
    CHECK(core::philox_uniform(kKey, index, 2u) != core::philox_uniform(core::PhiloxKey{2024u, 7u}, index, 2u));
    CHECK(core::philox_uniform(kKey, index, 2u) !=
          core::philox_uniform(core::PhiloxKey{2025u, kKey.stream}, index, 2u));
    CHECK(core::philox_normal(kKey, index) != core::philox_normal(kKey, index + 1));
  }
}
