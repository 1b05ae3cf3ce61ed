#include "gui/view_device.h"

#include "gui/app_state.h"
#include "gui/text/text.h"
#include "util/error.h"

namespace sf::gui {

std::shared_ptr<CudaModel> ViewDevice::gpu_for(const std::shared_ptr<const Model>& model) {
  if (request_ == DeviceRequest::Cpu || !model) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  if (model_ == model) return gpu_;
  gpu_.reset();  // the last model's copy goes (decoders still using it keep it alive until they go)
  note_.clear();
  model_ = model;
  try {
    std::string why;
    std::unique_ptr<CudaModel> copy = open_device(request_, model->config, model->weights, &why);
    gpu_ = std::move(copy);
    note_ = why;  // auto: a GPU that could not take the model
  } catch (const Error& e) {  // cuda: no GPU, no room, a model family it does not compute
    note_ = tr(request_ == DeviceRequest::Cuda ? T::device_cuda_failed_asked : T::device_cuda_failed,
               {{"reason", error_text(e)}});
  }
  return gpu_;
}

void ViewDevice::fail(const std::shared_ptr<const Model>& model, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (model_ != model) return;  // a copy already replaced
  gpu_.reset();
  note_ = tr(T::device_gpu_failed, {{"reason", reason}});
}

std::string ViewDevice::note() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return note_;
}

}  // namespace sf::gui
