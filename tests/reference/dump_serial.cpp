// The C++ half of the PyTorch reference test (the outside check): loads a checkpoint into the
// serial GPT, runs one forward and backward on evaluation batch 0 of a text file, then `steps`
// AdamW updates on that batch, and writes what it computed for gpt_reference.py compare:
// inputs, targets, logits, loss, grad.<name> for every parameter, losses (steps + 1 of them), and
// the AdamW hyper-parameters as metadata. Usage:
//   dump_serial CHECKPOINT DATA B T STEPS OUT.safetensors
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "model/safetensors.h"
#include "serial/gpt.h"
#include "train/checkpointing.h"
#include "train/data.h"
#include "train/optimizer.h"

using namespace optimus;

static std::string exact(float x) {  // 9 significant digits: the float32 value, exactly recoverable
  char s[32];
  std::snprintf(s, sizeof s, "%.9g", static_cast<double>(x));
  return s;
}

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: dump_serial CHECKPOINT DATA B T STEPS OUT.safetensors\n");
    return 2;
  }
  const std::string ckpt = argv[1], data_path = argv[2], out = argv[6];
  const int B = std::atoi(argv[3]), T = std::atoi(argv[4]), steps = std::atoi(argv[5]);
  try {
    model::GPTConfig config = train::load_checkpoint_config(ckpt);
    config.dropout = 0.0f;  // the reference has no dropout
    core::Context ctx = core::cpu_context();
    serial::GPT gpt(config, ctx, 0);
    train::load_weights(ckpt, config, gpt.params());
    train::TokenFile data = train::TokenFile::load(data_path, 1, UINT64_MAX);
    train::require_tokens_for_eval(data, B, T, 1);
    std::vector<int> inputs(static_cast<size_t>(B) * T), targets(inputs.size());
    train::eval_batch(inputs.data(), targets.data(), data, B, T, 0);

    std::vector<model::SafeTensor> tensors;
    tensors.push_back(model::SafeTensor::from_ints("inputs", {B, T}, inputs.data()));
    tensors.push_back(model::SafeTensor::from_ints("targets", {B, T}, targets.data()));

    // One forward and backward at the checkpoint's weights.
    gpt.params().zero_grads();
    std::vector<float> losses;
    losses.push_back(gpt.forward(inputs.data(), targets.data(), B, T, 0));
    gpt.backward();
    tensors.push_back(
        model::SafeTensor::from_floats("logits", {int64_t{B} * T, config.vocab_size}, gpt.activations().logits.data()));
    tensors.push_back(model::SafeTensor::from_floats("loss", {1}, losses.data()));
    for (const auto& t : gpt.params().tensors) {
      tensors.push_back(model::SafeTensor::from_floats("grad." + t.info.name, t.info.shape, t.grad.data()));
    }

    // `steps` AdamW updates on the same batch, constant learning rate, no clipping.
    train::AdamWOptions adamw;  // beta1 0.9, beta2 0.95, eps 1e-8
    adamw.weight_decay = 0.1f;
    const float lr = 1e-3f;
    train::AdamW opt(gpt.params(), ctx, adamw);
    for (int s = 0; s < steps; ++s) {
      opt.update(gpt.params(), lr);
      gpt.params().zero_grads();
      losses.push_back(gpt.forward(inputs.data(), targets.data(), B, T, 0));
      gpt.backward();
    }
    tensors.push_back(model::SafeTensor::from_floats("losses", {static_cast<int64_t>(losses.size())}, losses.data()));
    model::write_safetensors(out, tensors,
                             {{"lr", exact(lr)},
                              {"beta1", exact(adamw.beta1)},
                              {"beta2", exact(adamw.beta2)},
                              {"eps", exact(adamw.eps)},
                              {"weight_decay", exact(adamw.weight_decay)}});
    std::printf("dump_serial: wrote %s (B=%d T=%d, %d AdamW steps, loss %.8f -> %.8f)\n", out.c_str(), B, T, steps,
                losses.front(), losses.back());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dump_serial: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
