#include "train/subwords.h"

// STEPFORMER_HAVE_SENTENCEPIECE_TRAINER comes with the stepformer::sentencepiece target (third_party/): 1 where
// Debian's libsentencepiece_train is linked.
#ifndef STEPFORMER_HAVE_SENTENCEPIECE_TRAINER
#error "link stepformer::sentencepiece: it says whether SentencePiece's trainer is there"
#endif
#if STEPFORMER_HAVE_SENTENCEPIECE_TRAINER
#include <sentencepiece_trainer.h>
#endif

#include "io/user_files.h"
#include "train/corpus.h"
#include "util/error.h"

namespace sf {

#if STEPFORMER_HAVE_SENTENCEPIECE_TRAINER
namespace {

// The lines of the files, in order, as SentencePiece's trainer reads them (no file of ours is opened by it).
class Lines : public sentencepiece::SentenceIterator {
 public:
  explicit Lines(std::vector<std::string> lines) : lines_(std::move(lines)) {}
  bool done() const override { return at_ >= lines_.size(); }
  void Next() override { ++at_; }
  const std::string& value() const override { return lines_[at_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  std::vector<std::string> lines_;
  size_t at_ = 0;
};

}  // namespace
#endif

bool subword_learning_available() { return STEPFORMER_HAVE_SENTENCEPIECE_TRAINER != 0; }

std::string learn_subwords(const SubwordOptions& o) {
  if (o.vocab_size < kMinSubwordVocabulary || o.vocab_size > kMaxSubwordVocabulary)
    fail(ErrorKind::Input, "subwords", "a vocabulary of " + std::to_string(o.vocab_size) + " pieces: choose " +
                                           std::to_string(kMinSubwordVocabulary) + " to " +
                                           std::to_string(kMaxSubwordVocabulary));
  if (o.files.empty()) fail(ErrorKind::Input, "subwords", "no text to learn from");
#if !STEPFORMER_HAVE_SENTENCEPIECE_TRAINER
  fail(ErrorKind::Unsupported, "subwords", "this build has no SentencePiece trainer (Debian's libsentencepiece-dev)");
#else
  // The lines as the corpus reader reads them (its limits: a device or a runaway file is refused), joined back
  // with single spaces.
  std::vector<std::string> lines;
  for (const std::string& path : o.files)
    for (const TokenSequence& sentence : read_token_lines(path)) {
      std::string line;
      for (const std::string& token : sentence) line += (line.empty() ? "" : " ") + token;
      if (!line.empty()) lines.push_back(std::move(line));
    }
  if (lines.empty()) fail(ErrorKind::Input, "subwords", "the files hold no text");
  // BPE over every character seen (character_coverage 1: German's umlauts and ß are pieces of their own), the
  // special pieces at Stepformer's ids, every line read in order (no sampling, no shuffling), quiet.
  const std::string args = "--model_type=bpe --vocab_size=" + std::to_string(o.vocab_size) +
                           " --character_coverage=1.0 --unk_id=0 --pad_id=1 --bos_id=2 --eos_id=3"
                           " --unk_piece=<unk> --pad_piece=<pad> --bos_piece=<bos> --eos_piece=<eos>"
                           " --input_sentence_size=0 --shuffle_input_sentence=false --num_threads=1"
                           " --minloglevel=2";
  Lines iterator(std::move(lines));
  std::string proto;
  const sentencepiece::util::Status status = sentencepiece::SentencePieceTrainer::Train(args, &iterator, &proto);
  if (!status.ok())
    fail(ErrorKind::Input, "subwords", std::string("SentencePiece could not learn the vocabulary: ") + status.ToString());
  return proto;
#endif
}

}  // namespace sf
