// Which device computes: the --device choice of the app and the CLI.
//   auto  the GPU where this build has the CUDA backend, a GPU is usable and the model fits in its memory; else
//         the CPU, with a note saying why
//   cpu   the CPU (Eigen), always
//   cuda  the GPU, or ErrorKind::Unsupported naming why not (no CUDA in this build, no GPU or driver, too little
//         GPU memory)
// What runs on the GPU today is backend/cuda_model.h's list; everything else runs on the CPU whatever the choice.
#pragma once
#include <memory>
#include <string>

#include "backend/cuda_model.h"

namespace sf {

enum class DeviceRequest { Auto, Cpu, Cuda };

// "auto" | "cpu" | "cuda"; anything else is ErrorKind::Input naming the three.
DeviceRequest parse_device(const std::string& text);
const char* to_string(DeviceRequest request);

// Why the GPU kernels cannot compute this model ("" when they can), whatever the build and the machine: the
// from-scratch family's reshaped heads and BERT's parts (token types, embedding norm, masked-LM head) have no
// kernels. CudaModel's constructors (with and without CUDA) ask this first, so `--device cuda` names the model's
// reason before the device's, the same on every machine.
std::string model_not_for_gpu(const Config& config);

// The model on the GPU, or null for the CPU. For Auto, `note` then says why where a GPU was there but could not
// take the model; it stays empty where there is no GPU (the CPU quietly) and for Cpu.
std::unique_ptr<CudaModel> open_device(DeviceRequest request, const Config& config, const ModelWeights& weights,
                                       std::string* note);

}  // namespace sf
