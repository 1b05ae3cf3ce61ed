// Where the views' decoding computes (--device): the GPU copy of the shown model, made on first use on the worker
// thread that decodes (copying a model's weights takes a moment), and the words the top bar and Model info say.
//
//   auto  the GPU where this build has CUDA, a GPU is usable and the model fits; else the CPU
//   cpu   the CPU
//   cuda  the GPU (the app refuses to start without a usable one); where it cannot take the model (too little
//         memory, the from-scratch family) the views compute on the CPU, saying why
// A GPU copy serves one model (another model, or other weights of it, gets a copy of its own, the last one
// dropped). A CUDA failure (out of memory, say) switches that model's views to the CPU for good (fail()),
// with the reason kept for the user. The decoding steps themselves choose per request: a painted mask or the
// causal mask off keeps a decoding on the CPU (why_decoding_stays_on_the_cpu, decode/decoder.h).
// Thread-safe: the frame thread reads the words while a worker uses the copy.
#pragma once
#include <memory>
#include <mutex>
#include <string>

#include "backend/device.h"
#include "model/model.h"

namespace sf::gui {

class ViewDevice {
 public:
  explicit ViewDevice(DeviceRequest request) : request_(request) {}
  // The GPU copy of `model`, or null where its views compute on the CPU (note() says why, where a GPU was asked
  // for or is there). Copies the weights the first time a model asks (on the caller's thread).
  std::shared_ptr<CudaModel> gpu_for(const std::shared_ptr<const Model>& model);
  // A CUDA call failed on `model`'s copy: its views compute on the CPU from now on, `reason` said.
  void fail(const std::shared_ptr<const Model>& model, const std::string& reason);
  std::string note() const;  // why the CPU computes where a GPU could have (empty: nothing to say)
  DeviceRequest request() const { return request_; }

 private:
  const DeviceRequest request_;
  mutable std::mutex mutex_;
  std::shared_ptr<const Model> model_;  // the model the copy (or the refusal) is for
  std::shared_ptr<CudaModel> gpu_;
  std::string note_;
};

}  // namespace sf::gui
