#include "backend/cuda/cublas_loader.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include "util/error.h"

namespace sf::cuda {

namespace {

template <typename F>
void bind(void* library, const char* symbol, F& out) {
  out = reinterpret_cast<F>(dlsym(library, symbol));
  if (!out) fail(ErrorKind::Unsupported, "cuda", std::string("cuBLAS has no ") + symbol);
}

Cublas load() {
  const std::string soname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  void* library = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::string why = library ? "" : dlerror();
#ifdef STEPFORMER_CUBLAS_DIR
  if (!library) library = dlopen((std::string(STEPFORMER_CUBLAS_DIR) + "/" + soname).c_str(), RTLD_NOW | RTLD_LOCAL);
#endif
  if (!library) fail(ErrorKind::Unsupported, "cuda", "cannot load cuBLAS (" + soname + "): " + why);
  Cublas c{};
  bind(library, "cublasCreate_v2", c.create);
  bind(library, "cublasDestroy_v2", c.destroy);
  bind(library, "cublasSetMathMode", c.set_math_mode);
  bind(library, "cublasSgemm_v2", c.sgemm);
  bind(library, "cublasSgemmBatched", c.sgemm_batched);
  bind(library, "cublasSgemmStridedBatched", c.sgemm_strided_batched);
  return c;  // the library stays loaded for the life of the program
}

}  // namespace

const Cublas& cublas() {
  static std::mutex mutex;
  static Cublas loaded{};
  static bool ok = false;
  std::lock_guard<std::mutex> lock(mutex);
  if (!ok) {  // a failure is not cached: the error says why each time it is asked
    loaded = load();
    ok = true;
  }
  return loaded;
}

}  // namespace sf::cuda
