#include "transformer/interventions.h"

#include <charconv>

#include "util/error.h"

namespace sf {

const char* to_string(AttentionKind kind) {
  switch (kind) {
    case AttentionKind::Encoder: return "enc";
    case AttentionKind::Decoder: return "dec";
    case AttentionKind::Cross: return "cross";
  }
  return "?";
}

bool Interventions::head_off(AttentionKind kind, int layer, int head) const {
  for (const HeadRef& h : heads_off)
    if (h.kind == kind && h.layer == layer && h.head == head) return true;
  return false;
}

const CustomMask* Interventions::custom_mask(AttentionKind kind, int layer, int head) const {
  const CustomMask* found = nullptr;
  for (const CustomMask& m : custom_masks)
    if (m.where.kind == kind && m.where.layer == layer && m.where.head == head) found = &m;
  return found;
}

static void check_head(const Config& c, const HeadRef& h, const char* what) {
  // A stack the model lacks has no layers (config.stacks): cross-attention only with both.
  const int layers = h.kind == AttentionKind::Encoder ? c.n_encoder_layers
                     : h.kind == AttentionKind::Cross && !c.has_cross_attention() ? 0
                                                                                   : c.n_decoder_layers;
  if (h.layer < 0 || h.layer >= layers)
    fail(ErrorKind::Input, "interventions",
         std::string(what) + " " + head_ref_text(h) + " names " + to_string(h.kind) + " layer " +
             std::to_string(shown_number(h.layer)) + ", but the model has " + std::to_string(layers) +
             " (numbered from 1)");
  if (h.head < 0 || h.head >= c.n_heads)
    fail(ErrorKind::Input, "interventions",
         std::string(what) + " " + head_ref_text(h) + " names head " + std::to_string(shown_number(h.head)) +
             ", but the model has " + std::to_string(c.n_heads) + " heads a layer (numbered from 1)");
}

void validate_interventions(const Config& config, const Interventions& iv) {
  for (const HeadRef& h : iv.heads_off) check_head(config, h, "head-off");
  for (const CustomMask& m : iv.custom_masks) check_head(config, m.where, "custom mask");
  for (int id : iv.forced_prefix)
    if (id < 0 || id >= config.tgt_vocab_size)
      fail(ErrorKind::Input, "interventions",
           "forced token " + std::to_string(id) + " is outside the target vocabulary (size " +
               std::to_string(config.tgt_vocab_size) + ")");
}

Interventions fit_decoder_masks(const Interventions& iv, int src_length, int tgt_length) {
  Interventions out = iv;
  for (CustomMask& m : out.custom_masks) {
    if (m.where.kind == AttentionKind::Encoder) continue;
    const bool self = m.where.kind == AttentionKind::Decoder;
    const int cols = self ? tgt_length : src_length;
    if (m.blocked.rows() == tgt_length && m.blocked.cols() == cols) continue;
    Mat fitted(tgt_length, cols);  // (T, T) dec or (T, S) cross
    for (int i = 0; i < tgt_length; ++i)
      for (int j = 0; j < cols; ++j)
        fitted(i, j) = i < m.blocked.rows() && j < m.blocked.cols() ? m.blocked(i, j)
                       : self && iv.causal_mask && j > i ? 1.0f
                                                         : 0.0f;
    m.blocked = std::move(fitted);
  }
  return out;
}

namespace {

// "KIND.L.H" with L and H counted from `first` (1: as people number them; 0: indices, inside files).
HeadRef parse_kind_layer_head(const std::string& text, int first) {
  const std::string example = first == 1 ? "enc.1.4: the first encoder layer's fourth head" : "enc.0.3: indices from 0";
  auto bad = [&]() -> HeadRef {
    fail(ErrorKind::Input, "parse_head_ref",
         "'" + text + "' is not KIND.LAYER.HEAD with KIND enc, dec or cross, layers and heads numbered from " +
             std::to_string(first) + " (e.g. " + example + ")");
  };
  const size_t dot1 = text.find('.');
  if (dot1 == std::string::npos) return bad();
  const size_t dot2 = text.find('.', dot1 + 1);
  if (dot2 == std::string::npos) return bad();
  HeadRef h;
  const std::string kind = text.substr(0, dot1);
  if (kind == "enc") h.kind = AttentionKind::Encoder;
  else if (kind == "dec") h.kind = AttentionKind::Decoder;
  else if (kind == "cross") h.kind = AttentionKind::Cross;
  else return bad();
  auto number = [&](size_t from, size_t to, int& out) {
    const char* start = text.data() + from;
    const char* last = text.data() + to;
    auto [ptr, ec] = std::from_chars(start, last, out);
    return start != last && ec == std::errc() && ptr == last;
  };
  if (!number(dot1 + 1, dot2, h.layer) || !number(dot2 + 1, text.size(), h.head)) return bad();
  // Version 0.1 numbered from 0: a 0 where people count from 1 is the old numbering, and the message says so.
  if (h.layer < first || h.head < first)
    fail(ErrorKind::Input, "parse_head_ref",
         first == 1 ? "'" + text + "': layers and heads are numbered from 1, as in the paper (e.g. " + example +
                          "; Stepformer 0.1 counted them from 0)"
                    : "'" + text + "': a negative layer or head index");
  h.layer -= first;
  h.head -= first;
  return h;
}

std::string kind_layer_head(const HeadRef& h, int first) {
  return std::string(to_string(h.kind)) + "." + std::to_string(h.layer + first) + "." + std::to_string(h.head + first);
}

}  // namespace

HeadRef parse_head_ref(const std::string& text) { return parse_kind_layer_head(text, 1); }
std::string head_ref_text(const HeadRef& h) { return kind_layer_head(h, 1); }
HeadRef parse_head_index(const std::string& text) { return parse_kind_layer_head(text, 0); }
std::string head_index_text(const HeadRef& h) { return kind_layer_head(h, 0); }

}  // namespace sf
