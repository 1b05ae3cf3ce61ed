// The model configuration: everything the forward pass needs to know about a model's shape and variant.
// Stored as JSON under the key "config" in a model file's __metadata__ (keys documented in README.md).
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <cstdint>
#include <string>

namespace sf {

enum class PositionalEncoding { Sinusoidal, Learned };
// Where the sines and cosines of the sinusoidal encoding sit (nn/positional_encoding.h):
//   Interleaved  the paper and the PyTorch tutorials: column 2i holds sin, column 2i+1 cos, of one frequency
//   Halves       Marian (Hugging Face's MarianSinusoidalPositionalEmbedding): columns 0 .. C/2-1 the sines,
//                columns C/2 .. C-1 the cosines, of the same frequencies in the same order
enum class SinusoidLayout { Interleaved, Halves };
enum class EmbeddingScale { SqrtDModel, One };   // token embedding multiplied by sqrt(C) or by 1
enum class NormPlacement { Post, Pre };          // post: x = norm(x + f(x)); pre: x = x + f(norm(x))
// GELU is the exact erf form, as torch.nn.functional.gelu; SiLU ("swish", Marian's) is x * sigmoid(x)
enum class Activation { ReLU, GELU, SiLU };
// How multi-head attention makes its heads (nn/attention.h has the math of both):
//   SplitHeads    the paper: W_q, W_k, W_v (C, C) project each token, head h owns columns h*D .. h*D+D-1,
//                 scores scaled by 1/sqrt(D), a padding mask blocks padded keys, a row with nothing allowed
//                 attends to nothing
//   ReshapeHeads  the study note's "Transformer from scratch" (family from-scratch), quirks included: the
//                 (T, C) input is reshaped to (H, T, D) without a transpose, so head h's row i holds columns
//                 ((h*T + i) % H)*D .. +D of token (h*T + i) / H; one Linear(D, D) without bias for each of
//                 Q, K and V serves every head; scores scaled by 1/sqrt(C); the padding mask blocks padded
//                 queries too (the decoder's self-attention has none); blocked cells are filled with -1e20,
//                 so a row with nothing allowed comes out uniform
enum class AttentionStyle { SplitHeads, ReshapeHeads };

struct Config {
  int d_model = 256;             // C
  int n_heads = 8;               // H (must divide C)
  int n_encoder_layers = 3;
  int n_decoder_layers = 3;
  int d_ff = 512;                // F
  int src_vocab_size = 0;        // Vs
  int tgt_vocab_size = 0;        // Vt
  int max_positions = 256;       // P: longest sequence (source or decoder input) the model accepts
  PositionalEncoding positional_encoding = PositionalEncoding::Sinusoidal;
  SinusoidLayout sinusoid_layout = SinusoidLayout::Interleaved;  // only with sinusoidal positions
  EmbeddingScale embedding_scale = EmbeddingScale::SqrtDModel;
  NormPlacement norm_placement = NormPlacement::Post;
  bool encoder_final_norm = false;  // a LayerNorm after the last encoder layer (nn.Transformer has one)
  bool decoder_final_norm = false;
  Activation activation = Activation::ReLU;
  AttentionStyle attention = AttentionStyle::SplitHeads;
  float layer_norm_eps = 1e-5f;
  bool bias = true;                 // linear layers carry biases
  bool tie_output_embedding = false;  // the output projection reuses the target embedding matrix
  bool share_embeddings = false;      // source and target share one embedding (needs one vocabulary)
  int pad_id = 1;
  int bos_id = 2;     // the decoder's first input token; may equal pad_id (Marian starts the decoder with <pad>:
                      // then the decoder's self-attention has no padding mask, see transformer/forward.h)
  int eos_id = 3;
  int unk_id = 0;

  int head_dim() const { return d_model / n_heads; }  // D = C / H
  // Throws sf::Error(ErrorKind::Config) naming the first value out of range or inconsistent.
  void validate() const;
};

const char* to_string(PositionalEncoding v);  // "sinusoidal" | "learned"
const char* to_string(EmbeddingScale v);      // "sqrt_d_model" | "one"
const char* to_string(NormPlacement v);       // "post" | "pre"
const char* to_string(SinusoidLayout v);      // "interleaved" | "halves"
const char* to_string(Activation v);          // "relu" | "gelu" | "silu"
const char* to_string(AttentionStyle v);      // "split_heads" | "reshape_heads"

// JSON <-> Config. from_json reports unknown enum strings, wrong types and missing keys as ErrorKind::Config;
// keys that are absent take the defaults above except the vocabulary sizes, which are required.
nlohmann::json config_to_json(const Config& config);
Config config_from_json(const nlohmann::json& j);

}  // namespace sf
