// The one allocation of a stage's buffers from its local shapes, and the start of its forward pass.
#include "model/activations.h"

namespace optimus::model {

using core::Buffer;
using core::MemoryCategory;

void allocate_buffers(Activations& acts, BackwardScratch& scratch, const core::Context& ctx, const GPTConfig& config,
                      Recompute recompute, const LocalShapes& local) {
  const int64_t B = local.mine.B, T = local.mine.T;
  acts = Activations{};
  scratch = BackwardScratch{};
  const int64_t Nl = local.mine.Nl, Cl = local.mine.Cl, Bl = local.mine.Bl, NHl = local.mine.NHl;
  const int64_t Nr = local.Nr(), Cr = local.Cr, Fr = local.Fr, Vr = local.Vr;
  auto act = [&](core::Shape s) { return Buffer(*ctx.ledger, MemoryCategory::activations, std::move(s), ctx.device); };
  auto tmp = [&](core::Shape s) { return Buffer(*ctx.ledger, MemoryCategory::workspace, std::move(s), ctx.device); };
  acts.B = static_cast<int>(B), acts.T = static_cast<int>(T);
  acts.inputs = core::IntBuffer(*ctx.ledger, MemoryCategory::workspace, {B, T}, ctx.device);
  acts.targets = core::IntBuffer(*ctx.ledger, MemoryCategory::workspace, {Bl, T}, ctx.device);
  if (local.block_inputs) acts.encoded = act({Nl, Cl});
  for (int l = 0; l < working_sets(config, recompute); ++l) {
    BlockActivations b;
    b.ln1 = act({Nl, Cl}), b.ln1_mean = act({Nl}), b.ln1_rstd = act({Nl});
    b.qkv = act({Nr, 3 * Cr});
    b.att = act({Bl, NHl, T, T});
    b.atty = act({Nr, Cr}), b.res1 = act({Nl, Cl});
    b.ln2 = act({Nl, Cl}), b.ln2_mean = act({Nl}), b.ln2_rstd = act({Nl});
    b.fch = act({Nr, Fr}), b.fch_gelu = act({Nr, Fr});
    acts.blocks.push_back(std::move(b));
  }
  if (local.block_inputs) {
    for (int l = 0; l < config.n_layer; ++l) acts.outputs.push_back(act({Nl, Cl}));
  }
  acts.branch = tmp({Nl, Cl});
  acts.lnf = act({Nl, Cl}), acts.lnf_mean = act({Nl}), acts.lnf_rstd = act({Nl});
  acts.logits = act({Nr, Vr});
  acts.ce_max = act({Nr}), acts.ce_sumexp = act({Nr});
  if (local.target_logits) acts.ce_target = act({Nr});
  acts.losses = act({Nr});
  scratch.d_res = tmp({Nl, Cl}), scratch.d_branch = tmp({Nl, Cl}), scratch.d_ln = tmp({Nl, Cl});
  scratch.d_atty = tmp({Nr, Cr}), scratch.d_qkv = tmp({Nr, 3 * Cr}), scratch.d_att = tmp({Bl, NHl, T, T});
  scratch.d_fch = tmp({Nr, Fr}), scratch.d_fch_gelu = tmp({Nr, Fr}), scratch.d_logits = tmp({Nr, Vr});
}

void ensure_buffers(Activations& acts, BackwardScratch& scratch, const core::Context& ctx, const GPTConfig& config,
                    Recompute recompute, const LocalShapes& local) {
  if (!acts.holds(local.mine.B, local.mine.T)) allocate_buffers(acts, scratch, ctx, config, recompute, local);
}

void begin_forward(Activations& acts, const core::Context& ctx, const LocalShapes& local, const int* inputs,
                   const int* targets, uint32_t step, bool train, const BatchSlice& slice) {
  acts.mine = place_in_batch(local.mine, slice);
  acts.step = step;
  acts.train = train;
  acts.last_part = slice.last;
  const int64_t T = local.mine.T;
  core::copy_to_device(ctx, acts.inputs.data(), inputs, local.mine.B * T);
  core::copy_to_device(ctx, acts.targets.data(), targets + local.mine.b0 * T, local.mine.Bl * T);  // my sequences'
}

core::DropoutSpec dropout_spec(const GPTConfig& config, const Activations& acts, uint32_t seed, int layer,
                               core::DropoutSite site) {
  return dropout_spec(config, acts.mine, seed, acts.step, acts.train, layer, site);
}

}  // namespace optimus::model
