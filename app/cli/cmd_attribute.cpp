// stepformer-cli attribute MODEL --src TEXT [--tgt TEXT] [--ids] [--method gxi|ig|rollout] [--steps N]
//                           --out FILE.safetensors [interventions]
// How much each input token moved each predicted token (explain/attribution.h), for a whole sentence: one row per
// prediction, written as a safetensors file (docs/cli.md has the layout).
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "cli/options.h"
#include "decode/decoder.h"
#include "explain/attribution.h"
#include "io/safetensors.h"
#include "io/user_files.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "transformer/forward.h"
#include "util/error.h"

namespace sf::cli {

namespace {

void print_help() {
  std::printf(
      "usage: stepformer-cli attribute MODEL.safetensors --src TEXT [--tgt TEXT] [--ids] --out FILE.safetensors\n"
      "                               [--method gxi|ig|rollout] [--steps N] [--max-length N]\n"
      "                               [--head-off KIND.L.H]... [--no-causal-mask] [--no-padding-mask]\n"
      "                               [--no-pos-encoding]\n\n"
      "How much each input token moved each predicted token. For each prediction, f = ln p(the token) and each\n"
      "input token i is scored by its embedding x_i as the model uses it (after the embedding scale, before the\n"
      "position is added):\n"
      "  gxi      gradient x input: sum_c x_ic df/dx_ic (the core's own backward)\n"
      "  ig       integrated gradients from the all-zero embeddings, N steps (right Riemann sum); the scores add up\n"
      "           to about f - f_baseline (completeness)\n"
      "  rollout  attention rollout (Abnar & Zuidema): the attention maps multiplied through the layers, half of\n"
      "           each layer kept for the residual stream; a share, not a signed effect (docs/trace.md)\n\n"
      "A translator's target sequence of T tokens (start token first, end token last) gives T-1 predictions: row t\n"
      "scores token t+1, read from the S source tokens and the decoder's inputs 0..T-2 (those after t are 0:\n"
      "the row cannot read them). Writes:\n"
      "  attribution (T-1, S + T-1)   row t: the S source tokens, then the T-1 decoder inputs\n"
      "  f (T-1)                      ln p(token t+1) at row t\n"
      "  f_baseline (T-1)             ig only: f with every token embedding 0\n"
      "  src.ids (S), tgt.ids (T)     the sequences as read\n"
      "and in the metadata the method, the steps, the tokens and the interventions.\n"
      "A decoder-only model (a GPT) reads --src as its prompt (after <bos> where it starts with one), then --tgt\n"
      "(text or ids) as the continuation to score, or without --tgt its own greedy continuation: S = 0. An\n"
      "encoder-only model (a BERT) reads --src alone: row s scores the model's likeliest token at position s from\n"
      "the S tokens: attribution (S, S).\n\n"
      "  --src TEXT          the source sentence (tokenized with the model's tokenizer), or a GPT's prompt\n"
      "  --tgt TEXT          the target: start token, its tokens, end token. Without --tgt the model's greedy\n"
      "                      translation (or continuation) is the target\n"
      "  --ids               --src and --tgt are space-separated token ids, used exactly as given: --tgt the whole\n"
      "                      target sequence as the model reads and writes it, start token first, end token last\n"
      "  --method M          gxi (the default), ig or rollout\n"
      "  --steps N           integrated gradients' steps, 1 to %d (default 32)\n"
      "  --max-length N      greedy decoding without --tgt: at most N generated tokens (default: the model's\n"
      "                      positions for a translator, 20 for a GPT)\n"
      "  --out FILE          the safetensors file to write; replaces an existing regular file (keeping its\n"
      "                      permissions), never the model itself, a link, a folder or a device\n"
      "%s",
      kMaxIntegratedGradientSteps, InterventionOptions::help());
}

// The model's greedy output after the start tokens (src: a translator's source; a GPT's prompt), cut at
// max_length; the end token kept where it ended there.
std::vector<int> greedy(const Model& m, const std::vector<int>& src, const Interventions& iv, int max_length) {
  DecodeOptions options;
  options.strategy = DecodeStrategy::Greedy;
  options.max_length = max_length;
  Decoder decoder(m.config, m.weights, src, iv, options);
  decoder.run();
  return decoder.generated();
}

}  // namespace

int run_attribute(const Args& args) {
  std::string src_text, tgt_text, out_path, method_name = "gxi";
  bool have_src = false, have_tgt = false, as_ids = false;
  int steps = 32, max_length = 0;
  OptionParser p("attribute");
  p.value("--src", &src_text, &have_src);
  p.value("--tgt", &tgt_text, &have_tgt);
  p.value("--out", &out_path);
  p.flag("--ids", &as_ids);
  p.value("--method", &method_name);
  p.value("--steps", &steps, 1, kMaxIntegratedGradientSteps);
  p.value("--max-length", &max_length, 1, 1000000);
  InterventionOptions interventions;
  interventions.add_to(p);
  if (!p.parse(args)) return 2;
  if (p.help_requested()) {
    print_help();
    return 0;
  }
  if (p.positional().size() != 1 || !have_src || out_path.empty()) {
    print_help();
    return 2;
  }
  const std::string model_path = p.positional()[0];
  const AttributionMethod method = parse_attribution_method(method_name);
  const Interventions iv = interventions.result();
  const WriteRules out_rules{.replace = true, .inputs = {model_path}, .allowed_folder = ""};
  if (const std::string problem = check_output_path(out_path, out_rules); !problem.empty())
    fail(ErrorKind::File, "attribute", problem);
  if (!as_ids) require_words(src_text, "attribute");
  const Model m = load_model_warning("attribute", model_path, /*every_shape=*/true);
  const Config& c = m.config;
  if (max_length > c.max_positions)
    fail(ErrorKind::Input, "attribute", "--max-length " + std::to_string(max_length) + " is more than the model's " +
                                            std::to_string(c.max_positions) + " positions");
  auto ids_of = [&](const std::string& text, const char* what, Side side, bool specials) {
    return as_ids ? parse_token_ids(text, "attribute", what) : token_ids(encode_text(m, text, side, specials));
  };

  // The sequences read: src (S), and the whole target sequence (T) whose tokens 1.. are scored.
  std::vector<int> src, sequence, scored;
  std::vector<int> decoder_inputs;  // sequence[0 .. T-2]
  switch (c.stacks) {
    case ModelStacks::EncoderDecoder:
      src = ids_of(src_text, "--src (--ids given)", Side::Source, true);
      if (have_tgt && as_ids) {
        sequence = parse_token_ids(tgt_text, "attribute", "--tgt (--ids given)");
      } else if (have_tgt) {
        sequence = {c.bos_id};
        for (int id : token_ids(encode_text(m, tgt_text, Side::Target, /*specials=*/false))) sequence.push_back(id);
        sequence.push_back(c.eos_id);
      } else {
        sequence = {c.bos_id};
        for (int id : greedy(m, src, iv, max_length)) sequence.push_back(id);
      }
      break;
    case ModelStacks::DecoderOnly: {
      const std::vector<int> prompt = as_ids ? parse_token_ids(src_text, "attribute", "--src (--ids given)")
                                             : token_ids(encode_text(m, src_text, Side::Target, false));
      sequence = as_ids ? prompt : decoder_only_input(c, prompt);
      if (have_tgt) {
        for (int id : ids_of(tgt_text, "--tgt (--ids given)", Side::Target, false)) sequence.push_back(id);
      } else {
        const int room = c.max_positions - static_cast<int>(sequence.size());
        if (room < 1)
          fail(ErrorKind::Input, "attribute", "the prompt fills the model's " + std::to_string(c.max_positions) +
                                                  " positions: nothing is left to generate");
        for (int id : greedy(m, prompt, iv, std::min(max_length > 0 ? max_length : 20, room))) sequence.push_back(id);
      }
      break;
    }
    case ModelStacks::EncoderOnly:
      if (have_tgt)
        fail(ErrorKind::Input, "attribute", "this is an encoder_only model: it reads one text, given with --src; "
                                            "each position scores the model's likeliest token there");
      src = ids_of(src_text, "--src (--ids given)", Side::Source, true);
      break;
  }
  if (c.has_decoder()) {
    if (sequence.size() < 2)
      fail(ErrorKind::Input, "attribute", "the target sequence has " + std::to_string(sequence.size()) +
                                              " token: nothing after the first to score (--tgt needs a start token "
                                              "and at least one more)");
    decoder_inputs.assign(sequence.begin(), sequence.end() - 1);
    scored.assign(sequence.begin() + 1, sequence.end());
  } else {  // each position's likeliest token, from one pass
    const Trace t = forward(c, m.weights, src, {}, iv);
    for (Eigen::Index r = 0; r < t.logits.rows(); ++r) {
      Eigen::Index best = 0;
      t.logits.row(r).maxCoeff(&best);
      scored.push_back(static_cast<int>(best));
    }
  }

  const AttributionMap a = attribute_rows(c, m.weights, src, decoder_inputs, iv, scored, method, steps);
  std::vector<float> f(a.f.begin(), a.f.end()), f_baseline(a.f_baseline.begin(), a.f_baseline.end());
  const std::vector<float> src_ids(src.begin(), src.end()), tgt_ids(sequence.begin(), sequence.end());
  std::vector<TensorToWrite> tensors;
  tensors.push_back({"attribution", {a.values.rows(), a.values.cols()},
                     std::span<const float>(a.values.data(), static_cast<size_t>(a.values.size()))});
  tensors.push_back({"f", {static_cast<int64_t>(f.size())}, f});
  if (method == AttributionMethod::IntegratedGradients)
    tensors.push_back({"f_baseline", {static_cast<int64_t>(f_baseline.size())}, f_baseline});
  if (!src_ids.empty()) tensors.push_back({"src.ids", {static_cast<int64_t>(src_ids.size())}, src_ids});
  if (!tgt_ids.empty()) tensors.push_back({"tgt.ids", {static_cast<int64_t>(tgt_ids.size())}, tgt_ids});

  auto tokens = [](const Vocabulary& v, const std::vector<int>& ids) {
    nlohmann::json j = nlohmann::json::array();
    for (int id : ids) j.push_back(id >= 0 && id < v.size() ? v.token(id) : std::string("?"));
    return j;
  };
  const Vocabulary& out_vocab = c.has_decoder() ? m.tgt_vocab : m.src_vocab;
  const std::map<std::string, std::string> metadata = {
      {"format", "stepformer-attribution"},
      {"model", model_path},
      {"shape", to_string(c.stacks)},
      {"method", to_string(method)},
      {"steps", method == AttributionMethod::IntegratedGradients ? std::to_string(steps) : std::string("")},
      {"columns", "source tokens (" + std::to_string(a.source_length) + "), then decoder inputs (" +
                      std::to_string(a.target_length) + ")"},
      {"src_tokens", tokens(m.src_vocab, src).dump()},
      {"tgt_tokens", tokens(m.tgt_vocab, sequence).dump()},
      {"scored_tokens", tokens(out_vocab, scored).dump()},
      {"decoded", c.has_decoder() && !have_tgt ? "true" : "false"},
      {"interventions", interventions_metadata(iv)}};
  write_safetensors(out_path, tensors, metadata, DType::F32, out_rules);
  double worst_gap = 0;
  for (int r = 0; r < a.rows(); ++r)
    if (method == AttributionMethod::IntegratedGradients)
      worst_gap = std::max(worst_gap, std::abs(static_cast<double>(a.values.row(r).cast<double>().sum()) -
                                               (a.f[static_cast<size_t>(r)] - a.f_baseline[static_cast<size_t>(r)])));
  std::printf("wrote attribution (%d, %d) by %s to %s\n", a.rows(), static_cast<int>(a.values.cols()),
              to_string(method), out_path.c_str());
  if (method == AttributionMethod::IntegratedGradients)
    std::printf("completeness: the largest |sum of a row - (f - f_baseline)| is %.4f (%d steps)\n", worst_gap, steps);
  return 0;
}

}  // namespace sf::cli
