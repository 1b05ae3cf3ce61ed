// stepformer-cli fill-mask MODEL "TEXT with [MASK]" [--top K]: an encoder-only masked language model (one trained
// with `train --shape encoder-only`) ranks the words that could stand where TEXT holds [MASK]
// (decode/fill_mask.h); one line per candidate for the first mask, best first: the word, a tab, its probability.
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "cli/options.h"
#include "decode/fill_mask.h"
#include "model/tokenizer.h"
#include "util/error.h"
#include "util/printable.h"

namespace sf::cli {

namespace {

const char* kHelp =
    "usage: stepformer-cli fill-mask MODEL \"TEXT with [MASK]\" [--top K]\n\n"
    "An encoder-only masked language model (e.g. assets/models/bert-en.safetensors, or one trained with\n"
    "`stepformer-cli train --shape encoder-only`) reads TEXT as <bos> w1 .. wn <eos>, each literal [MASK] (any\n"
    "case) as its mask token, and ranks its whole vocabulary for the first [MASK] (a text with several has the\n"
    "others read as masks too, and says so on stderr). Prints K lines, best first (equal probabilities: the\n"
    "vocabulary's order):\n"
    "  WORD<TAB>PROBABILITY\n"
    "WORD as the model's vocabulary holds it with the tokenizer's escapes undone (&apos;s -> 's; special tokens\n"
    "such as <unk> as they are), PROBABILITY the softmax of the output head at the mask over the whole\n"
    "vocabulary, with 4 decimals.\n"
    "  --top K   how many candidates (default 5; 1 to the vocabulary's size)\n";

}  // namespace

int run_fill_mask(const Args& args) {
  OptionParser p("fill-mask");
  int top = 5;
  p.value("--top", &top, 1, 100'000'000);
  if (!p.parse(args)) return 2;
  if (p.help_requested() || p.positional().size() != 2) {
    std::fputs(kHelp, p.help_requested() ? stdout : stderr);
    return p.help_requested() ? 0 : 2;
  }
  const Model model = load_model_warning("fill-mask", p.positional()[0], /*every_shape=*/true);
  const FillMaskResult r = fill_mask(model, p.positional()[1], top);
  if (r.masks > 1)
    std::fprintf(stderr, "stepformer-cli fill-mask: the text holds %d masks; the candidates are for the first\n",
                 r.masks);
  for (const MaskCandidate& c : r.candidates) {
    const bool special = model.src_vocab.is_special(c.id) || c.id == model.config.mask_id;
    std::printf("%s\t%.4f\n", printable(special ? c.token : unescape_token(c.token)).c_str(), c.probability);
  }
  return 0;
}

}  // namespace sf::cli
