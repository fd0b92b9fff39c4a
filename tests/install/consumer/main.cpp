// A program outside the project: a small serial GPT from an installed optimus, one forward pass.
#include <cstdio>
#include <vector>

#include "serial/gpt.h"

int main() {
  optimus::model::GPTConfig config;
  config.n_layer = 1, config.n_embd = 32, config.n_head = 2, config.n_positions = 8;
  optimus::serial::GPT gpt(config, optimus::core::cpu_context(), /*seed=*/1);
  const std::vector<int> inputs{1, 2, 3, 4}, targets{2, 3, 4, 5};
  std::printf("loss %.4f\n", gpt.forward(inputs.data(), targets.data(), /*B=*/1, /*T=*/4, /*step=*/0));
  return 0;
}
