// Name tables: for each family of checkpoints, the tensor names it stores and where each lands in ModelWeights
// (the pattern of whisper.cpp's whisper-arch.h). One table serves both directions: load_model copies file
// tensors into the slots, save_model copies the slots out.
//
// The families (the "family" key of a model file's __metadata__) are described one file each in model/families/
// (model/family.h: their origin, shape, tokenizer, the config values they fix and the name of every weight):
// stepformer (our own), pytorch-tutorial, seq2seq-tutorial, from-scratch, marian. docs/model-files.md lists their
// tensor names. LayerNorm gamma/beta are stored as PyTorch's weight/bias in every family.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/weights.h"

namespace sf {

inline constexpr const char* kFamilyStepformer = "stepformer";
inline constexpr const char* kFamilyPytorchTutorial = "pytorch-tutorial";
inline constexpr const char* kFamilySeq2SeqTutorial = "seq2seq-tutorial";
inline constexpr const char* kFamilyFromScratch = "from-scratch";
inline constexpr const char* kFamilyMarian = "marian";
inline constexpr const char* kFamilyGpt2 = "gpt2";
inline constexpr const char* kFamilyBert = "bert";

const std::vector<std::string>& known_families();
bool is_known_family(const std::string& family);
// "stepformer, pytorch-tutorial, seq2seq-tutorial, from-scratch or marian": for messages.
std::string known_families_text();

// The config values a family's naming fixes (e.g. nn.Transformer always has final norms, the seq2seq tutorial
// learns its positions). Throws ErrorKind::Config "[where] family 'x' needs ..." (ErrorKind::Format for an
// unknown family).
void check_family_config(const std::string& family, const Config& config, const std::string& where);

// A tensor the family stores: its name and shape, from the config alone (nothing allocated).
struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  int64_t numel() const;
};
std::vector<TensorSpec> weight_layout(const std::string& family, const Config& config);

// A tensor of the family and the memory in ModelWeights it maps to: `parts` are stacked along dimension 0 to
// form the tensor (one part, or W_q, W_k, W_v for nn.MultiheadAttention's in_proj_weight), row-major; where
// `transposed`, the file holds the transpose of that stack (GPT-2's Conv1D c_attn.weight (C, 3C) =
// [W_q; W_k; W_v]^T) and `shape` is the file's: read_slot and write_slot (below) move values between the two.
template <typename T>
struct WeightSlotT {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<std::span<T>> parts;
  bool transposed = false;
};
using WeightSlot = WeightSlotT<float>;
using ConstWeightSlot = WeightSlotT<const float>;

// The file's values of `slot` (numel of its shape, row-major as stored) put into its parts, and back.
void read_slot(std::span<const float> stored, const WeightSlot& slot);
std::vector<float> stored_values(const ConstWeightSlot& slot);

// Every matrix and vector sized from the config, zero-filled (biases empty when config.bias is false,
// positions empty for sinusoidal encoding, final norms empty when absent).
ModelWeights allocate_weights(const Config& config);

// The slots of `weights` under the family's names. Each member's shape is checked against the config:
// ErrorKind::Shape "[where] weight 'name': expected (r, c), found (r', c')".
std::vector<WeightSlot> weight_slots(const std::string& family, const Config& config, ModelWeights& weights,
                                     const std::string& where = "weight_slots");
std::vector<ConstWeightSlot> weight_slots(const std::string& family, const Config& config,
                                          const ModelWeights& weights, const std::string& where = "weight_slots");

// After loading: copies the shared source embedding to the target embedding (config.share_embeddings) and the
// target embedding to the generator weight (config.tie_output_embedding), as the family did not store them.
void complete_shared_weights(const Config& config, ModelWeights& weights);

}  // namespace sf
