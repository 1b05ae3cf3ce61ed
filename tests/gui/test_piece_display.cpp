// A byte-level BPE piece (GPT-2's) shown as the model reads it (gui/words.h): spaces visible, never "Ġ", bytes that
// are not whole UTF-8 characters as hex, whole characters as themselves; and GPT-2's piece text back to its bytes.
#include <gtest/gtest.h>

#include <string>

#include "gui/words.h"

namespace sf::gui {
namespace {

TEST(PieceDisplay, ASpaceIsAVisibleMarkAndAWholeCharacterItself) {
  EXPECT_EQ(piece_as_read(" man"), "\u2423man");
  EXPECT_EQ(piece_as_read("man"), "man");
  EXPECT_EQ(piece_as_read("  "), "\u2423\u2423");
  EXPECT_EQ(piece_as_read(" caf\xC3\xA9"), "\u2423caf\u00e9");  // é, two bytes, whole
  EXPECT_EQ(piece_as_read("\xF0\x9F\x98\x80"), "\U0001F600");     // 😀, four bytes, whole
  EXPECT_EQ(piece_as_read("\n"), "\u21B5");
  EXPECT_EQ(piece_as_read("\t"), "\u21E5");
  EXPECT_EQ(piece_as_read(""), "");
}

TEST(PieceDisplay, BytesThatAreNotWholeCharactersAreHex) {
  EXPECT_EQ(piece_as_read("\xE2\x80"), "<E2><80>");                   // the first two bytes of ’ (E2 80 99)
  EXPECT_EQ(piece_as_read("\x99"), "<99>");                           // its last byte alone
  EXPECT_EQ(piece_as_read(" \xF0\x9F"), "\u2423<F0><9F>");             // half an emoji after a space
  EXPECT_EQ(piece_as_read("a\xFF" "b"), "a<FF>b");                    // never valid UTF-8
  EXPECT_EQ(piece_as_read("\xC0\xAF"), "<C0><AF>");                   // an overlong form
  EXPECT_EQ(piece_as_read("\xEF\xBF\xBD"), "\uFFFD");                 // U+FFFD written in the text is a character
  EXPECT_EQ(piece_as_read("\x01"), "<01>");                           // a control character
  EXPECT_EQ(piece_as_read("\x7F"), "<7F>");
}

TEST(PieceDisplay, GptTwosPieceTextGivesBackItsBytes) {
  // bytes_to_unicode: printable Latin-1 as itself; the other 68 bytes U+0100 + n, in byte order.
  EXPECT_EQ(byte_level_piece_bytes("\u0120man"), " man");                 // Ġman
  EXPECT_EQ(byte_level_piece_bytes("\u010A"), "\n");                      // Ċ
  EXPECT_EQ(byte_level_piece_bytes("\u00e2\u0122\u013b"), "\xE2\x80\x99");  // âĢĻ: ’
  EXPECT_EQ(byte_level_piece_bytes("\u00e2\u0122"), "\xE2\x80");          // two bytes of it
  EXPECT_EQ(byte_level_piece_bytes("\u0100"), std::string(1, '\0'));      // byte 0
  EXPECT_EQ(byte_level_piece_bytes("\u0143"), "\xAD");                    // the 68th: the soft hyphen's byte
  EXPECT_EQ(byte_level_piece_bytes("hello"), "hello");
  // Together: what the tokens panel shows for GPT-2's pieces.
  EXPECT_EQ(piece_as_read(byte_level_piece_bytes("\u0120man")), "\u2423man");
  EXPECT_EQ(piece_as_read(byte_level_piece_bytes("\u00e2\u0122")), "<E2><80>");
  EXPECT_EQ(piece_as_read(byte_level_piece_bytes("\u0120\u00e2\u0122\u013b")), "\u2423\u2019");
}

}  // namespace
}  // namespace sf::gui
