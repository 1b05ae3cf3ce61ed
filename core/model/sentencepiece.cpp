#include "model/sentencepiece.h"

// STEPFORMER_HAVE_SENTENCEPIECE comes with the stepformer::sentencepiece target (third_party/): 1 where Debian's
// libsentencepiece is linked, 0 in the web build, which has none.
#ifndef STEPFORMER_HAVE_SENTENCEPIECE
#error "link stepformer::sentencepiece: it says whether SentencePiece is there (STEPFORMER_HAVE_SENTENCEPIECE)"
#endif
#if STEPFORMER_HAVE_SENTENCEPIECE
#include <sentencepiece_processor.h>
#endif

#include <exception>

#include "model/sentencepiece_proto.h"
#include "util/error.h"

namespace sf {

struct SentencePieceModels::Impl {
  std::string proto[2];
#if STEPFORMER_HAVE_SENTENCEPIECE
  sentencepiece::SentencePieceProcessor processor[2];
#endif
};

namespace {
int side_index(Side side) { return side == Side::Source ? 0 : 1; }
}  // namespace

bool sentencepiece_available() { return STEPFORMER_HAVE_SENTENCEPIECE != 0; }

std::vector<PieceWord> piece_words(const std::vector<std::string>& pieces) {
  std::vector<PieceWord> words;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const bool alone = pieces[i].empty();
    const bool starts = words.empty() || alone || pieces[i].starts_with(kWordStart) || pieces[i - 1].empty();
    if (starts) words.push_back({i, i + 1});
    else words.back().end = i + 1;
  }
  return words;
}

std::string_view without_word_start(std::string_view piece) {
  return piece.starts_with(kWordStart) ? piece.substr(kWordStart.size()) : piece;
}

std::string word_letters(const std::vector<std::string>& pieces, PieceWord w) {
  std::string letters;
  for (size_t k = w.begin; k < w.end; ++k) letters += without_word_start(pieces[k]);
  return letters;
}

SentencePieceModels::SentencePieceModels(std::string source_proto, std::string target_proto,
                                         const std::string& source_name, const std::string& target_name,
                                         const std::string& where)
    : impl_(std::make_unique<Impl>()) {
  impl_->proto[0] = std::move(source_proto);
  impl_->proto[1] = std::move(target_proto);
  const std::string* names[2] = {&source_name, &target_name};
  for (int i = 0; i < 2; ++i) {
    if (impl_->proto[i].empty())
      fail(ErrorKind::Format, ErrorCode::SentencePieceInvalid, where, {{"name", *names[i]}, {"problem", "empty"}},
           "'" + *names[i] + "' is empty: not a SentencePiece model");
    // What the library would crash on (a crafted character map, a piece longer than its trie builder's
    // stack): refused before it sees the bytes (model/sentencepiece_proto.h).
    if (const std::string unsafe = sentencepiece_model_problem(impl_->proto[i]); !unsafe.empty())
      fail(ErrorKind::Format, ErrorCode::SentencePieceInvalid, where, {{"name", *names[i]}, {"problem", unsafe}},
           "'" + *names[i] + "' is not a SentencePiece model Stepformer can read: " + unsafe);
#if !STEPFORMER_HAVE_SENTENCEPIECE
    // The web build: Debian has no WebAssembly SentencePiece (third_party/stepformer_dependencies.cmake).
    fail(ErrorKind::Unsupported, where,
         "'" + *names[i] + "' is a SentencePiece model (a Marian model's subword tokenizer), which this build of "
         "Stepformer cannot read: open it in the desktop app");
#else
    // libsentencepiece reports most faults as a status, but some (a piece of zero length, found by
    // tests/fuzz/fuzz_hf_marian) as an exception of its own from deep inside: both become one Format error.
    std::string problem;
    try {
      const auto status = impl_->processor[i].LoadFromSerializedProto(impl_->proto[i]);
      if (!status.ok()) problem = status.ToString();
    } catch (const std::exception& e) {
      problem = e.what();
    } catch (...) {
      problem = "the library refused it";
    }
    if (!problem.empty())
      fail(ErrorKind::Format, ErrorCode::SentencePieceInvalid, where, {{"name", *names[i]}, {"problem", problem}},
           "'" + *names[i] + "' is not a SentencePiece model (" + problem + ")");
    if (impl_->processor[i].GetPieceSize() <= 0)
      fail(ErrorKind::Format, ErrorCode::SentencePieceInvalid, where, {{"name", *names[i]}, {"problem", "no pieces"}},
           "'" + *names[i] + "' holds no pieces");
#endif
  }
}

SentencePieceModels::~SentencePieceModels() = default;

const std::string& SentencePieceModels::proto(Side side) const { return impl_->proto[side_index(side)]; }

#if STEPFORMER_HAVE_SENTENCEPIECE
std::vector<Piece> SentencePieceModels::split(std::string_view text, Side side) const {
  sentencepiece::ImmutableSentencePieceText spt;
  std::string problem;
  try {
    const auto status = impl_->processor[side_index(side)].Encode(text, spt.mutable_proto());
    if (!status.ok()) problem = status.ToString();
  } catch (const std::exception& e) {
    problem = e.what();
  }
  if (!problem.empty()) fail(ErrorKind::Input, "sentencepiece", "cannot split the text: " + problem);
  std::vector<Piece> out;
  out.reserve(spt.pieces_size());
  for (const auto& p : spt.pieces()) {
    // Spans are bytes of the input; SentencePiece reports them, clamp against a bad report all the same.
    const size_t begin = std::min<size_t>(p.begin(), text.size()), end = std::min<size_t>(p.end(), text.size());
    out.push_back(Piece{p.piece(), begin, std::max(begin, end)});
  }
  return out;
}

std::string SentencePieceModels::join(const std::vector<std::string>& pieces, Side side) const {
  std::string out, problem;
  try {
    const auto status = impl_->processor[side_index(side)].Decode(pieces, &out);
    if (!status.ok()) problem = status.ToString();
  } catch (const std::exception& e) {
    problem = e.what();
  }
  if (!problem.empty()) fail(ErrorKind::Input, "sentencepiece", "cannot join the pieces: " + problem);
  return out;
}

std::vector<std::string> SentencePieceModels::known_pieces(Side side) const {
  const auto& sp = impl_->processor[side_index(side)];
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(sp.GetPieceSize()));
  for (int i = 0; i < sp.GetPieceSize(); ++i) out.push_back(sp.IdToPiece(i));
  return out;
}
#else
// (Never reached: without the library no SentencePieceModels is made; the constructor refuses.)
std::vector<Piece> SentencePieceModels::split(std::string_view, Side) const {
  fail(ErrorKind::Unsupported, "sentencepiece", "this build has no SentencePiece");
}
std::string SentencePieceModels::join(const std::vector<std::string>&, Side) const {
  fail(ErrorKind::Unsupported, "sentencepiece", "this build has no SentencePiece");
}
std::vector<std::string> SentencePieceModels::known_pieces(Side) const {
  fail(ErrorKind::Unsupported, "sentencepiece", "this build has no SentencePiece");
}
#endif

std::vector<Token> encode_pieces(std::string_view text, const SentencePieceModels& models, const Vocabulary& vocabulary,
                                 Side side, bool add_eos) {
  if (text.size() > kMaxSentenceBytes)
    fail(ErrorKind::Input, ErrorCode::SentenceTooLong, "encode", {{"bytes", text.size()}, {"limit", kMaxSentenceBytes}},
         "the sentence is " + std::to_string(text.size()) + " bytes; the limit is " +
             std::to_string(kMaxSentenceBytes) + " (a model reads at most a few hundred tokens)");
  std::vector<Token> out;
  auto lookup = [&](Token& t) {
    const auto id = vocabulary.find(t.text);
    t.id = id.value_or(vocabulary.specials().unk);
    t.unknown = !id.has_value();
  };
  // A multilingual model's target language: ">>fra<<" at the start is one token (MarianTokenizer's
  // remove_language_code), the rest is split as usual.
  size_t offset = 0;
  if (side == Side::Source && text.substr(0, 2) == ">>") {
    const size_t close = text.find("<<", 2);
    if (close != std::string_view::npos) {
      Token code;
      code.text = code.surface = std::string(text.substr(0, close + 2));
      code.begin = 0;
      code.end = close + 2;
      lookup(code);
      out.push_back(std::move(code));
      offset = close + 2;
    }
  }
  for (const Piece& p : models.split(text.substr(offset), side)) {
    Token t;
    t.text = p.piece;
    t.begin = offset + p.begin;
    t.end = offset + p.end;
    t.surface = std::string(text.substr(t.begin, t.end - t.begin));
    lookup(t);
    out.push_back(std::move(t));
  }
  if (add_eos) {
    Token eos;
    eos.id = vocabulary.specials().eos;
    eos.text = vocabulary.token(eos.id);
    eos.begin = eos.end = text.size();
    eos.special = true;
    out.push_back(std::move(eos));
  }
  return out;
}

std::string decode_pieces(const std::vector<std::string>& pieces, const SentencePieceModels& models,
                          const Vocabulary& vocabulary, Side side) {
  // MarianTokenizer.decode(..., skip_special_tokens=True): <pad>, </s> and <unk> are dropped, the rest joined.
  std::vector<std::string> kept;
  kept.reserve(pieces.size());
  for (const std::string& p : pieces) {
    const auto id = vocabulary.find(p);
    if (id && vocabulary.is_special(*id)) continue;
    kept.push_back(p);
  }
  // convert_tokens_to_string: a piece the side's model does not know passes through spm as written, so its ▁
  // is turned into a space afterwards, and the ends are stripped.
  const std::string joined = models.join(kept, side);
  std::string text;  // (built anew, not replaced in place: GCC 12 misreads that as an overlapping copy)
  text.reserve(joined.size());
  for (size_t at = 0; at < joined.size();) {
    if (std::string_view(joined).substr(at, kWordStart.size()) == kWordStart) {
      text += ' ';
      at += kWordStart.size();
    } else {
      text += joined[at++];
    }
  }
  const size_t first = text.find_first_not_of(" \t\n\r\f\v");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\n\r\f\v") - first + 1);
}

}  // namespace sf
