#include "backend/device.h"

#include "backend/backend.h"
#include "util/error.h"

namespace sf {

DeviceRequest parse_device(const std::string& text) {
  if (text == "auto") return DeviceRequest::Auto;
  if (text == "cpu") return DeviceRequest::Cpu;
  if (text == "cuda") return DeviceRequest::Cuda;
  fail(ErrorKind::Input, "device", "unknown device '" + text + "': auto, cpu or cuda");
}

const char* to_string(DeviceRequest request) {
  switch (request) {
    case DeviceRequest::Auto: return "auto";
    case DeviceRequest::Cpu: return "cpu";
    case DeviceRequest::Cuda: return "cuda";
  }
  return "?";
}

std::string model_not_for_gpu(const Config& config) {
  if (config.attention != AttentionStyle::SplitHeads)
    return "the GPU kernels compute split_heads attention only, not this model's reshape_heads (the from-scratch "
           "family)";
  // BERT's parts (config.h) have no GPU kernels: the pass and the training of such a model run on the CPU.
  if (config.type_vocab_size > 0)
    return "the GPU kernels do not compute token-type embeddings (type_vocab_size, BERT's)";
  if (config.embedding_norm) return "the GPU kernels do not compute the embedding norm (embedding_norm, BERT's)";
  if (config.output_head == OutputHead::MaskedLM)
    return "the GPU kernels do not compute the masked-LM output head (output_head \"masked_lm\", BERT's)";
  return "";
}

std::unique_ptr<CudaModel> open_device(DeviceRequest request, const Config& config, const ModelWeights& weights,
                                       std::string* note) {
  if (note) note->clear();
  if (request == DeviceRequest::Cpu) return nullptr;
  if (request == DeviceRequest::Auto && !backend_info().cuda_available) return nullptr;  // no GPU: quietly the CPU
  try {
    return std::make_unique<CudaModel>(config, weights);
  } catch (const Error& e) {
    if (request == DeviceRequest::Cuda || e.kind() != ErrorKind::Unsupported) throw;
    if (note) *note = std::string("computing on the CPU: ") + e.what();
    return nullptr;
  }
}

}  // namespace sf
