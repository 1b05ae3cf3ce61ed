// A family of checkpoints described in one place: where its checkpoints come from, the shape they have, the
// tokenizer they need, the config values its naming or arithmetic fixes (embedding scale, positions and their
// layout, activation, norms, head layout), and the name it stores each weight under. Each family is one file in
// model/families/; families() lists them. The name tables (model/name_tables.h: load, save, layout),
// check_family_config and the messages that list the families read these descriptions and nothing else.
//
// Adding a family: its file in model/families/ (a FamilyDescription and its tensor_name function), one line in
// families() (model/family.cpp), its tokenizer where it needs a new one (model/tokenizer.h), its reference in
// tests/reference and its fixtures (docs/architecture.md, "Add a model family").
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/weights.h"

namespace sf {

// Where a weight sits, as for_each_weight (model/weights.h) walks it: what a family's naming reads.
struct WeightPlace {
  WeightBlock block = WeightBlock::SrcEmbedding;
  int layer = -1;
  LayerPart part = LayerPart::None;
  Projection projection = Projection::None;
  WeightParam param = WeightParam::Weight;
  bool stored = true;  // false: shared or tied by the config (complete_shared_weights copies it)
  std::string name;    // our own name ("stepformer" family)
};

// A weight's tensor in a family, and its place in a tensor the family stacks from several of ours
// (nn.MultiheadAttention's in_proj_weight (3C, C) = [W_q; W_k; W_v]).
struct FamilyTensorName {
  std::string name;
  int stack_index = 0, stack_size = 1;
  bool leading_one = false;  // stored with a leading dimension of 1: Marian's final_logits_bias (1, V)
  bool transposed = false;   // stored as the transpose of the stacked matrix: GPT-2's Conv1D weights [in, out]
};

// A config value the family fixes, and how the message names it ("positional_encoding \"sinusoidal\"").
struct ConfigNeed {
  bool (*holds)(const Config&);
  const char* what;
};

struct FamilyDescription {
  const char* name;       // the "family" key of a model file: "pytorch-tutorial"
  const char* origin;     // where its checkpoints come from, in a line
  std::optional<ModelStacks> stacks;  // the shape of its checkpoints; none: every shape (our own files)
  const char* tokenizer;  // "words" (a vocabulary in the file, tokenized as model/tokenizer.h says) | "sentencepiece"
                          // | "byte_bpe" (GPT-2's, model/byte_bpe.h) | "wordpiece" (BERT's, vocab.txt's pieces)
  std::vector<ConfigNeed> needs;
  // The tensor a weight is stored as, or none (not stored: computed, shared, tied, or absent in this family).
  std::optional<FamilyTensorName> (*tensor_name)(const WeightPlace& place, const Config& config);
};

// Every family, "stepformer" first (the order of the messages that list them).
const std::vector<const FamilyDescription*>& families();
// The family of that name, or nullptr.
const FamilyDescription* find_family(const std::string& name);

// The families, one file each (model/families/*.cpp).
const FamilyDescription& stepformer_family();
const FamilyDescription& pytorch_tutorial_family();
const FamilyDescription& seq2seq_tutorial_family();
const FamilyDescription& from_scratch_family();
const FamilyDescription& marian_family();
const FamilyDescription& gpt2_family();
const FamilyDescription& bert_family();

// ".weight" or ".bias": PyTorch's suffix of a parameter (a LayerNorm's gamma is its weight, beta its bias).
const char* param_suffix(WeightParam param);

}  // namespace sf
