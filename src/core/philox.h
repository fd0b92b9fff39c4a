// Counter-based randomness: every random number in the project is a pure function
// philox(key, counter) of Philox-4x32-10 from Random123. The key is (seed, stream); the counter
// holds the *global* index of the element in its canonical tensor (and the training step), so a
// rank that initialises or drops only its own shard gets exactly the numbers the serial run gets.
// The functions are header-only and marked for host and device, so CUDA kernels use the same ones.
#pragma once

#include <cmath>
#include <cstdint>

#include <Random123/philox.h>

#if defined(__CUDACC__)
#define OPTIMUS_HD __host__ __device__
#else
#define OPTIMUS_HD
#endif

namespace optimus::core {

/// Which stream of random numbers: the second word of the Philox key.
struct PhiloxKey {
  uint32_t seed = 0;
  uint32_t stream = 0;
};

/// Stream numbers. The top nibble names the purpose, the rest identifies the tensor or site.
namespace streams {
inline constexpr uint32_t kInit = 0x10000000u;     // + canonical parameter index
inline constexpr uint32_t kDropout = 0x20000000u;  // + layer * 16 + site
inline constexpr uint32_t kData = 0x30000000u;     // the batch sampler
inline constexpr uint32_t kSample = 0x40000000u;   // token sampling at generation time
}  // namespace streams

/// Where dropout happens in a GPT. The embedding site uses layer 0.
enum class DropoutSite : uint32_t { embedding = 0, attention_probs = 1, attn_residual = 2, mlp_residual = 3 };

inline PhiloxKey init_key(uint32_t seed, uint32_t parameter_index) {
  return {seed, streams::kInit + parameter_index};
}
inline PhiloxKey dropout_key(uint32_t seed, uint32_t layer, DropoutSite site) {
  return {seed, streams::kDropout + layer * 16u + static_cast<uint32_t>(site)};
}
inline PhiloxKey data_key(uint32_t seed) {
  return {seed, streams::kData};
}

/// The raw generator: four 32-bit words for counter (lo(c), hi(c), c2, c3) under key (seed, stream).
OPTIMUS_HD inline r123::Philox4x32::ctr_type philox(PhiloxKey key, uint64_t c, uint32_t c2 = 0, uint32_t c3 = 0) {
  r123::Philox4x32 gen;
  r123::Philox4x32::ctr_type ctr = {{static_cast<uint32_t>(c), static_cast<uint32_t>(c >> 32), c2, c3}};
  r123::Philox4x32::key_type k = {{key.seed, key.stream}};
  return gen(ctr, k);
}

/// A uniform number in [0, 1) for element `index` at `step`: word index%4 of counter index/4,
/// so four consecutive elements share one Philox call. 24 random bits, exact in float.
OPTIMUS_HD inline float philox_uniform(PhiloxKey key, uint64_t index, uint32_t step = 0) {
  auto r = philox(key, index / 4, step);
  return static_cast<float>(r.v[index % 4] >> 8) * (1.0f / 16777216.0f);
}

/// Two standard normal numbers: Box-Muller on the words of counter `pair`, the cosine branch for
/// element 2·pair and the sine branch for element 2·pair + 1 (philox_normal). Computed in double,
/// then rounded, so the CPU and GPU give the same floats.
struct NormalPair {
  float even, odd;
};
/// The Box-Muller step of philox_normal_pair, on the four words r of its Philox call: a loop that
/// makes many calls first and then transforms them gets the same floats.
OPTIMUS_HD inline NormalPair box_muller(const r123::Philox4x32::ctr_type& r) {
  // 53-bit uniforms from two words each; u1 in (0, 1] so the logarithm is finite.
  uint64_t a = (static_cast<uint64_t>(r.v[0]) << 21) ^ (r.v[1] >> 11);
  uint64_t b = (static_cast<uint64_t>(r.v[2]) << 21) ^ (r.v[3] >> 11);
  double u1 = (static_cast<double>(a & ((1ull << 53) - 1)) + 1.0) * (1.0 / 9007199254740992.0);
  double u2 = static_cast<double>(b & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
  double radius = sqrt(-2.0 * log(u1));
  double angle = 6.283185307179586476925286766559 * u2;
  return {static_cast<float>(radius * cos(angle)), static_cast<float>(radius * sin(angle))};
}
OPTIMUS_HD inline NormalPair philox_normal_pair(PhiloxKey key, uint64_t pair, uint32_t step = 0) {
  return box_muller(philox(key, pair, step));
}

/// A standard normal number for element `index`: its branch of philox_normal_pair(index / 2), so
/// element 2k takes the cosine branch and 2k+1 the sine branch. Drawing a tensor, take the pairs.
OPTIMUS_HD inline float philox_normal(PhiloxKey key, uint64_t index, uint32_t step = 0) {
  const NormalPair p = philox_normal_pair(key, index / 2, step);
  return index % 2 == 0 ? p.even : p.odd;
}

/// The dropout decision for one element: kept (true) with probability 1 - p.
OPTIMUS_HD inline bool dropout_keep(PhiloxKey key, uint64_t index, uint32_t step, float p) {
  return philox_uniform(key, index, step) >= p;
}

}  // namespace optimus::core
