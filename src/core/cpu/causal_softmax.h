// The causal softmax of one (sequence, head) pair's scores and its backward, in place on the
// (T, T) square: the element-wise part of CPU attention (core/cpu/attention.cpp runs them per pair).
#pragma once

namespace optimus::core {

/// In place on one pair's scores att (T, T): row t becomes softmax(att[t, 0..t]), zeros after t.
void causal_softmax(float* att, int T);

/// In place on one pair's gradient datt (T, T), with att the probabilities:
/// d(scores)[t, s] = att[t, s] (datt[t, s] - Σ_s' att[t, s'] datt[t, s']) for s <= t, zeros after t.
void causal_softmax_backward(float* datt, const float* att, int T);

}  // namespace optimus::core
