#include "train/corpus.h"

#include <algorithm>
#include <unordered_map>

#include "io/user_files.h"
#include "util/error.h"

namespace sf {

std::vector<TokenSequence> read_token_lines(const std::string& path) {
  const std::string text = read_user_file(path, kMaxCorpusFileBytes, "a corpus file", "read_token_lines");
  const size_t line_count = static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) +
                            (!text.empty() && text.back() != '\n' ? 1 : 0);
  if (line_count > kMaxCorpusLines)
    fail(ErrorKind::File, "read_token_lines",
         "'" + path + "' has " + std::to_string(line_count) + " lines; the limit for a corpus file is " +
             std::to_string(kMaxCorpusLines) + " (split it, or train on a part of it)");
  std::vector<TokenSequence> lines;
  lines.reserve(line_count);
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    lines.push_back(split_tokens(text.substr(at, end - at)));
    at = end + 1;
  }
  return lines;
}

ParallelCorpus read_parallel_corpus(const std::string& source_path, const std::string& target_path) {
  ParallelCorpus corpus{read_token_lines(source_path), read_token_lines(target_path)};
  if (corpus.source.size() != corpus.target.size())
    fail(ErrorKind::Input, "read_parallel_corpus",
         "'" + source_path + "' has " + std::to_string(corpus.source.size()) + " lines but '" + target_path +
             "' has " + std::to_string(corpus.target.size()));
  for (size_t i = 0; i < corpus.source.size(); ++i)
    if (corpus.source[i].empty() || corpus.target[i].empty())
      fail(ErrorKind::Input, "read_parallel_corpus", "line " + std::to_string(i + 1) + " is empty");
  return corpus;
}

std::vector<TokenSequence> read_sentences(const std::string& path) {
  std::vector<TokenSequence> sentences = read_token_lines(path);
  for (size_t i = 0; i < sentences.size(); ++i)
    if (sentences[i].empty())
      fail(ErrorKind::Input, "read_sentences", "'" + path + "' line " + std::to_string(i + 1) + " is empty");
  return sentences;
}

SpecialIds default_special_ids() { return SpecialIds{1, 2, 3, 0}; }

Vocabulary build_vocabulary(const std::vector<TokenSequence>& sentences, int min_frequency) {
  std::unordered_map<std::string, int> counts;
  for (const auto& s : sentences)
    for (const auto& w : s) ++counts[w];
  std::vector<std::pair<std::string, int>> words;
  for (const auto& [w, c] : counts)
    if (c >= min_frequency && std::find(std::begin(kSpecialTokens), std::end(kSpecialTokens), w) == std::end(kSpecialTokens))
      words.emplace_back(w, c);
  std::sort(words.begin(), words.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  std::vector<std::string> tokens(std::begin(kSpecialTokens), std::end(kSpecialTokens));
  for (auto& [w, c] : words) tokens.push_back(w);
  return Vocabulary(std::move(tokens), default_special_ids(), "build_vocabulary");
}

std::vector<int> to_ids(const TokenSequence& sentence, const Vocabulary& vocabulary) {
  std::vector<int> ids;
  ids.reserve(sentence.size());
  for (const auto& w : sentence) ids.push_back(vocabulary.id(w));
  return ids;
}

std::vector<Example> make_examples(const ParallelCorpus& corpus, const Vocabulary& source_vocabulary,
                                   const Vocabulary& target_vocabulary) {
  std::vector<Example> examples(corpus.source.size());
  for (size_t i = 0; i < examples.size(); ++i)
    examples[i] = {to_ids(corpus.source[i], source_vocabulary), to_ids(corpus.target[i], target_vocabulary)};
  return examples;
}

std::vector<Example> make_examples(const std::vector<TokenSequence>& sentences, const Vocabulary& vocabulary) {
  std::vector<Example> examples(sentences.size());
  for (size_t i = 0; i < examples.size(); ++i) examples[i].target = to_ids(sentences[i], vocabulary);
  return examples;
}

}  // namespace sf
