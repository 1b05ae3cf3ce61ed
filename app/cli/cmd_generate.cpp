// stepformer-cli generate MODEL PROMPT [--max-new N] [--greedy | --beam K | sampling options] [--ids]: a decoder-only
// model (our GPT, a GPT-2 folder) continues PROMPT token by token with the same Decoder the app steps through
// (decode/decoder.h), and the continuation is printed: as text, or with --ids as the generated ids.
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "cli/options.h"
#include "decode/decoder.h"
#include "util/error.h"
#include "util/printable.h"

namespace sf::cli {

namespace {

const char* kHelp =
    "usage: stepformer-cli generate MODEL PROMPT [--max-new N] [--greedy | --beam K |\n"
    "                               --temperature T --top-k K --top-p P --seed S] [--ids] [--prompt-ids]\n\n"
    "A decoder-only model (a GPT: our own, or a Hugging Face GPT-2 folder) continues PROMPT one token at a time\n"
    "and the continuation is printed (the prompt is not repeated; generation stops at the end token, which is not\n"
    "printed, or after --max-new tokens).\n"
    "  --max-new N      at most N new tokens (default 40; at most the positions the prompt leaves)\n"
    "  --greedy         the most likely token each step (the default)\n"
    "  --beam K         beam search of width K (1 to 64), scored as the model's authors decode (GPT-2:\n"
    "                   transformers' generate())\n"
    "  --temperature T  sample from softmax(logits / T) (T in (0, 100], default 1), cut by:\n"
    "  --top-k K        the K most likely tokens (0: all, the default)\n"
    "  --top-p P        the fewest most likely tokens whose probability reaches P (in (0, 1], default 1)\n"
    "  --seed S         the sampler's seed (default 0): the same seed gives the same tokens\n"
    "                   (any of these four selects sampling)\n"
    "  --ids            print the generated token ids, space-separated, instead of the text\n"
    "  --prompt-ids     PROMPT is space-separated token ids, read as given\n";

}  // namespace

int run_generate(const Args& args) {
  OptionParser p("generate");
  int max_new = 40, beam = 0, top_k = -1;
  float temperature = -1.0f, top_p = -1.0f;
  uint64_t seed = 0;
  bool greedy = false, ids_out = false, prompt_ids = false, seed_given = false;
  p.value("--max-new", &max_new, 1, 65536);
  p.flag("--greedy", &greedy);
  p.value("--beam", &beam, 1, kMaxBeamWidth);
  p.value("--temperature", &temperature, 1e-6f, 100.0f);
  p.value("--top-k", &top_k, 0, 4'000'000);
  p.value("--top-p", &top_p, 1e-6f, 1.0f);
  p.custom("--seed", [&](const std::string& v) {
    size_t used = 0;
    try {
      seed = std::stoull(v, &used);
    } catch (...) {
      used = 0;
    }
    seed_given = true;
    return used == v.size() && !v.empty() && v[0] != '-' ? std::string() : "--seed needs a whole number >= 0, got '" + v + "'";
  });
  p.flag("--ids", &ids_out);
  p.flag("--prompt-ids", &prompt_ids);
  if (!p.parse(args)) return 2;
  if (p.help_requested() || p.positional().size() != 2) {
    std::fputs(kHelp, p.help_requested() ? stdout : stderr);
    return p.help_requested() ? 0 : 2;
  }
  const bool sampling = temperature > 0.0f || top_k >= 0 || top_p > 0.0f || seed_given;
  if ((greedy ? 1 : 0) + (beam > 0 ? 1 : 0) + (sampling ? 1 : 0) > 1) {
    std::fputs("stepformer-cli generate: choose one of --greedy, --beam and sampling (--temperature, --top-k, --top-p, "
               "--seed)\n", stderr);
    return 2;
  }
  const Model m = load_model_warning("generate", p.positional()[0], /*every_shape=*/true);
  const Config& c = m.config;
  if (c.stacks != ModelStacks::DecoderOnly)
    fail(ErrorKind::Unsupported, "generate",
         std::string("this is a ") + to_string(c.stacks) + " model: generate continues a prompt with a decoder-only "
         "model (a GPT); translate with `stepformer-cli translate`");
  const std::string& text = p.positional()[1];
  const std::vector<int> prompt =
      prompt_ids ? parse_token_ids(text, "generate", "--prompt-ids") : token_ids(encode_text(m, text, Side::Target, /*specials=*/false));

  DecodeOptions options;
  apply_generation_defaults(m.generation, options);  // GPT-2: transformers' beam scoring
  options.strategy = DecodeStrategy::Greedy;
  if (beam > 0) {
    options.strategy = DecodeStrategy::Beam;
    options.beam_width = beam;
  } else if (sampling) {
    options.strategy = DecodeStrategy::Sample;
    if (temperature > 0.0f) options.sampling.temperature = temperature;
    if (top_k >= 0) options.sampling.top_k = top_k;
    if (top_p > 0.0f) options.sampling.top_p = top_p;
    options.seed = seed;
  }
  const int input = static_cast<int>(decoder_only_input(c, prompt).size());
  if (input >= c.max_positions)
    fail(ErrorKind::Input, "generate",
         "the prompt is " + std::to_string(input) + " tokens as the model reads it; the model has " +
             std::to_string(c.max_positions) + " positions, so none is left to generate in: shorten the prompt");
  options.max_length = std::min(max_new, c.max_positions - input);
  if (max_new > options.max_length)
    std::fprintf(stderr, "stepformer-cli generate: the prompt leaves %d of the model's %d positions: at most %d new "
                         "tokens\n", c.max_positions - input, c.max_positions, options.max_length);
  Decoder decoder(c, m.weights, prompt, {}, options);
  decoder.run();
  std::vector<int> generated = decoder.generated();
  if (!generated.empty() && generated.back() == c.eos_id) generated.pop_back();
  if (ids_out) {
    std::string line;
    for (size_t i = 0; i < generated.size(); ++i) {
      if (i > 0) line += ' ';
      line += std::to_string(generated[i]);
    }
    std::printf("%s\n", line.c_str());
    return 0;
  }
  std::vector<std::string> tokens;
  for (const int id : generated) tokens.push_back(m.tgt_vocab.token(id));
  std::printf("%s\n", printable_lines(decode_text(m, tokens, Side::Target)).c_str());
  return 0;
}

}  // namespace sf::cli
