// A subword vocabulary learned from a corpus, as the paper's translator reads its text (section 5.1: "sentences
// were encoded using byte-pair encoding, which has a shared source-target vocabulary"): SentencePiece's BPE
// (Sennrich et al. 2016), learned here by Debian's libsentencepiece_train on the lines given (both languages for a
// shared vocabulary), written as a SentencePiece model (a serialized ModelProto, the .spm file that
// model/sentencepiece.h reads).
//
//   "ein mann mit einem zylinderhut ."  -->  ▁ein ▁mann ▁mit ▁einem ▁zylinder hut ▁.
//
// BPE starts from the characters and merges the most frequent adjacent pair, again and again, until the
// vocabulary has `vocab_size` pieces: frequent words end up one piece, rare ones several, so no word of those
// characters is ever unknown. The special pieces sit at the ids Stepformer's vocabularies use: <unk> 0, <pad> 1,
// <bos> 2, <eos> 3 (train/corpus.h kSpecialTokens). Deterministic: the same lines and size give the same bytes
// (the lines are read in order, none sampled or shuffled).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace sf {

struct SubwordOptions {
  std::vector<std::string> files;  // text, one sentence a line (Multi30k's train.lc.norm.tok.{de,en})
  int vocab_size = 8000;           // pieces, the four special ones included
};

inline constexpr int kMinSubwordVocabulary = 64;
inline constexpr int kMaxSubwordVocabulary = 100'000;

// Whether this build can learn a vocabulary (Debian's libsentencepiece_train was found: third_party/).
bool subword_learning_available();

// The learned model's bytes. ErrorKind::Input for a size outside kMinSubwordVocabulary..kMaxSubwordVocabulary or
// one the text cannot fill (SentencePiece's own words, named); ErrorKind::File for a file that cannot be read
// (train/corpus.h's limits); ErrorKind::Unsupported in a build without SentencePiece's trainer.
std::string learn_subwords(const SubwordOptions& options);

}  // namespace sf
