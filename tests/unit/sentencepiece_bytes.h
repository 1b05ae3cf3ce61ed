// SentencePiece model bytes for the tests: protobuf's wire format written by hand (varints, length-delimited
// fields, 32-bit floats), and the crafted models a hostile user reported (issue 46), made by appending fields
// to a real model: protobuf merges a repeated message field (a piece more) and the last value of a field wins
// (another character map). model/sentencepiece_proto.h says what these fields are.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace sf::testing {

inline std::string varint(uint64_t v) {
  std::string out;
  do {
    const uint8_t b = v & 0x7f;
    v >>= 7;
    out.push_back(static_cast<char>(v ? (b | 0x80) : b));
  } while (v);
  return out;
}
inline std::string field_bytes(uint32_t number, std::string_view bytes) {
  return varint(number << 3 | 2) + varint(bytes.size()) + std::string(bytes);
}
inline std::string field_varint(uint32_t number, uint64_t value) { return varint(number << 3) + varint(value); }
inline std::string field_float(uint32_t number, float value) {
  std::string out = varint(number << 3 | 5);
  char bytes[4];
  std::memcpy(bytes, &value, 4);
  return out.append(bytes, 4);
}
inline std::string u32_le(uint32_t v) {
  char bytes[4];
  std::memcpy(bytes, &v, 4);
  return std::string(bytes, 4);
}

// A piece (ModelProto field 1): its text, score and type (1 normal, 4 user-defined, ...).
inline std::string piece_field(std::string_view text, float score = -10.0f, uint64_t type = 1) {
  return field_bytes(1, field_bytes(1, text) + field_float(2, score) + field_varint(3, type));
}
// A precompiled character map: <trie bytes><trie units><strings>.
inline std::string charsmap(const std::vector<uint32_t>& units, std::string_view strings) {
  std::string out = u32_le(static_cast<uint32_t>(units.size() * 4));
  for (uint32_t u : units) out += u32_le(u);
  return out.append(strings);
}
// A normalizer spec (ModelProto field 3) with this character map.
inline std::string normalizer_field(std::string_view map) { return field_bytes(3, field_bytes(2, map)); }

// The reported normalizer: a trie whose first unit is 0xFFFFFE00 (its offset sends the first step 2^30 units
// away: libsentencepiece 0.1.97 reads there and crashes on the first sentence encoded).
inline std::string hostile_charsmap() {
  std::vector<uint32_t> units(256, 0);
  units[0] = 0xFFFFFE00u;
  return charsmap(units, std::string("x\0", 2));
}

}  // namespace sf::testing
