// OPTIMUS_VECTOR_CLONES before a function compiles it three times, for AVX-512, for AVX2 and for
// the x86-64 baseline the rest of the build targets, and the loader picks the one this CPU runs
// (GCC's target_clones, resolved once through an ifunc). For the element-wise loops whose speed is
// the vector width: in the files built with -ffast-math it also picks glibc's vector expf of that
// width. The three clones may differ in the last bit (FMA, another expf); one machine always runs
// the same one. Empty where the compiler or the architecture has no such clones.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__CUDACC__)
#define OPTIMUS_VECTOR_CLONES [[gnu::target_clones("avx512f", "avx2", "default")]]
#else
#define OPTIMUS_VECTOR_CLONES
#endif
