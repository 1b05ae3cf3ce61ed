// The model on an NVIDIA GPU: the weights copied once into GPU memory, the app's traced forward pass and greedy
// decoding computed there, the trace copied back to host memory only when a caller asks for one.
//
//   matrix products   cuBLAS SGEMM in FP32 (CUBLAS_DEFAULT_MATH: no TF32), y = x W^T + b as the CPU's linear
//   the rest          kernels of ours (backend/cuda/kernels.h): embedding + positions, bias, ReLU/GELU, residual
//                     adds, layer norm, masked softmax, heads switched off
//   masks             built on the host by the CPU's build_mask (transformer/layers.h), so padding, causal and
//                     painted masks mean exactly what they mean on the CPU
//
// Same inputs, same checks, same Trace as sf::forward (transformer/forward.h): every traced tensor agrees with the
// CPU's within 1e-4 (tests/unit/test_cuda.cpp, label cuda). Built only with nvcc (STEPFORMER_CUDA=AUTO/ON); a
// build without it links backend/no_cuda/, whose constructor throws ErrorKind::Unsupported.
//
// Not on the GPU yet: the KV cache (greedy() recomputes the decoder on the whole prefix each step, which a GPU does
// in well under a millisecond at these sizes), sampling and beam search, the guided re-decoding after an
// intervention, and training. Those run on the CPU.
//
// Errors: ErrorKind::Unsupported when CUDA is not built, no GPU is usable (the runtime's reason), the model does not
// fit in the GPU's free memory, or a CUDA call fails mid-run (out of memory included): the caller goes on with the
// CPU. ErrorKind::Input/Shape for bad input, exactly as forward(), checked before anything runs.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/weights.h"
#include "transformer/interventions.h"
#include "transformer/trace.h"

namespace sf {

class CudaModel {
 public:
  // Copies `weights` to the GPU. memory_limit_bytes > 0 refuses a model needing more than that even where the GPU
  // has room (what a smaller GPU would say; the tests use it).
  CudaModel(const Config& config, const ModelWeights& weights, size_t memory_limit_bytes = 0);
  ~CudaModel();
  CudaModel(const CudaModel&) = delete;
  CudaModel& operator=(const CudaModel&) = delete;

  // As forward(config, weights, src, tgt, interventions, trace): fills every member of `trace`.
  void forward(const std::vector<int>& src_ids, const std::vector<int>& tgt_ids, const Interventions& interventions,
               Trace& trace);
  // The logits (T, Vt) of the same pass, nothing else copied back (the benchmark's and greedy's pass).
  Mat logits(const std::vector<int>& src_ids, const std::vector<int>& tgt_ids, const Interventions& interventions);
  // The same pass with nothing copied back (it stays in GPU memory until the next call): what a benchmark times
  // against PyTorch's forward, whose output stays on the GPU too.
  void compute(const std::vector<int>& src_ids, const std::vector<int>& tgt_ids, const Interventions& interventions);
  // B sentences at once, stacked (src, tgt: B sequences each, one length per side; padding and causal masks on, no
  // other intervention): the batched benchmark's pass. With `logits`, the (B*T, Vt) logits are copied back there.
  void compute_batch(const std::vector<std::vector<int>>& src, const std::vector<std::vector<int>>& tgt,
                     Mat* logits = nullptr);
  // Greedy decoding of src_ids: bos, then the most likely token (the forced prefix first) until eos or
  // max_length generated tokens (eos included; 0 or more: config.max_positions), as the CPU Decoder. The tokens,
  // without bos.
  std::vector<int> greedy(const std::vector<int>& src_ids, const Interventions& interventions, int max_length);

  const Config& config() const;
  size_t weight_bytes() const;      // GPU memory the weights take
  std::string device_name() const;  // "NVIDIA H100 80GB HBM3"

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sf
