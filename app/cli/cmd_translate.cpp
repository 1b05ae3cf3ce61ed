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
  int beam = 1;
  bool show_tokens = false;
  std::string device_name = "auto";
  p.value("--beam", &beam, 1, kMaxBeamWidth);
  p.value("--device", &device_name);
  p.flag("--tokens", &show_tokens);
  if (!p.parse(args)) return 2;
  if (p.help_requested() || p.positional().empty() || p.positional().size() > 2) {
    std::fputs("usage: stepformer-cli translate [MODEL.safetensors] \"TEXT\" [--beam K] [--tokens] [--device D]\n\n"
               "Translates TEXT with the model (default: the shipped assets/models/de-en.safetensors): greedy\n"
               "decoding, or beam search of width K (length penalty 0.6).\n"
               "--tokens also prints the source tokens as the model sees them (<unk> marks unknown words).\n"
               "--device auto (the default: greedy decoding on the GPU where this build has CUDA and a GPU can take\n"
               "the model), cpu, or cuda (an error where no GPU can; beam search runs on the CPU only).\n",
               p.help_requested() ? stdout : stderr);
    return p.help_requested() ? 0 : 2;
  }
  const bool default_model = p.positional().size() == 1;
  const std::string& sentence = p.positional().back();
  // `translate MODEL` alone: the model's path is not a sentence to translate.
  const bool looks_like_model = sentence.size() > 12 && sentence.ends_with(".safetensors");
  std::error_code ec;  // a long sentence is no file name: is_regular_file must say false, not throw
  if (default_model && (looks_like_model || (non_regular_file_kind(sentence).empty() &&
                                             std::filesystem::is_regular_file(sentence, ec)))) {
    std::fprintf(stderr, "stepformer-cli translate: '%s' is a file, not a sentence: give the text to translate after "
                 "the model (stepformer-cli translate MODEL \"TEXT\")\n", printable(sentence).c_str());
    return 2;
  }
  const DeviceRequest device = parse_device(device_name);
  if (device == DeviceRequest::Cuda && beam > 1)
    fail(ErrorKind::Unsupported, "translate", "beam search runs on the CPU only: use --device cpu or auto with --beam");
  require_words(sentence, "translate");
  const Model model = load_model_warning("translate", default_model ? "" : p.positional()[0]);
  const std::vector<Token> source = encode(sentence, model.tokenizer, model.src_vocab, Side::Source);
  if (show_tokens) {
    std::printf("source tokens:");
    for (const Token& t : source)
      std::printf(" %s%s", t.unknown ? "<unk>:" : "", printable(t.text).c_str());
    std::printf("\n");
  }
  DecodeOptions options;
  options.strategy = beam > 1 ? DecodeStrategy::Beam : DecodeStrategy::Greedy;
  options.beam_width = beam;
  options.max_length = std::min<int>(static_cast<int>(source.size()) + 50, model.config.max_positions - 1);
  std::vector<int> generated;
  const bool on_gpu = beam == 1 && run_on_gpu("translate", device, model, [&](CudaModel& gpu) {
    generated = gpu.greedy(token_ids(source), {}, options.max_length);
  });
  if (!on_gpu) {
    Decoder decoder(model.config, model.weights, token_ids(source), {}, options);
    decoder.run();
    generated = decoder.generated();
  }
  std::vector<std::string> words;
  for (int id : generated) {
    if (id == model.config.eos_id) break;
    words.push_back(model.tgt_vocab.token(id));
  }
  std::printf("%s\n", printable(detokenize(words, model.tokenizer, Side::Target)).c_str());
  return 0;
}

}  // namespace sf::cli
