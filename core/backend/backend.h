// Compute backends. The CPU backend (Eigen) is always built; the CUDA backend is compiled only when CMake
// found nvcc (STEPFORMER_CUDA=AUTO/ON). This header has no #ifdef: CMake links exactly one implementation of
// the CUDA entry points, either core/backend/cuda/ or core/backend/no_cuda/ (which reports "built without CUDA").
#pragma once
#include <string>

namespace sf {

struct BackendInfo {
  bool cuda_built = false;      // this binary contains the CUDA backend
  bool cuda_available = false;  // ...and a usable GPU was found at run time
  int cuda_device_count = 0;
  std::string cuda_device_name;  // the first GPU's name, when one is usable
  std::string description;      // one line for --version and the model-info panel
};

// Queries once and caches. Never throws: no GPU (or no driver) means "use the CPU", said once, quietly.
const BackendInfo& backend_info();

}  // namespace sf
