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
// GELU is the exact erf form, as torch.nn.functional.gelu; SiLU ("swish", Marian's) is x * sigmoid(x);
// GELUTanh is GPT-2's "gelu_new", the tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
enum class Activation { ReLU, GELU, SiLU, GELUTanh };
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
// Which stacks a model has (the three shapes of Transformer every course teaches):
//   EncoderDecoder  the paper: the encoder reads the source, the decoder (causal self-attention, then
//                   cross-attention to the encoder's output, then the feed-forward) predicts the target
//   DecoderOnly     GPT: one decoder stack without cross-attention (self-attention, then the feed-forward),
//                   predicting the next token of a prompt; no source, no src_* weights
//   EncoderOnly     BERT: one encoder stack (bidirectional self-attention), an output for every token it reads;
//                   no target, no tgt_* weights, the output head over the source vocabulary
enum class ModelStacks { EncoderDecoder, DecoderOnly, EncoderOnly };
// What sits on top of the last stack, turning its (N, C) output into scores over the vocabulary:
//   Linear    logits = h W^T (+ b with output_bias): the paper's generator
//   MaskedLM  BERT's BertLMPredictionHead (encoder_only): a transform, then the generator over its output:
//               t = LN(act(h W_d^T + b_d))     W_d (C, C), act the model's activation, LN with layer_norm_eps
//               logits = t W^T (+ b)          W the generator (BERT: tied to the word embedding, its own bias (V))
enum class OutputHead { Linear, MaskedLM };

struct Config {
  ModelStacks stacks = ModelStacks::EncoderDecoder;
  int d_model = 256;             // C
  int n_heads = 8;               // H (must divide C)
  int n_encoder_layers = 3;      // 0 exactly when the model has no encoder (DecoderOnly)
  int n_decoder_layers = 3;      // 0 exactly when the model has no decoder (EncoderOnly)
  int d_ff = 512;                // F
  int src_vocab_size = 0;        // Vs (0 for DecoderOnly)
  int tgt_vocab_size = 0;        // Vt (0 for EncoderOnly)
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
  OutputHead output_head = OutputHead::Linear;
  bool output_bias = true;            // the output projection carries a bias (only where `bias` is on too; a file
                                      // that does not say takes `bias`'s value)
  bool tie_output_embedding = false;  // the output projection reuses the embedding matrix of the last stack's
                                      // input (the target's; EncoderOnly: the source's)
  bool share_embeddings = false;      // source and target share one embedding (needs one vocabulary)
  int pad_id = 1;
  int bos_id = 2;     // the decoder's first input token; may equal pad_id (Marian starts the decoder with <pad>:
                      // then the decoder's self-attention has no padding mask, see transformer/forward.h)
  int eos_id = 3;
  int unk_id = 0;
  // A decoder-only model's input: <bos> then the prompt (our own GPT, trained on captions that start with <bos>),
  // or the prompt as it is (GPT-2: its tokenizer adds nothing; an empty prompt starts from <|endoftext|>, bos_id).
  bool starts_with_bos = true;
  // The token a masked language model reads in place of a word it is asked to fill in ([MASK]); -1 where the
  // model has none (translators, GPT). Only an encoder_only model may have one.
  int mask_id = -1;
  // BERT's token-type ("segment") embeddings: a table of type_vocab_size rows added to every source token's
  // embedding; 0 where the model has none. Stepformer reads one text at a time, so every token is of type 0 (row 0
  // is added to each; BERT's second segment, type 1, is never fed). Only an encoder_only model may have one.
  int type_vocab_size = 0;
  // A LayerNorm over the source embedding sum, BERT's embeddings.LayerNorm (eps layer_norm_eps): the encoder's
  // input is LN(tok_embed + pos + type_embed) rather than the sum itself. Only encoder_only.
  bool embedding_norm = false;

  int head_dim() const { return d_model / n_heads; }  // D = C / H
  bool has_encoder() const { return stacks != ModelStacks::DecoderOnly; }
  bool has_decoder() const { return stacks != ModelStacks::EncoderOnly; }
  // The decoder's layers read an encoder's output (cross-attention): only in the encoder-decoder shape.
  bool has_mask_token() const { return mask_id >= 0; }
  bool has_cross_attention() const { return stacks == ModelStacks::EncoderDecoder; }
  // The vocabulary the output head scores: the target's, or the source's for an encoder-only model.
  int output_vocab_size() const { return has_decoder() ? tgt_vocab_size : src_vocab_size; }
  // Throws sf::Error(ErrorKind::Config) naming the first value out of range or inconsistent.
  void validate() const;
};

// Throws ErrorKind::Unsupported, naming `what` and the model's shape, unless it is an encoder-decoder model: for the
// parts that show or translate with one (the app's views, the CLI's translate, eval and trace) until they learn the
// other shapes. The core's passes, decoding and training take every shape.
void require_encoder_decoder(const Config& config, const std::string& what);

const char* to_string(PositionalEncoding v);  // "sinusoidal" | "learned"
const char* to_string(EmbeddingScale v);      // "sqrt_d_model" | "one"
const char* to_string(NormPlacement v);       // "post" | "pre"
const char* to_string(SinusoidLayout v);      // "interleaved" | "halves"
const char* to_string(Activation v);          // "relu" | "gelu" | "silu" | "gelu_tanh"
const char* to_string(AttentionStyle v);      // "split_heads" | "reshape_heads"
const char* to_string(ModelStacks v);         // "encoder_decoder" | "decoder_only" | "encoder_only"
const char* to_string(OutputHead v);          // "linear" | "masked_lm"

// JSON <-> Config. from_json reports unknown enum strings, wrong types and missing keys as ErrorKind::Config;
// keys that are absent take the defaults above except the vocabulary sizes, which are required.
nlohmann::json config_to_json(const Config& config);
Config config_from_json(const nlohmann::json& j);

}  // namespace sf
