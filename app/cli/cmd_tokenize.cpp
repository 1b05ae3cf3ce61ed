// stepformer-cli tokenize MODEL TEXT [--pieces]: the token ids the model reads for TEXT, space-separated on one
// line, by the model's own tokenizer: a translator's source side (with the <bos>/<eos> its encoder reads), a
// decoder-only model's prompt (after <bos> where the model starts with one; GPT-2 adds nothing), as equal to the
// model's original tokenizer as the tests show (tests/unit/test_byte_bpe.cpp, test_marian.cpp).
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "cli/options.h"
#include "decode/decoder.h"
#include "util/error.h"
#include "util/printable.h"

namespace sf::cli {

int run_tokenize(const Args& args) {
  OptionParser p("tokenize");
  bool pieces = false;
  p.flag("--pieces", &pieces);
  if (!p.parse(args)) return 2;
  if (p.help_requested() || p.positional().size() != 2) {
    std::fputs("usage: stepformer-cli tokenize MODEL TEXT [--pieces]\n\n"
               "Prints the token ids the model reads for TEXT, space-separated on one line: a translator's source\n"
               "sentence as its encoder reads it, a decoder-only model's prompt as its decoder reads it (after <bos>\n"
               "where the model starts with one; GPT-2 reads the prompt as it is). MODEL is a model file or a\n"
               "Hugging Face folder (Marian, GPT-2).\n"
               "  --pieces   print the pieces instead of the ids (GPT-2's as its vocabulary writes them: \"Ġman\"\n"
               "             is \" man\")\n",
               p.help_requested() ? stdout : stderr);
    return p.help_requested() ? 0 : 2;
  }
  const Model m = load_model_warning("tokenize", p.positional()[0], /*every_shape=*/true);
  const std::string& text = p.positional()[1];
  const Config& c = m.config;
  std::vector<int> ids;
  if (c.has_encoder()) {
    ids = token_ids(encode_text(m, text, Side::Source));
  } else {
    ids = decoder_only_input(c, token_ids(encode_text(m, text, Side::Target, /*specials=*/false)));
    if (text.empty() && !c.starts_with_bos) ids.clear();  // GPT-2 reads nothing; the start token is generate's
  }
  const Vocabulary& vocabulary = c.has_encoder() ? m.src_vocab : m.tgt_vocab;
  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) line += ' ';
    line += pieces ? vocabulary.token(ids[i]) : std::to_string(ids[i]);
  }
  std::printf("%s\n", printable(line).c_str());
  return 0;
}

}  // namespace sf::cli
