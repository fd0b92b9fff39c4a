// What a stage's backward pass tells, as it goes, about its parameters' gradients (chapter 6): data
// parallelism listens, to sum each block's gradients over the model copies while the backward pass
// goes on to the blocks before it.
#pragma once

namespace optimus::model {

/// Called by a stage's backward pass in the pass that ends a step (BatchSlice::last), on every
/// rank of the stage alike: block_ready(l) for l = L−1 down to 0, then all_ready().
class GradientListener {
 public:
  virtual ~GradientListener() = default;
  /// Block l's backward is done: this rank's gradients of its parameters are complete (those the
  /// stage sums over its own ranks still wait for that sum, which comes after all_ready).
  virtual void block_ready(int l) = 0;
  /// Every gradient of this rank is complete (as above). Returns when the listener has finished
  /// with them: the stage's own sums and the optimizer may use them then.
  virtual void all_ready() = 0;
};

}  // namespace optimus::model
