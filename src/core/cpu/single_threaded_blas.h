// For CPU code that runs OpenBLAS products inside its own OpenMP parallel region, one product per
// thread. OpenBLAS's OpenMP build notices the enclosing region by itself and runs each product on
// the calling thread; its pthreads build would start threads of its own inside each product, so it
// is held to one thread while the region runs. (Setting the OpenMP build's count would also set
// ours, so it is left alone.)
#pragma once

#include <cblas.h>

namespace optimus::core {

class SingleThreadedBlas {
 public:
  SingleThreadedBlas() : pthreads_(openblas_get_parallel() == 1), saved_(openblas_get_num_threads()) {
    if (pthreads_) openblas_set_num_threads(1);
  }
  ~SingleThreadedBlas() {
    if (pthreads_) openblas_set_num_threads(saved_);
  }
  SingleThreadedBlas(const SingleThreadedBlas&) = delete;
  SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;

 private:
  bool pthreads_;
  int saved_;
};

}  // namespace optimus::core
