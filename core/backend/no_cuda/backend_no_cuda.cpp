// Linked when the build has no CUDA backend (STEPFORMER_CUDA=OFF, or AUTO without nvcc).
#include "backend/backend.h"

namespace sf {

const BackendInfo& backend_info() {
  static const BackendInfo info{false, false, 0, "", "CPU (Eigen); built without CUDA"};
  return info;
}

}  // namespace sf
