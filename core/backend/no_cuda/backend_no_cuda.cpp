// Linked when the build has no CUDA backend (STEPFORMER_CUDA=OFF, or AUTO without nvcc).
#include "backend/backend.h"

namespace sf {

const BackendInfo& backend_info() {
#if defined(__EMSCRIPTEN__)
  // A web page reaches no GPU for computing (WebGL draws; CUDA is the desktop app's, tools/gpu_check.sh).
  static const BackendInfo info{false, false, 0, "",
                                "CPU (Eigen, WebAssembly, one thread); a web page cannot compute on a GPU: the "
                                "desktop app does, with CUDA"};
#else
  static const BackendInfo info{false, false, 0, "", "CPU (Eigen); built without CUDA"};
#endif
  return info;
}

}  // namespace sf
