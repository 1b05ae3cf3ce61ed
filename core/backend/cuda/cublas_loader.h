// cuBLAS, loaded with dlopen when the first CudaModel is made, not linked: libcublasLt alone is 540 MB, and
// mapping it at program start cost every run of the app and the CLI, GPU or none, about 120 MB of memory.
// The few entry points the backend calls, by their cublas_v2.h types.
#pragma once
#include <cublas_v2.h>

namespace sf::cuda {

struct Cublas {
  cublasStatus_t (*create)(cublasHandle_t*);
  cublasStatus_t (*destroy)(cublasHandle_t);
  cublasStatus_t (*set_math_mode)(cublasHandle_t, cublasMath_t);
  cublasStatus_t (*sgemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const float*,
                          const float*, int, const float*, int, const float*, float*, int);
  cublasStatus_t (*sgemm_batched)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const float*,
                                  const float* const*, int, const float* const*, int, const float*, float* const*, int,
                                  int);
  cublasStatus_t (*sgemm_strided_batched)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                          const float*, const float*, int, long long, const float*, int, long long,
                                          const float*, float*, int, long long, int);
};

// Loads the library once (the soname of the cuBLAS the build was compiled against, looked up as the dynamic
// loader does, then in the CUDA Toolkit's library folder found at configure time). ErrorKind::Unsupported naming
// the library and dlerror() where it cannot.
const Cublas& cublas();

}  // namespace sf::cuda
