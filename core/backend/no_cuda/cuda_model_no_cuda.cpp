// CudaModel in a build without the CUDA backend (STEPFORMER_CUDA=OFF, or AUTO where no nvcc was found): it cannot
// be made, and says why.
#include "backend/cuda_model.h"

#include "backend/device.h"

#include "util/error.h"

namespace sf {

struct CudaModel::Impl {};

CudaModel::CudaModel(const Config& config, const ModelWeights&, size_t) {
  // The model's reason first, as the CUDA build gives it (backend/device.h).
  if (const std::string why = model_not_for_gpu(config); !why.empty()) fail(ErrorKind::Unsupported, "cuda", why);
  fail(ErrorKind::Unsupported, ErrorCode::CudaNotBuilt, "cuda", {},
       "this build has no CUDA backend (configured without nvcc)");
}
CudaModel::~CudaModel() = default;

// Unreachable: the constructor always throws.
void CudaModel::forward(const std::vector<int>&, const std::vector<int>&, const Interventions&, Trace&) {}
void CudaModel::compute(const std::vector<int>&, const std::vector<int>&, const Interventions&) {}
void CudaModel::compute_batch(const std::vector<std::vector<int>>&, const std::vector<std::vector<int>>&, Mat*) {}
std::vector<int> CudaModel::greedy(const std::vector<int>&, const Interventions&, int) { return {}; }
void CudaModel::start_training(const AdamSettings&, const ModelWeights*, const ModelWeights*, int64_t) {}
LossResult CudaModel::train_step(const Batch&, const DropoutSettings&, float, float, float, double*) { return {}; }
void CudaModel::download_weights(ModelWeights&) const {}
void CudaModel::download_gradients(ModelWeights&) const {}
void CudaModel::download_adam(ModelWeights&, ModelWeights&) const {}
int64_t CudaModel::adam_steps() const { return 0; }
std::string CudaModel::device_name() const { return {}; }
void CudaModel::set_tf32(bool) {}

// Unreachable as well: there is no CudaModel to decode on.
struct CudaDecoding::State {};
CudaDecoding::CudaDecoding(CudaModel&, const std::vector<int>&, const Interventions&) {
  fail(ErrorKind::Unsupported, ErrorCode::CudaNotBuilt, "cuda", {},
       "this build has no CUDA backend (configured without nvcc)");
}
CudaDecoding::~CudaDecoding() = default;
int CudaDecoding::new_cache() { return 0; }
int CudaDecoding::copy_cache(int) { return 0; }
void CudaDecoding::release_cache(int) {}
void CudaDecoding::truncate_cache(int, int) {}
int CudaDecoding::cache_length(int) const { return 0; }
Mat CudaDecoding::step(const std::vector<int>&, const std::vector<int>&) { return {}; }
Mat CudaDecoding::chunk(int, const std::vector<int>&) { return {}; }

}  // namespace sf
