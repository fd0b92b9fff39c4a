// Sizes are checked before arithmetic: each dimension at 2^31 − 1, pairs whose product passes an
// int or int64, and the values just below each limit. Every refusal is a core::ConfigError whose
// sentence names the size (checked by substring); nothing here allocates or builds a model, except
// the last case, which runs small steps on the meta device to check that step_count_bound is a bound.
// The limits' values below are worked out by hand in the comments, not taken from a run.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <climits>
#include <cstdint>
#include <string>

#include "core/errors.h"
#include "model/config.h"
#include "plan/plan.h"

using namespace optimus;
using model::GPTConfig;
using model::StepExtent;

namespace {

constexpr int kIntMax = INT_MAX;  // 2147483647

GPTConfig shape(int L, int C, int NH, int T, int V) {
  GPTConfig c;
  c.n_layer = L, c.n_embd = C, c.n_head = NH, c.n_positions = T, c.vocab_size = V;
  return c;
}

// validate() then require_step_sizes(): "" if both pass, else the ConfigError's message. Any other
// exception fails the test (it escapes to Catch2).
std::string refusal(const GPTConfig& c, const StepExtent& step = {}) {
  try {
    c.validate();
    model::require_step_sizes(c, step);
  } catch (const core::ConfigError& e) {
    return e.what();
  }
  return "";
}

void require_refused(const GPTConfig& c, const StepExtent& step, const std::string& names) {
  const std::string message = refusal(c, step);
  INFO("message: " << message);
  CHECK(message.find(names) != std::string::npos);
}

// The plan's options for `c` at batch B over P ranks and D copies (1d when P > 1).
plan::PlanOptions plan_options(const GPTConfig& c, int B, int P = 1, int D = 1) {
  plan::PlanOptions o;
  o.config = c, o.batch = B, o.ranks = P, o.data_parallel = D;
  if (P > 1) o.layout = train::Layout::tp1d;
  return o;
}

std::string plan_refusal(const plan::PlanOptions& o) {
  try {
    plan::require_valid(o);
  } catch (const core::ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("sizes: each dimension at 2^31 - 1 is refused in one sentence naming it, or fits", "[sizes]") {
  // L: each layer's dropout has one of 2^24 Philox streams.
  require_refused(shape(kIntMax, 256, 4, 128, 256), {}, "--layers) must be at most 16777216");
  // C: the MLP width 4C = 8589934588 is past an int.
  require_refused(shape(4, kIntMax, 1, 128, 256), {}, "the MLP width 4C = 8589934588");
  // NH: 256 is not divisible by it; with C = NH, 4C is past an int.
  require_refused(shape(4, 256, kIntMax, 128, 256), {}, "not divisible by the number of heads 2147483647");
  require_refused(shape(4, kIntMax, kIntMax, 128, 256), {}, "the MLP width 4C");
  // T: the attention scores (1, 4, T, T) hold about 2^64 elements.
  require_refused(shape(4, 256, 4, kIntMax, 256), {.seq = kIntMax}, "the attention scores (B, NH, T, T)");
  // B: B·T = 2147483647·128 tokens.
  require_refused(shape(4, 256, 4, 128, 256), {.batch = kIntMax, .seq = 128}, "has B·T = 274877906816 tokens");
  // P: the vocabulary padded to a multiple of the ranks may pass an int (V + P − 1).
  require_refused(shape(4, 256, 4, 128, 256), {.seq = 128, .ranks = kIntMax}, "can reach 2147483902");
  // V alone fits: 2^31 − 1 rows of wte are 549 759 005 952 parameters, an int's worth of ids, and no
  // product past a limit; padded for 2 ranks it no longer fits an int.
  CHECK(refusal(shape(4, 256, 4, 128, kIntMax), {.seq = 128}).empty());
  require_refused(shape(4, 256, 4, 128, kIntMax), {.seq = 128, .ranks = 2}, "can reach 2147483648");
}

TEST_CASE("sizes: the plan refuses --ranks, --data-parallel and their product past its world of 2^24", "[sizes]") {
  const GPTConfig tiny = GPTConfig::named("tiny");
  CHECK(plan_refusal(plan_options(tiny, 1, kIntMax)).find("a world of 2147483647 ranks") != std::string::npos);
  CHECK(plan_refusal(plan_options(tiny, kIntMax, 1, kIntMax)).find("a world of 2147483647") != std::string::npos);
  // 65536 × 65536 = 2^32 ranks: the product itself is past an int.
  CHECK(plan_refusal(plan_options(tiny, 65536, 65536, 65536)).find("a world of 4294967296 ranks") != std::string::npos);
  CHECK(plan_refusal(plan_options(tiny, kIntMax)).find("has B·T = 274877906816 tokens") != std::string::npos);
  plan::PlanOptions nodes = plan_options(tiny, 1);
  nodes.ranks_per_node = kIntMax;
  CHECK(plan_refusal(nodes).find("--ranks-per-node must be at most 16777216") != std::string::npos);
  // --embd 2147483647 --heads 1: the adversarial test's crash, now one sentence before any step.
  CHECK(plan_refusal(plan_options(shape(4, kIntMax, 1, 128, 256), 1)).find("the MLP width 4C") != std::string::npos);
}

TEST_CASE("sizes: products past an int or int64 are refused, the values just below each limit are not", "[sizes]") {
  SECTION("layers: 2^24 fit, 2^24 + 1 do not") {
    CHECK(refusal(shape(1 << 24, 1, 1, 1, 1), {}).empty());
    require_refused(shape((1 << 24) + 1, 1, 1, 1, 1), {}, "must be at most 16777216");
  }
  SECTION("B·T: 2147483647 tokens fit, 2147483648 do not") {
    const GPTConfig c = shape(1, 4, 1, 2, 2);
    CHECK(refusal(c, {.batch = kIntMax, .seq = 1}).empty());
    require_refused(c, {.batch = 1073741824, .seq = 2}, "has B·T = 2147483648 tokens");
    require_refused(c, {.batch = kIntMax, .seq = 2}, "has B·T = 4294967294 tokens");
  }
  SECTION("4C: C = 2^29 makes 4C = 2^31, one past an int; 2^29 − 1 passes that check (and fails the next)") {
    require_refused(shape(1, 1 << 29, 1, 1, 1), {}, "4C = 2147483648");
    const std::string below = refusal(shape(1, (1 << 29) - 1, 1, 1, 1));
    CHECK(below.find("4C") == std::string::npos);
    CHECK(below.find("parameters") != std::string::npos);  // 12·C² ≈ 3.5e18 of them
  }
  SECTION("parameters: 12C² + 17C (L = T = V = 1) fits 2^52 at C = 19372659, not at 19372660") {
    // 12·19372659² + 17·19372659 = 4503599330098575 ≤ 4503599627370496 = 2^52
    // 12·19372660² + 17·19372660 = 4503599795042420 > 2^52
    CHECK(refusal(shape(1, 19372659, 1, 1, 1)).empty());
    require_refused(shape(1, 19372660, 1, 1, 1), {}, "the model has 4503599795042420 parameters");
  }
  SECTION("V·C, C·4C, L·12C² past int64 saturate and are refused, not wrapped") {
    require_refused(shape(16777216, 536870911, 1, 1, kIntMax), {}, "more than 9223372036854775807 parameters");
    require_refused(shape(1, 100000000, 1, 1, kIntMax), {}, "parameters");
  }
  SECTION("the padded vocabulary: V + P − 1 fits an int at V = 2^31 − P, not at one more") {
    const GPTConfig fits = shape(1, 4, 1, 1, kIntMax - 7), past = shape(1, 4, 1, 1, kIntMax - 6);
    CHECK(refusal(fits, {.ranks = 8}).empty());
    require_refused(past, {.ranks = 8}, "can reach 2147483648");
  }
  SECTION("NH·B·T·T: the attention scores fit 2^52 elements at T = 2^26, not at 2^26 + 1") {
    CHECK(refusal(shape(1, 1, 1, 1 << 26, 2), {.seq = 1 << 26}).empty());
    require_refused(shape(1, 1, 1, (1 << 26) + 1, 2), {.seq = (1 << 26) + 1}, "the attention scores (B, NH, T, T)");
    // B·NH·T²: B = 2^19 sequences of T = 2^11 tokens, 4 heads: 2^19·4·2^22 = 2^43 fits; B·NH = 2^21.
    CHECK(refusal(shape(1, 4, 4, 2048, 2), {.batch = 1 << 19, .seq = 2048}).empty());
  }
  SECTION("B·NH: attention's (sequence, head) pairs are an int") {
    // B = 2^30, T = 1, NH = 2: 2^31 pairs, one past an int; B·T = 2^30 fits.
    require_refused(shape(1, 2, 2, 1, 2), {.batch = 1 << 30, .seq = 1}, "B·NH = 2147483648");
    CHECK(refusal(shape(1, 2, 1, 1, 2), {.batch = 1 << 30, .seq = 1}).empty());
  }
  SECTION("V·B·T: the logits (B·T, V) of 2^31 − 1 tokens fit 2^52 elements at V = 2^21 − 1, not at 2^21 + 1") {
    // 2147483647 · 2097151 = 4503597477789697 ≤ 2^52 = 4503599627370496;
    // 2147483647 · 2097153 = 4503601772756991 > 2^52 (and · 4194305 = 9007201398030335, twice past).
    CHECK(refusal(shape(1, 1, 1, 1, 2097151), {.batch = kIntMax, .seq = 1}).empty());
    require_refused(shape(1, 1, 1, 1, 2097153), {.batch = kIntMax, .seq = 1}, "the logits (B·T, V)");
    require_refused(shape(1, 1, 1, 1, 4194305), {.batch = kIntMax, .seq = 1}, "the logits (B·T, V)");
  }
  SECTION("dropout's per-thread scratch (threads, 2, T, T): 2^10 threads at T = 2^21 is 2^53 elements") {
    GPTConfig c = shape(1, 1, 1, 1 << 21, 2);
    c.dropout = 0.1f;
    require_refused(c, {.seq = 1 << 21, .threads = 1 << 10}, "attention's dropout scratch");
    CHECK(refusal(c, {.seq = 1 << 21, .threads = 1 << 9}).empty());  // 2^52 exactly
    c.dropout = 0.0f;                                                // no dropout, no scratch
    CHECK(refusal(c, {.seq = 1 << 21, .threads = 1 << 10}).empty());
  }
  SECTION("the step's counts: L = 2^24, C = V = T = 1 fits 2^62 at B = 213414521, not at one more") {
    // parameters 2^24·25 + 4 = 419430404; bound = 8·B·(419430404 + 136·2^24 + 8) + 64·419430404
    // = 21609054304·B + 26843545856: at B = 213414521, 4611686000394694240 ≤ 2^62 = 4611686018427387904;
    // one more is past.
    const GPTConfig c = shape(1 << 24, 1, 1, 1, 1);
    CHECK(model::step_count_bound(c, {.batch = 213414521, .seq = 1}) == 4611686000394694240);
    CHECK(refusal(c, {.batch = 213414521, .seq = 1}).empty());
    require_refused(c, {.batch = 213414522, .seq = 1}, "past 2^62");
    // With 2 copies each counts half the tokens: the step of 2·213414521 sequences fits again.
    CHECK(refusal(c, {.batch = 2 * 213414521, .seq = 1, .copies = 2}).empty());
  }
}

TEST_CASE("sizes: step_count_bound bounds every count a planned step's ledgers keep", "[sizes]") {
  // Small shapes with the extreme ratios (C = 1 per head, long T, large V), with and without
  // dropout and recomputation, in every layout and with data parallelism: every op's FLOPs and
  // bytes, every communicator's bytes and every rank's peak memory, under the bound.
  struct Case {
    GPTConfig c;
    int B;
    train::Layout layout;
    int P, D;
    bool recompute;
  };
  using train::Layout;
  GPTConfig with_dropout = shape(2, 8, 8, 16, 50);
  with_dropout.dropout = 0.1f;
  const Case cases[] = {{shape(1, 1, 1, 1, 1), 1, Layout::serial, 1, 1, false},
                        {shape(1, 1, 1, 1, 1), 3, Layout::serial, 1, 1, true},
                        {shape(2, 8, 8, 16, 50), 2, Layout::serial, 1, 1, true},
                        {with_dropout, 2, Layout::tp1d, 2, 1, true},
                        {shape(1, 2, 2, 64, 2), 1, Layout::tp1d, 2, 1, false},
                        {shape(2, 4, 2, 3, 1000), 4, Layout::tp1d, 2, 2, true},
                        {shape(2, 8, 4, 8, 30), 4, Layout::tp2d, 4, 1, true},
                        {shape(1, 4, 2, 2, 3), 2, Layout::tp2d, 4, 1, false},
                        {shape(1, 8, 2, 4, 20), 4, Layout::tp3d, 8, 1, true},
                        // GPT-3 175B's shapes, where the products dominate: their FLOPs are about 0.9 of the bound.
                        {shape(96, 12288, 96, 2048, 50257), 2, Layout::tp2d, 4, 1, true}};
  for (const Case& k : cases) {
    plan::PlanOptions o = plan_options(k.c, k.B, 1, k.D);
    o.layout = k.layout, o.ranks = k.P, o.json = true;
    o.stage.recompute = k.recompute ? model::Recompute::block : model::Recompute::none;
    const int64_t bound =
        model::step_count_bound(k.c, {.batch = k.B, .seq = k.c.n_positions, .ranks = k.P, .copies = k.D});
    const nlohmann::json report = nlohmann::json::parse(plan::plan_report(o));
    int64_t largest = 0;
    for (const auto& rank : report["per_rank"]) {
      largest = std::max(largest, rank["memory"]["total"]["peak_bytes"].get<int64_t>());
      for (const auto& [kind, t] : rank["ops"].items()) {
        for (const char* count : {"flops", "bytes_read", "bytes_written"}) {
          largest = std::max(largest, t[count].get<int64_t>());
        }
      }
      for (const auto& [name, communicator] : rank["comm"].items()) {
        for (const auto& [op, t] : communicator.items()) {
          if (t.is_object()) largest = std::max(largest, t["bytes"].get<int64_t>());
        }
      }
    }
    INFO(train::to_string(k.layout) << " P" << k.P << " D" << k.D << " L" << k.c.n_layer << " C" << k.c.n_embd << " NH"
                                    << k.c.n_head << " T" << k.c.n_positions << " V" << k.c.vocab_size << " B" << k.B
                                    << ": largest count " << largest << ", bound " << bound);
    CHECK(largest > 0);
    CHECK(largest <= bound);
  }
}
