// Chapter 1's example: the serial GPT's API in one page. A small model learns one sentence by heart
// — forward, backward, clipping and AdamW by hand, the same calls the trainer makes — and then
// completes it from its first words. Usage: memorise ["a sentence to learn"]
#include <cstdio>
#include <string>
#include <vector>

#include "serial/gpt.h"
#include "train/data.h"
#include "train/optimizer.h"
#include "train/sample.h"

using namespace optimus;

int main(int argc, char** argv) {
  const std::string text = argc > 1 ? argv[1] : "Tensor parallelism splits every matrix over a grid of ranks.";
  model::GPTConfig config;  // L4 C256 NH4 would do; a smaller model learns one sentence faster
  config.n_layer = 2, config.n_embd = 64, config.n_head = 4, config.n_positions = 64;
  const std::vector<int> tokens = train::encode(text);
  const int T = std::min<int>(config.n_positions, static_cast<int>(tokens.size()) - 1);
  if (T < 2) {
    std::fprintf(stderr, "error: give a sentence of at least 3 bytes\n");
    return 1;
  }
  std::vector<int> inputs(tokens.begin(), tokens.begin() + T), targets(tokens.begin() + 1, tokens.begin() + T + 1);

  serial::GPT gpt(config, core::cpu_context(), /*seed=*/1);
  train::AdamW opt(gpt.params(), gpt.context(), train::AdamWOptions{});
  for (int step = 0; step < 150; ++step) {
    gpt.params().zero_grads();
    const float loss = gpt.forward(inputs.data(), targets.data(), /*B=*/1, T, step);  // (1, T) → mean loss
    gpt.backward();                                                                   // gradients of every parameter
    const float norm = gpt.clip_gradients(1.0f);                                      // global norm, clipped to 1
    opt.update(gpt.params(), 3e-3f);  // AdamW, weight decay on 2-D weights
    if (step % 25 == 0) std::printf("step %3d  loss %.4f  grad norm %.3f\n", step, loss, norm);
  }
  train::SampleOptions so;
  so.tokens = static_cast<int>(text.size()) - 12;
  so.temperature = 0.1f;  // nearly greedy: the memorised continuation
  const std::string prompt = text.substr(0, 12);
  std::printf("prompt:     %s\ncompletion: %s%s\n", prompt.c_str(), prompt.c_str(),
              train::sample_text(gpt, prompt, so).text.c_str());
  return 0;
}
