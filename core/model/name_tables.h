// Name tables: for each family of checkpoints, the tensor names it stores and where each lands in ModelWeights
// (the pattern of whisper.cpp's whisper-arch.h). One table serves both directions: load_model copies file
// tensors into the slots, save_model copies the slots out.
//
// Families (the "family" key of a model file's __metadata__):
//   stepformer        our own naming, written by save_model and the trainer:
//                       src_embedding.weight, tgt_embedding.weight, src_positions.weight, tgt_positions.weight,
//                       encoder.layers.N.{self_attn.{q,k,v,out},ffn.{fc1,fc2}}.{weight,bias},
//                       encoder.layers.N.{self_attn_norm,ffn_norm}.{weight,bias},
//                       decoder.layers.N.{self_attn,cross_attn}.{q,k,v,out}.{weight,bias}, decoder.layers.N.ffn...,
//                       decoder.layers.N.{self_attn_norm,cross_attn_norm,ffn_norm}.*, encoder.norm.*, decoder.norm.*,
//                       generator.weight, generator.bias
//   pytorch-tutorial  PyTorch's "Language Translation with nn.Transformer" tutorial (Seq2SeqTransformer):
//                       src_tok_emb.embedding.weight, tgt_tok_emb.embedding.weight, generator.{weight,bias},
//                       transformer.encoder.layers.N.self_attn.{in_proj_weight,in_proj_bias,out_proj.*},
//                       transformer.encoder.layers.N.{linear1,linear2,norm1,norm2}.*, transformer.encoder.norm.*,
//                       transformer.decoder.layers.N.{self_attn,multihead_attn}.*, ...{linear1,linear2,norm1,norm2,norm3}.*,
//                       transformer.decoder.norm.*           (in_proj_weight (3C, C) stacks W_q; W_k; W_v)
//   seq2seq-tutorial  the "Attention is All You Need" notebook of the popular PyTorch seq2seq tutorials:
//                       encoder.tok_embedding.weight, encoder.pos_embedding.weight,
//                       encoder.layers.N.self_attention.{fc_q,fc_k,fc_v,fc_o}.*, encoder.layers.N.self_attn_layer_norm.*,
//                       encoder.layers.N.positionwise_feedforward.{fc_1,fc_2}.*, encoder.layers.N.ff_layer_norm.*,
//                       decoder.tok_embedding.weight, decoder.pos_embedding.weight, decoder.layers.N.self_attention.*,
//                       decoder.layers.N.{self_attn_layer_norm,encoder_attention,enc_attn_layer_norm}.*,
//                       decoder.layers.N.{positionwise_feedforward,ff_layer_norm}.*, decoder.fc_out.{weight,bias}
//   from-scratch      the study notes' "Transformer from scratch" (../shared/seeds/001_*.txt), its state_dict:
//                       Encoder.word_embedding.weight, Encoder.layers.N.attention.{query,key,value}.weight (D, D),
//                       Encoder.layers.N.attention.fc_out.*, Encoder.layers.N.{norm1,norm2}.*,
//                       Encoder.layers.N.feed_forawrd.{0,2}.* (the note's spelling), Decoder.word_embedding.weight,
//                       Decoder.layers.N.{attention,norm}.*, Decoder.layers.N.encoder_block.{attention,norm1,norm2,
//                       feed_forawrd}.*, fc_out.*           (config.attention reshape_heads: see config.h)
//   marian            Hugging Face's MarianMTModel (opus-mt; model/hf_marian.h reads its folder):
//                       model.shared.weight (one vocabulary) or model.{encoder,decoder}.embed_tokens.weight,
//                       model.{encoder,decoder}.layers.N.self_attn.{q,k,v,out}_proj.*, ...self_attn_layer_norm.*,
//                       model.decoder.layers.N.encoder_attn.{q,k,v,out}_proj.*, ...encoder_attn_layer_norm.*,
//                       ...fc1.*, ...fc2.*, ...final_layer_norm.*, final_logits_bias (1, V) (the output's bias;
//                       lm_head.weight only when not tied)       (positions computed: sinusoid_layout halves)
// LayerNorm gamma/beta are stored as PyTorch's weight/bias in every family.
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
// form the tensor (one part, or W_q, W_k, W_v for nn.MultiheadAttention's in_proj_weight), row-major.
template <typename T>
struct WeightSlotT {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<std::span<T>> parts;
};
using WeightSlot = WeightSlotT<float>;
using ConstWeightSlot = WeightSlotT<const float>;

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
