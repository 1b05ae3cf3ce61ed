// What a SentencePiece model file (source.spm, target.spm: a serialized ModelProto, protobuf wire format) must
// be before libsentencepiece reads it. The library trusts parts of the file it should not: a crafted file
// crashes it when text is encoded (version 0.1.97, Debian 12), so every entry point that loads one (a Marian
// folder, a model file holding one, `info`, `import-hf`, the app) checks it here first and refuses it by name.
//
// What the library trusts, and what is checked:
//   - the normalizer's precompiled character map (NormalizerSpec.precompiled_charsmap, and the denormalizer's):
//       <trie size: u32 little-endian><double-array trie, 4-byte units><normalized strings, each ending in NUL>
//     Encoding walks the trie with the input's bytes, unit by unit, without a bound check (darts-clone's
//     commonPrefixSearch: next = node ^ offset(unit) ^ byte), and reads the normalized string at a leaf's value
//     up to its NUL. Checked: every unit a walk can reach keeps all 256 next positions inside the trie, and
//     every leaf's value points at a NUL-terminated string inside the blob.
//   - the pieces (ModelProto.pieces): the library builds a trie of them recursively, one stack frame a byte,
//     so a 200 kB piece overflows the stack; a piece holding NUL is cut short where the trie builder reads it.
//     Checked: at most kMaxSentencePieces pieces, each 1 to kMaxSentencePieceBytes bytes, no NUL, a finite
//     score, a known type; the model type (TrainerSpec.model_type) one the library knows.
//   - the wire format itself: lengths inside the buffer, varints of at most 10 bytes, no groups.
// Layout of the messages read (sentencepiece_model.proto, proto2; other fields are skipped):
//   ModelProto      1 pieces (repeated SentencePiece)  2 trainer_spec  3 normalizer_spec  5 denormalizer_spec
//   SentencePiece   1 piece (string)  2 score (float)  3 type (enum 1..6)
//   TrainerSpec     3 model_type (enum 1..4)
//   NormalizerSpec  2 precompiled_charsmap (bytes)
// A message field given twice merges (protobuf's rule): the last charsmap and the last model type count.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace sf {

inline constexpr size_t kMaxSentencePieces = 1'000'000;
// SentencePiece's trainer makes pieces of at most 512 characters (max_sentencepiece_length), 2048 bytes of UTF-8.
inline constexpr size_t kMaxSentencePieceBytes = 2048;

// Why these bytes must not be handed to libsentencepiece, in words ("the normalizer's character map: ..."), or ""
// when they may.
std::string sentencepiece_model_problem(std::string_view proto);

// The same for one precompiled character map (the bytes of NormalizerSpec.precompiled_charsmap).
std::string charsmap_problem(std::string_view charsmap);

}  // namespace sf
