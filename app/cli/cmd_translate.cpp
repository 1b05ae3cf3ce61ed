// stepformer-cli translate MODEL TEXT: tokenizes TEXT as the model's training data were, decodes (greedy or
// beam search) and prints the translation.
#include <cstdio>
#include <filesystem>
#include <string>

#include "backend/device.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "decode/decoder.h"
#include "io/user_files.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "util/error.h"
#include "util/printable.h"

namespace sf::cli {

int run_translate(const Args& args) {
  OptionParser p("translate");
  int beam = 0;  // 0: the model's own (a Marian model's num_beams), else greedy
  bool show_tokens = false;
  DeviceRequest device = DeviceRequest::Auto;
  p.value("--beam", &beam, 1, kMaxBeamWidth);
  float length_penalty = -1;  // given: the beam's length penalty (GNMT alpha; a Marian model's Hugging Face one)
  p.value("--length-penalty", &length_penalty, 0.0f, 5.0f);
  p.device("--device", &device);
  p.flag("--tokens", &show_tokens);
  bool tf32 = false;
  p.flag("--tf32", &tf32);
  if (!p.parse(args)) return 2;
  if (p.help_requested() || p.positional().empty() || p.positional().size() > 2) {
    std::fputs("usage: stepformer-cli translate [MODEL] \"TEXT\" [--beam K] [--length-penalty A] [--tokens] [--device D]\n"
               "                                [--tf32]\n\n"
               "Translates TEXT with the model (a model file, or a Hugging Face Marian folder; default: the shipped\n"
               "assets/models/de-en-bpe.safetensors, the subword translator): greedy decoding, or beam search of width K\n"
               "(length penalty A: a finished hypothesis scores sum log p / ((5 + length) / 6)^A; 0.6, the paper's,\n"
               "unless given; the shipped de-en-bpe was scored with 2.0, chosen on the validation set).\n"
               "A Marian model decodes as its generation config says (num_beams, length penalty, max_length, bad\n"
               "words), scored as transformers' generate(); --beam K changes the width (--beam 1: greedy).\n"
               "--tokens also prints the source tokens as the model sees them (<unk> marks unknown words).\n"
               "--device auto (the default: decoding on the GPU where this build has CUDA and a GPU can take the\n"
               "model), cpu, or cuda (an error where no GPU can); --tf32: the GPU's matrix products on TF32 tensor\n"
               "cores instead of FP32.\n",
               p.help_requested() ? stdout : stderr);
    return p.help_requested() ? 0 : 2;
  }
  const bool default_model = p.positional().size() == 1;
  const std::string& sentence = p.positional().back();
  // `translate MODEL` alone: the model's path is not a sentence to translate.
  const bool looks_like_model = sentence.size() > 12 && sentence.ends_with(".safetensors");
  std::error_code ec;  // a long sentence is no file name: is_regular_file must say false, not throw
  const bool folder = std::filesystem::is_directory(sentence, ec);  // a Marian folder, given alone
  if (default_model && (looks_like_model || folder ||
                        (non_regular_file_kind(sentence).empty() && std::filesystem::is_regular_file(sentence, ec)))) {
    std::fprintf(stderr, "stepformer-cli translate: '%s' is a %s, not a sentence: give the text to translate after "
                 "the model (stepformer-cli translate MODEL \"TEXT\")\n", printable(sentence).c_str(),
                 folder ? "folder" : "file");
    return 2;
  }
  require_words(sentence, "translate");
  const Model model = load_model_warning("translate", default_model ? "" : p.positional()[0]);
  const std::vector<Token> source = encode_text(model, sentence, Side::Source);
  if (show_tokens) {
    std::printf("source tokens:");
    for (const Token& t : source)
      std::printf(" %s%s", t.unknown ? "<unk>:" : "", printable(t.text).c_str());
    std::printf("\n");
  }
  DecodeOptions options;
  options.max_length = std::min<int>(static_cast<int>(source.size()) + 50, model.config.max_positions - 1);
  apply_generation_defaults(model.generation, options);  // a Marian model's own way (decode/decoder.h)
  if (beam > 0) {
    options.strategy = beam > 1 ? DecodeStrategy::Beam : DecodeStrategy::Greedy;
    options.beam_width = beam;
  }
  if (length_penalty >= 0) options.length_penalty = length_penalty;
  // The same decoder on either device: on the GPU its steps compute there (Decoder::compute_on).
  auto decode = [&](CudaModel* gpu) {
    Decoder decoder(model.config, model.weights, token_ids(source), {}, options);
    if (gpu) decoder.compute_on(*gpu);
    decoder.run();
    return decoder.generated();
  };
  std::vector<int> generated;
  if (!run_on_gpu("translate", device, model, [&](CudaModel& gpu) { generated = decode(&gpu); }, tf32))
    generated = decode(nullptr);
  std::vector<std::string> words;
  for (int id : generated) {
    if (id == model.config.eos_id) break;
    words.push_back(model.tgt_vocab.token(id));
  }
  std::printf("%s\n", printable(decode_text(model, words, Side::Target)).c_str());
  return 0;
}

}  // namespace sf::cli
