// Linked when CMake found nvcc. Finds out at run time whether a GPU is usable; any failure of the CUDA runtime
// (no driver: 35, stub library: 34, no device: 100) means "no GPU, use the CPU".
#include <cuda_runtime.h>

#include <string>

#include "backend/backend.h"

namespace sf {

const BackendInfo& backend_info() {
  static const BackendInfo info = [] {
    BackendInfo b;
    b.cuda_built = true;
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status == cudaSuccess && count > 0) {
      cudaDeviceProp prop{};
      cudaGetDeviceProperties(&prop, 0);
      b.cuda_available = true;
      b.cuda_device_count = count;
      b.cuda_device_name = prop.name;
      b.description = std::string("CPU (Eigen) and CUDA on ") + prop.name + " (sm_" + std::to_string(prop.major) +
                      std::to_string(prop.minor) + ", " + std::to_string(prop.totalGlobalMem >> 30) +
                      " GiB): traced forward, decoding (greedy, sampling, beam search) and training with --device auto|cuda";
    } else {
      cudaGetLastError();  // clear the sticky error
      b.description = std::string("CPU (Eigen); CUDA built but no GPU usable (") + cudaGetErrorString(status) + ")";
    }
    return b;
  }();
  return info;
}

}  // namespace sf
