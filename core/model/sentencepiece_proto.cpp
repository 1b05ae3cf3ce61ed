#include "model/sentencepiece_proto.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

namespace sf {

namespace {

// [SECTION] the protobuf wire format, as far as a check needs it

// One field of a message: its number, its wire type (0 varint, 1 fixed 64, 2 length-delimited, 5 fixed 32) and
// its value (the number, or the bytes of a length-delimited field).
struct Field {
  uint64_t number = 0;
  int wire = 0;
  uint64_t value = 0;
  std::string_view bytes;
};

// Calls `visit` on each field of `message` in order; the first problem it or the wire format has ("" when none).
std::string for_each_field(std::string_view message, const std::function<std::string(const Field&)>& visit) {
  size_t at = 0;
  const auto varint = [&](uint64_t* out) {
    uint64_t v = 0;
    for (int i = 0; i < 10; ++i) {  // a 64-bit varint takes at most 10 bytes
      if (at >= message.size()) return false;
      const uint8_t b = static_cast<uint8_t>(message[at++]);
      v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
      if (!(b & 0x80)) {
        *out = v;
        return true;
      }
    }
    return false;
  };
  while (at < message.size()) {
    Field f;
    uint64_t key = 0;
    if (!varint(&key)) return "a field's key runs past the end or is longer than 10 bytes";
    f.number = key >> 3;
    f.wire = static_cast<int>(key & 7);
    if (f.number == 0) return "a field numbered 0";
    switch (f.wire) {
      case 0:
        if (!varint(&f.value)) return "a number runs past the end or is longer than 10 bytes";
        break;
      case 1:
      case 5: {
        const size_t n = f.wire == 1 ? 8 : 4;
        if (message.size() - at < n) return "a fixed-size field runs past the end";
        std::memcpy(&f.value, message.data() + at, n);  // (little-endian, as the machines this builds for)
        at += n;
        break;
      }
      case 2: {
        uint64_t length = 0;
        if (!varint(&length)) return "a field's length runs past the end";
        if (length > message.size() - at)
          return "a field of " + std::to_string(length) + " bytes where " + std::to_string(message.size() - at) +
                 " are left";
        f.bytes = message.substr(at, static_cast<size_t>(length));
        at += static_cast<size_t>(length);
        break;
      }
      default:
        return "wire type " + std::to_string(f.wire) + " (groups, which SentencePiece never writes)";
    }
    if (std::string problem = visit(f); !problem.empty()) return problem;
  }
  return "";
}

// A known field of the wrong wire type: protobuf would refuse it too, but say which.
std::string wrong_wire(const Field& f, int want, const char* what) {
  return f.wire == want ? "" : std::string(what) + " (field " + std::to_string(f.number) + ") has wire type " +
                                   std::to_string(f.wire) + ", not " + std::to_string(want);
}

// [SECTION] the double-array trie of a character map (darts-clone's units)
//   unit: bit 31 set = a leaf unit holding value = bits 0..30; else label = bits 0..7, has_leaf = bit 8,
//   offset = (unit >> 10) << (bit 9 ? 8 : 0); a walk goes from node p by byte c to p ^ offset(unit[p]) ^ c and
//   has matched when that unit's label is c; a node with has_leaf has its value at p ^ offset(unit[p]).
uint32_t offset_of(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }
bool has_leaf(uint32_t unit) { return ((unit >> 8) & 1) == 1; }
uint32_t label_of(uint32_t unit) { return unit & ((1u << 31) | 0xFF); }
uint32_t value_of(uint32_t unit) { return unit & ((1u << 31) - 1); }

}  // namespace

std::string charsmap_problem(std::string_view charsmap) {
  uint32_t trie_bytes = 0;
  if (charsmap.size() <= sizeof(trie_bytes)) return "it is " + std::to_string(charsmap.size()) + " bytes, too short for a trie";
  std::memcpy(&trie_bytes, charsmap.data(), sizeof(trie_bytes));
  // (the library checks the size against the whole blob, not what follows the 4 bytes of the size: a trie
  // reaching 1-3 bytes past the end passes it)
  if (trie_bytes > charsmap.size() - sizeof(trie_bytes))
    return "its trie is said to be " + std::to_string(trie_bytes) + " bytes, in " + std::to_string(charsmap.size() - 4) +
           " bytes";
  const size_t n = trie_bytes / 4;
  if (n < 256) return "its trie has " + std::to_string(n) + " units; a walk can reach 256 from the first";
  std::vector<uint32_t> units(n);
  std::memcpy(units.data(), charsmap.data() + sizeof(trie_bytes), n * 4);
  const std::string_view strings = charsmap.substr(sizeof(trie_bytes) + trie_bytes);
  const size_t last_nul = strings.rfind('\0');

  // Every node a walk can reach (the root, then each matched label), once.
  std::vector<uint8_t> seen(n, 0);
  std::vector<uint32_t> todo = {0};
  seen[0] = 1;
  while (!todo.empty()) {
    const uint32_t p = todo.back();
    todo.pop_back();
    const uint32_t unit = units[p], base = p ^ offset_of(unit);
    if ((static_cast<size_t>(base) | 0xFF) >= n)
      return "unit " + std::to_string(p) + " of its trie leads to units " + std::to_string(base & ~0xFFu) + " to " +
             std::to_string(base | 0xFF) + ", past its " + std::to_string(n);
    if (p != 0 && has_leaf(unit)) {  // (the root's leaf is never read)
      const uint32_t value = value_of(units[base]);
      if (last_nul == std::string_view::npos || value > last_nul)
        return "a rule of its trie points at byte " + std::to_string(value) + " of its " + std::to_string(strings.size()) +
               " bytes of strings" + (last_nul == std::string_view::npos ? std::string(", which end in no NUL") : std::string());
    }
    for (uint32_t c = 0; c < 256; ++c) {
      const uint32_t q = base ^ c;
      if (label_of(units[q]) == c && !seen[q]) {
        seen[q] = 1;
        todo.push_back(q);
      }
    }
  }
  return "";
}

std::string sentencepiece_model_problem(std::string_view proto) {
  size_t pieces = 0;
  std::string_view charsmap[2];  // the normalizer's, the denormalizer's (the last given: protobuf merges)
  uint64_t model_type = 1;       // UNIGRAM unless the trainer spec says
  std::string problem = for_each_field(proto, [&](const Field& f) -> std::string {
    if (f.number == 1) {  // a piece
      ++pieces;
      if (pieces > kMaxSentencePieces)
        return "it holds more than " + std::to_string(kMaxSentencePieces) + " pieces";
      if (std::string wrong = wrong_wire(f, 2, "a piece"); !wrong.empty()) return wrong;
      std::string_view text;
      uint32_t score_bits = 0;
      uint64_t type = 1;  // NORMAL
      std::string inner = for_each_field(f.bytes, [&](const Field& g) -> std::string {
        if (g.number == 1) {
          if (std::string wrong = wrong_wire(g, 2, "the piece's text"); !wrong.empty()) return wrong;
          text = g.bytes;
        } else if (g.number == 2) {
          if (std::string wrong = wrong_wire(g, 5, "the piece's score"); !wrong.empty()) return wrong;
          score_bits = static_cast<uint32_t>(g.value);
        } else if (g.number == 3) {
          if (std::string wrong = wrong_wire(g, 0, "the piece's type"); !wrong.empty()) return wrong;
          type = g.value;
        }
        return "";
      });
      const std::string which = "piece " + std::to_string(pieces);
      if (!inner.empty()) return which + ": " + inner;
      if (text.empty()) return which + " is empty";
      if (text.size() > kMaxSentencePieceBytes)
        return which + " is " + std::to_string(text.size()) + " bytes; SentencePiece makes pieces of at most " +
               std::to_string(kMaxSentencePieceBytes);
      if (text.find('\0') != std::string_view::npos) return which + " holds a NUL byte";
      float score = 0;
      std::memcpy(&score, &score_bits, sizeof(score));
      if (!std::isfinite(score)) return which + " has the score " + std::to_string(score);
      if (type < 1 || type > 6) return which + " has the type " + std::to_string(type) + " (1 to 6 are known)";
    } else if (f.number == 2) {  // the trainer spec: the model type
      if (std::string wrong = wrong_wire(f, 2, "the trainer spec"); !wrong.empty()) return wrong;
      return for_each_field(f.bytes, [&](const Field& g) -> std::string {
        if (g.number != 3) return "";
        if (std::string wrong = wrong_wire(g, 0, "the model type"); !wrong.empty()) return wrong;
        model_type = g.value;
        return "";
      });
    } else if (f.number == 3 || f.number == 5) {  // the normalizer and denormalizer specs
      if (std::string wrong = wrong_wire(f, 2, f.number == 3 ? "the normalizer" : "the denormalizer"); !wrong.empty())
        return wrong;
      return for_each_field(f.bytes, [&](const Field& g) -> std::string {
        if (g.number != 2) return "";
        if (std::string wrong = wrong_wire(g, 2, "the character map"); !wrong.empty()) return wrong;
        charsmap[f.number == 3 ? 0 : 1] = g.bytes;
        return "";
      });
    }
    return "";
  });
  if (!problem.empty()) return problem;
  if (pieces == 0) return "it holds no pieces";
  if (model_type < 1 || model_type > 4)
    return "its model type is " + std::to_string(model_type) + " (1 unigram, 2 BPE, 3 word, 4 char are known)";
  for (int i = 0; i < 2; ++i)
    if (!charsmap[i].empty())
      if (std::string bad = charsmap_problem(charsmap[i]); !bad.empty())
        return std::string(i == 0 ? "the normalizer's" : "the denormalizer's") + " character map: " + bad;
  return "";
}

}  // namespace sf
