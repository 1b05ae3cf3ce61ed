// Training data: a parallel corpus of tokenized sentences (one per line, tokens separated by spaces, as
// Multi30k's *.lc.norm.tok.* files), the vocabularies built from it, and the sentences as ids.
#pragma once
#include <string>
#include <vector>

#include "model/vocabulary.h"
#include "train/bleu.h"

namespace sf {

struct ParallelCorpus {
  std::vector<TokenSequence> source;
  std::vector<TokenSequence> target;
};

// The largest corpus file read (Multi30k's training side is 4 MB, 29,000 lines): a device or a runaway file is
// refused before anything is allocated, and the line count is checked before the lines are split, so that the
// memory a corpus takes stays within about 16 times its size (a token is a std::string of 32 bytes).
inline constexpr uint64_t kMaxCorpusFileBytes = uint64_t{64} << 20;
inline constexpr size_t kMaxCorpusLines = 1'000'000;

// Reads two aligned files (regular files of at most kMaxCorpusFileBytes and kMaxCorpusLines lines,
// io/user_files.h). Throws ErrorKind::File when one cannot be read or is over a limit, ErrorKind::Input when
// their line counts differ or a line is empty.
ParallelCorpus read_parallel_corpus(const std::string& source_path, const std::string& target_path);
std::vector<TokenSequence> read_token_lines(const std::string& path);
// One language's sentences (a language model's corpus): read_token_lines, and ErrorKind::Input naming the first
// empty line, as read_parallel_corpus.
std::vector<TokenSequence> read_sentences(const std::string& path);

// The special tokens, at the ids the PyTorch tutorials use: <unk> 0, <pad> 1, <bos> 2, <eos> 3.
inline constexpr const char* kSpecialTokens[] = {"<unk>", "<pad>", "<bos>", "<eos>"};
SpecialIds default_special_ids();

// Words seen at least min_frequency times, after the special tokens; most frequent first, ties in
// alphabetical order (so the vocabulary does not depend on the order of the corpus).
Vocabulary build_vocabulary(const std::vector<TokenSequence>& sentences, int min_frequency);

// Token ids of one sentence, without <bos>/<eos>; unknown words map to <unk>.
std::vector<int> to_ids(const TokenSequence& sentence, const Vocabulary& vocabulary);

struct Example {
  std::vector<int> source;  // (S) without <bos>/<eos> (added by the batcher)
  std::vector<int> target;  // (T) without <bos>/<eos>
};

std::vector<Example> make_examples(const ParallelCorpus& corpus, const Vocabulary& source_vocabulary,
                                   const Vocabulary& target_vocabulary);
// A language model's examples (config.stacks DecoderOnly): each sentence as the target, no source.
std::vector<Example> make_examples(const std::vector<TokenSequence>& sentences, const Vocabulary& vocabulary);

}  // namespace sf
