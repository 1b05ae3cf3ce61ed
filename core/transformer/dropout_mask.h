// The counter-based dropout masks of training (transformer/layers.h's Dropout), as formulas that the CPU and the
// CUDA kernels (backend/cuda/kernels.cu) both compile, so that a GPU step drops exactly what a CPU step drops:
//   key of the k-th mask of a pass at step s:  splitmix64(seed ^ splitmix64(s * 0x100000001b3 + k))
//   element i of that mask:                    0 if u < p, else 1 / (1 - p),   u = (splitmix64(key + i) >> 40) / 2^24
// The same masks whatever the number of threads, and no generator state to save in a checkpoint.
#pragma once
#include <cstdint>

#ifdef __CUDACC__
#define SF_HOST_DEVICE __host__ __device__
#else
#define SF_HOST_DEVICE
#endif

namespace sf {

SF_HOST_DEVICE inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// site: the mask's number in its pass, from 1.
SF_HOST_DEVICE inline uint64_t dropout_mask_key(uint64_t seed, uint64_t step, uint64_t site) {
  return splitmix64(seed ^ splitmix64(step * 0x100000001b3ULL + site));
}

// kept = 1 / (1 - p).
SF_HOST_DEVICE inline float dropout_keep(uint64_t key, uint64_t element, float p, float kept) {
  const float u = static_cast<float>(splitmix64(key + element) >> 40) * (1.0f / 16777216.0f);
  return u < p ? 0.0f : kept;
}

}  // namespace sf
