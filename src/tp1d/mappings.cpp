// f and g, replicated or sequence parallel: each is one collective, or none.
#include "tp1d/mappings.h"

namespace optimus::tp1d {

void Region::allocate(const core::Context& ctx, int64_t N, int64_t C) {
  release();
  if (!sp_) return;
  gathered_ = core::Buffer(*ctx.ledger, core::MemoryCategory::communication, {N, C}, ctx.device);
  partial_ = core::Buffer(*ctx.ledger, core::MemoryCategory::communication, {N, C}, ctx.device);
}

const float* Region::f_forward(const float* mine, int64_t N, int64_t C) {
  if (!sp_) return mine;  // replicated: every rank holds every row
  tp_->all_gather(gathered_.data(), mine, rows(N) * C);
  return gathered_.data();
}

float* Region::partial(const core::Context& ctx, float* dmine) {
  return sp_ ? core::zeroed(ctx, partial_) : dmine;
}

float* Region::zeroed_partial(const core::Context& ctx, core::Buffer& dmine) {
  return sp_ ? core::zeroed(ctx, partial_) : core::zeroed(ctx, dmine);
}

void Region::f_backward(float* dmine, const float* partial, int64_t N, int64_t C) {
  if (sp_) {
    tp_->reduce_scatter(dmine, partial, rows(N) * C);
  } else {
    tp_->all_reduce(dmine, N * C);  // dmine is the partial
  }
}

float* Region::g_partial(float* out) const {
  return sp_ ? partial_.data() : out;
}

void Region::g_forward(float* out, const float* partial, int64_t N, int64_t OC) {
  if (sp_) {
    tp_->reduce_scatter(out, partial, rows(N) * OC);
  } else {
    tp_->all_reduce(out, N * OC);  // out is the partial
  }
}

const float* Region::g_backward(const float* dmine, int64_t N, int64_t OC) {
  if (!sp_) return dmine;  // the gradient of the replicated output is every partial sum's
  tp_->all_gather(gathered_.data(), dmine, rows(N) * OC);
  return gathered_.data();
}

}  // namespace optimus::tp1d
