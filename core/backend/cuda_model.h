// The model on an NVIDIA GPU: the weights copied once into GPU memory, the app's traced forward pass and greedy
// decoding computed there, the trace copied back to host memory only when a caller asks for one.
//
//   matrix products   cuBLAS SGEMM in FP32 (CUBLAS_DEFAULT_MATH: no TF32), y = x W^T + b as the CPU's linear;
//                     TF32 tensor cores only when asked (set_tf32)
//   the rest          kernels of ours (backend/cuda/kernels.h): embedding + positions, bias, ReLU/GELU/SiLU,
//                     residual adds, layer norm, masked softmax, heads switched off
//   models            ours (both PyTorch families) and Marian's; not the from-scratch family (reshaped heads)
//   masks             built on the host by the CPU's build_mask (transformer/layers.h), so padding, causal and
//                     painted masks mean exactly what they mean on the CPU
//
// Same inputs, same checks, same Trace as sf::forward (transformer/forward.h): every traced tensor agrees with the
// CPU's within 1e-4 (tests/cuda/test_cuda.cpp, label cuda). Built only with nvcc (STEPFORMER_CUDA=AUTO/ON); a
// build without it links backend/no_cuda/, whose constructor throws ErrorKind::Unsupported.
//
// Decoding with KV caches in GPU memory is CudaDecoding's (below): a Decoder (decode/decoder.h) whose steps
// compute there (Decoder::compute_on) decodes greedy, sampled and beam search on the GPU. greedy() here recomputes
// the decoder on the whole prefix each step: it takes painted masks, which the caches do not. The guided
// re-decoding after an intervention (decode/guided.h) checks its guesses there too, a chunk of tokens a pass.
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
#include "train/batching.h"
#include "train/loss.h"
#include "train/optimizer.h"
#include "transformer/layers.h"
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

  // [SECTION] training (backend/cuda/cuda_training.cpp): the CPU trainer's step (train/trainer.cpp) on the GPU,
  // every number the same within float rounding, dropout masks included (made as transformer/layers.h makes them).
  // Gradients and Adam's moments live in GPU memory beside the weights; the weights come back to the host only when
  // asked (download_weights).
  // Allocates them: zeros, or the moments of a resumed run (shaped as the weights) at its step count.
  void start_training(const AdamSettings& adam, const ModelWeights* first_moment = nullptr,
                      const ModelWeights* second_moment = nullptr, int64_t adam_steps = 0);
  // One step on a padded batch (train/batching.h): forward with dropout, label-smoothed loss, backward, tied
  // gradients (train/init.h), clipping to global norm clip_norm (<= 0: none), Adam at lr. ErrorKind::Value when the
  // loss is not finite, before anything is updated. grad_norm, when given, gets the norm before clipping.
  LossResult train_step(const Batch& batch, const DropoutSettings& dropout, float smoothing, float clip_norm, float lr,
                        double* grad_norm = nullptr);
  // Copies into host weights shaped as the model's (drops their packed copies, which would go stale).
  void download_weights(ModelWeights& weights) const;
  void download_gradients(ModelWeights& grads) const;  // the last step's, after clipping
  void download_adam(ModelWeights& first_moment, ModelWeights& second_moment) const;
  int64_t adam_steps() const;

  std::string device_name() const;  // "NVIDIA H100 80GB HBM3"

  // The matrix products on TF32 tensor cores (GPUs from sm_80: inputs rounded to a 10-bit mantissa, FP32 sums)
  // instead of FP32. Off by default; the CLI's --tf32. tests/cuda states its error against FP32.
  void set_tf32(bool on);

  struct Impl;  // the GPU side (backend/cuda/device_model.h), opaque here

 private:
  friend class CudaDecoding;
  std::unique_ptr<Impl> impl_;
};

// Decoding one source sentence with key/value caches in GPU memory (backend/cuda/cuda_decoding.cpp): the CPU's
// decode_steps (decode/kv_cache.h) on the GPU. The encoder pass, and every decoder layer's cross-attention keys
// and values, are computed once, at construction; then each step() feeds one token to each of N caches (a beam's
// hypotheses) as one pass of N rows and copies back only their logits (N, Vt); chunk() feeds k tokens to one
// cache in one pass (k rows, each meeting the cache's rows up to its own).
//   cache   one hypothesis' self-attention keys and values, layer by layer: (max_positions, C) each, filled up to
//           its length; a handle (an int) names it
// Interventions: heads switched off, positions off, padding. A painted mask or the causal mask off (no exact cache
// on the CPU either) is ErrorKind::Unsupported, as is a CUDA failure (out of memory included): the caller goes
// on on the CPU. `model` must outlive this.
class CudaDecoding {
 public:
  CudaDecoding(CudaModel& model, const std::vector<int>& src_ids, const Interventions& interventions);
  ~CudaDecoding();
  CudaDecoding(const CudaDecoding&) = delete;
  CudaDecoding& operator=(const CudaDecoding&) = delete;

  int new_cache();               // empty
  int copy_cache(int from);      // holding what `from` holds
  void release_cache(int cache);
  void truncate_cache(int cache, int length);  // keeps the first `length` rows (length <= its length)
  int cache_length(int cache) const;
  // tokens[i] (N) continues cache caches[i] at position cache_length(caches[i]) (distinct caches). Returns the
  // logits (N, Vt), row i predicting the token after tokens[i]; the same numbers as the CPU's decode_steps within
  // float rounding.
  Mat step(const std::vector<int>& caches, const std::vector<int>& tokens);
  // k tokens continuing one cache in one pass (the CPU's decode_chunk, every row out): returns the logits (k, Vt),
  // row i predicting the token after tokens[i]; the cache then holds its rows and theirs. A guided re-decoding's
  // check of a guessed stretch (decode/guided.h).
  Mat chunk(int cache, const std::vector<int>& tokens);

  struct State;  // backend/cuda/cuda_decoding.cpp

 private:
  std::unique_ptr<State> state_;
};

}  // namespace sf
