// Interventions: what the user changes about a forward pass without touching the weights. Plain data owned
// by the app state (or the CLI); the forward pass reads them, the trace records the ones it ran with.
#pragma once
#include <string>
#include <vector>

#include "model/config.h"
#include "util/tensor.h"

namespace sf {

enum class AttentionKind { Encoder, Decoder, Cross };  // encoder self, decoder (masked) self, cross
const char* to_string(AttentionKind kind);             // "enc" | "dec" | "cross"

// Layers and heads are numbered from 1 wherever a person reads or types them, as the paper numbers its heads
// (head_1 .. head_h): labels, keys, script commands, exports and the CLI. Every index in the code, HeadRef's
// included, counts from 0; shown_number turns one into the number a person sees.
inline int shown_number(int index) { return index + 1; }

struct HeadRef {
  AttentionKind kind = AttentionKind::Encoder;
  int layer = 0;  // index, from 0 (shown as layer + 1)
  int head = 0;   // index, from 0 (shown as head + 1)
  bool operator==(const HeadRef&) const = default;
};

// A mask painted by hand for one head: replaces the computed mask (padding, causal) of that head.
struct CustomMask {
  HeadRef where;
  Mat blocked;  // (Tq, Tk) 1 = blocked, 0 = allowed; must match the sequence lengths of the pass
  bool operator==(const CustomMask& o) const {
    return where == o.where && blocked.rows() == o.blocked.rows() && blocked.cols() == o.blocked.cols() &&
           blocked == o.blocked;
  }
};

struct Interventions {
  std::vector<HeadRef> heads_off;       // these heads' outputs are zeroed before W_o
  bool padding_mask = true;             // block keys that are config.pad_id (source for enc/cross, target for dec)
  bool causal_mask = true;              // decoder self-attention: position i sees positions <= i only
  bool positional_encoding = true;      // false: the positional term is zero in both embeddings
  std::vector<CustomMask> custom_masks; // at most one per head; the last one wins
  std::vector<int> forced_prefix;       // teacher forcing while decoding: the first target tokens (after bos)

  bool head_off(AttentionKind kind, int layer, int head) const;
  const CustomMask* custom_mask(AttentionKind kind, int layer, int head) const;
  bool operator==(const Interventions&) const = default;
};

// Throws sf::Error(ErrorKind::Input) when an intervention names a layer or head the model lacks, or a forced
// token outside the target vocabulary. Mask sizes are checked by the forward pass, which knows the lengths.
void validate_interventions(const Config& config, const Interventions& interventions);

// The interventions of one decoder pass over tgt_length positions, with every decoder-side custom mask (dec,
// cross) fitted to it: cells the mask covers keep their painted value, cells outside it take the computed
// mask (causal for dec: blocked when key > query; allowed for cross), rows and columns past the pass are
// dropped. Row i of a decoder mask concerns query position i whatever follows it, so a mask painted on a full
// pass applies unchanged to every shorter prefix pass while decoding, and to longer ones where it reaches.
Interventions fit_decoder_masks(const Interventions& interventions, int src_length, int tgt_length);

// Parses "enc.L.H", "dec.L.H" or "cross.L.H" with L and H numbered from 1 ("enc.1.4": the first encoder
// layer's fourth head; the CLI's --head-off, the app's --attention, scripts). ErrorKind::Input on a malformed
// string, and on a 0, which names the old numbering from 0 in its message.
HeadRef parse_head_ref(const std::string& text);
// The same head as text: "enc.1.4" for HeadRef{Encoder, 0, 3}.
std::string head_ref_text(const HeadRef& head);
// Inside files (a trace's metadata, the reference fixtures) a head is named by its indices, from 0, as the tensor
// names of the same file are ("enc.0.self_attn.probs", PyTorch's "encoder.layers.0"): "enc.0.3" is
// HeadRef{Encoder, 0, 3}. ErrorKind::Input on a malformed string.
HeadRef parse_head_index(const std::string& text);
std::string head_index_text(const HeadRef& head);

}  // namespace sf
