// stepformer-cli trace MODEL --src TEXT [--tgt TEXT] [--ids] [--logit-lens] --out FILE.safetensors [interventions]
// Runs one forward pass and writes every traced tensor (docs/trace.md) as F32 into a safetensors file; with
// --logit-lens also each layer's logit lens (explain/logit_lens.h).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "backend/device.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "decode/decoder.h"
#include "explain/logit_lens.h"
#include "io/safetensors.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "transformer/forward.h"
#include "transformer/trace.h"
#include "io/user_files.h"
#include "util/error.h"
#include "util/printable.h"

namespace sf::cli {

namespace {

void print_help() {
  std::printf(
      "usage: stepformer-cli trace MODEL.safetensors --src TEXT [--tgt TEXT] [--ids] --out FILE.safetensors\n"
      "                           [--head-off KIND.L.H]... [--no-causal-mask] [--no-padding-mask]\n"
      "                           [--no-pos-encoding] [--max-length N] [--logit-lens] [--device auto|cpu|cuda]\n"
      "                           [--tf32]\n\n"
      "Runs one forward pass of the model and writes every intermediate it computes (names and shapes in\n"
      "docs/trace.md: src.tok_embed, enc.0.self_attn.probs, ..., logits, probs) as F32 tensors.\n\n"
      "  --src TEXT          the source sentence (tokenized with the model's tokenizer); for a decoder-only model\n"
      "                      (a GPT) the prompt: one pass over it (after <bos> where the model starts with one),\n"
      "                      logits (T, V) at every position; no --tgt, no decoding\n"
      "  --tgt TEXT          the target: the decoder input is <bos> followed by its tokens. Without --tgt the\n"
      "                      model decodes greedily and the final pass (the one that chose the last token) is traced\n"
      "  --ids               --src and --tgt are space-separated token ids, used exactly as given (a pad id is\n"
      "                      padding, masked unless --no-padding-mask)\n"
      "  --out FILE          the safetensors file to write; replaces an existing regular file (keeping its\n"
      "                      permissions), never the model itself, a link, a folder or a device\n"
      "%s"
      "  --max-length N      greedy decoding: at most N generated tokens, 1 to the model's max positions (the\n"
      "                      default)\n"
      "  --logit-lens        also what each layer of the last stack would predict if the model stopped there\n"
      "                      (the final norm where the model has one, then the output head, applied to that\n"
      "                      layer's output): logit_lens.dec.L (T, V) per decoder layer L, or logit_lens.enc.L\n"
      "                      (S, V) per encoder layer of an encoder-only model; the last layer's equals logits\n"
      "  --tf32              on the GPU, matrix products on TF32 tensor cores instead of FP32 (README, GPU)\n"
      "  --device D          auto (the default: the GPU where this build has CUDA and a GPU can take the model),\n"
      "                      cpu, or cuda (an error where no GPU can). A GPU failing mid-run: the CPU computes\n",
      InterventionOptions::help());
}

}  // namespace

int run_trace(const Args& args) {
  std::string model_path, src_text, tgt_text, out_path;
  bool have_src = false, have_tgt = false, as_ids = false;
  int max_length = 0;
  DeviceRequest device = DeviceRequest::Auto;
  bool tf32 = false;
  // (OptionParser: a value given twice, --src a --src b, is refused; --head-off may come once per head)
  OptionParser p("trace");
  p.value("--src", &src_text, &have_src);
  p.value("--tgt", &tgt_text, &have_tgt);
  p.value("--out", &out_path);
  p.flag("--ids", &as_ids);
  InterventionOptions intervention_options;
  intervention_options.add_to(p);
  p.device("--device", &device);
  p.flag("--tf32", &tf32);
  p.value("--max-length", &max_length, 1, 1000000);
  bool with_lens = false;
  p.flag("--logit-lens", &with_lens);
  if (!p.parse(args)) return 2;
  if (p.help_requested()) {
    print_help();
    return 0;
  }
  const Interventions iv = intervention_options.result();
  if (p.positional().size() > 1) {
    std::fprintf(stderr, "stepformer-cli trace: one model file at a time\n");
    return 2;
  }
  if (!p.positional().empty()) model_path = p.positional()[0];
  if (model_path.empty() || !have_src || out_path.empty()) {
    print_help();
    return 2;
  }

  const WriteRules out_rules{.replace = true, .inputs = {model_path}, .allowed_folder = ""};
  if (const std::string problem = check_output_path(out_path, out_rules); !problem.empty())
    fail(ErrorKind::File, "trace", problem);
  if (!as_ids) require_words(src_text, "trace");
  const Model m = load_model_warning("trace", model_path, /*every_shape=*/true);
  const Config& c = m.config;
  const bool one_stack = c.stacks != ModelStacks::EncoderDecoder;  // a GPT reads its prompt, a BERT its sentence
  if (one_stack && have_tgt)
    fail(ErrorKind::Input, "trace", std::string("this is a ") + to_string(c.stacks) + " model: it reads one text, "
                                    "given with --src; --tgt is for translation models");
  if (max_length > c.max_positions)
    fail(ErrorKind::Input, "trace", "--max-length " + std::to_string(max_length) + " is more than the model's " +
                                        std::to_string(c.max_positions) + " positions");
  std::vector<int> src, tgt;
  if (c.stacks == ModelStacks::DecoderOnly) {  // the prompt is the decoder's input: one traced pass over it
    tgt = as_ids ? parse_token_ids(src_text, "trace", "--src (--ids given)")
                 : decoder_only_input(c, token_ids(encode_text(m, src_text, Side::Target, /*specials=*/false)));
    have_tgt = true;
  } else if (c.stacks == ModelStacks::EncoderOnly) {
    src = as_ids ? parse_token_ids(src_text, "trace", "--src (--ids given)") : token_ids(encode_text(m, src_text, Side::Source));
    have_tgt = true;  // (nothing to decode: the one pass is the trace)
  } else if (as_ids) {
    src = parse_token_ids(src_text, "trace", "--src (--ids given)");
    if (have_tgt) tgt = parse_token_ids(tgt_text, "trace", "--tgt (--ids given)");
  } else {
    src = token_ids(encode_text(m, src_text, Side::Source));
    if (have_tgt) {
      tgt = {c.bos_id};
      for (int id : token_ids(encode_text(m, tgt_text, Side::Target, /*specials=*/false))) tgt.push_back(id);
    }
  }

  Trace trace;
  DecodeOptions options;
  options.max_length = max_length;
  const bool on_gpu = run_on_gpu("trace", device, m, [&](CudaModel& gpu) {
    if (!have_tgt && why_decoding_stays_on_the_cpu(c, iv, options).empty()) {
      // Greedy decoding with KV caches in GPU memory, then the traced pass that chose the last token there.
      Decoder decoder(c, m.weights, src, iv, options);
      decoder.compute_on(gpu);
      decoder.run();
      trace = decoder.trace();
      return;
    }
    if (!have_tgt) {  // painted masks, the causal mask off: each step a pass over the whole prefix
      // The pass that chose the last token: bos and every generated token but the last.
      const std::vector<int> generated = gpu.greedy(src, iv, max_length);
      tgt = {c.bos_id};
      tgt.insert(tgt.end(), generated.begin(), generated.end() - 1);
    }
    gpu.forward(src, tgt, iv, trace);
  }, tf32);
  if (!on_gpu && have_tgt) {
    trace = forward(c, m.weights, src, tgt, iv);
  } else if (!on_gpu) {
    Decoder decoder(c, m.weights, src, iv, options);
    decoder.run();
    trace = decoder.trace();
  }

  const std::vector<NamedTensor> named = trace_tensors(trace);
  std::vector<float> src_ids(trace.src.ids.begin(), trace.src.ids.end());
  std::vector<float> tgt_ids(trace.tgt.ids.begin(), trace.tgt.ids.end());
  std::vector<TensorToWrite> tensors;
  tensors.push_back({"src.ids", {static_cast<int64_t>(src_ids.size())}, src_ids});
  tensors.push_back({"tgt.ids", {static_cast<int64_t>(tgt_ids.size())}, tgt_ids});
  for (const NamedTensor& t : named) tensors.push_back({t.name, t.tensor.shape, t.tensor.data});
  // (on the CPU from the trace, which holds every layer's output: a GPU's trace comes back whole)
  const LogitLens lens = with_lens ? logit_lens(c, m.weights, trace) : LogitLens{};
  for (size_t l = 0; l < lens.logits.size(); ++l) {
    const Mat& x = lens.logits[l];  // (rows, V), row-major as the file stores it
    tensors.push_back({logit_lens_name(lens.stack, static_cast<int>(l)), {x.rows(), x.cols()},
                       std::span<const float>(x.data(), static_cast<size_t>(x.size()))});
  }

  auto tokens = [](const Vocabulary& v, const std::vector<int>& ids) {
    nlohmann::json j = nlohmann::json::array();
    for (int id : ids) j.push_back(id >= 0 && id < v.size() ? v.token(id) : std::string("?"));
    return j;
  };
  const std::map<std::string, std::string> metadata = {
      {"format", "stepformer-trace"},
      {"model", model_path},
      {"config", config_to_json(c).dump()},
      {"src_ids", nlohmann::json(trace.src.ids).dump()},
      {"tgt_ids", nlohmann::json(trace.tgt.ids).dump()},
      {"src_tokens", tokens(m.src_vocab, trace.src.ids).dump()},
      {"tgt_tokens", tokens(m.tgt_vocab, trace.tgt.ids).dump()},
      {"shape", to_string(c.stacks)},
      {"decoded", have_tgt ? "false" : "true"},
      {"interventions", interventions_metadata(iv)}};
  write_safetensors(out_path, tensors, metadata, DType::F32, out_rules);
  std::printf("wrote %zu tensors (S %zu, T %zu) to %s\n", tensors.size() - 2, trace.src.ids.size(), trace.tgt.ids.size(),
              out_path.c_str());
  return 0;
}

}  // namespace sf::cli
