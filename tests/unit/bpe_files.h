// Tokenizer folders for the BPE tests: vocab.json and merges.txt written from a list of merges,
// in a temporary folder that is removed at the end of the test.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "unit/temp_dir.h"

namespace optimus::test {

// GPT-2's byte characters, written out from the rule: '!'..'~', '¡'..'¬', '®'..'ÿ' are themselves,
// the remaining bytes in order are U+0100, U+0101, ... (so the space, byte 32, is U+0120 'Ġ').
inline std::string byte_char(int b) {
  int cp = b, next = 256;
  for (int x = 0; x <= b; ++x) {
    const bool printable = (x >= 33 && x <= 126) || (x >= 161 && x <= 172) || x >= 174;
    if (!printable) {
      if (x == b) cp = next;
      ++next;
    }
  }
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

// vocab.json: the 256 byte characters (id = byte), then the join of each merge in order (id 256,
// 257, ...; a merge's tokens must be byte characters or earlier joins, and its join new), then
// <|endoftext|>; merges.txt: the merges, ranked in order. Tokens must need no JSON escape beyond
// the byte characters '"' and '\'.
inline void write_tokenizer(const std::filesystem::path& dir,
                            const std::vector<std::pair<std::string, std::string>>& merges) {
  std::ofstream vocab(dir / "vocab.json");
  vocab << "{";
  for (int b = 0; b < 256; ++b) {
    std::string c = byte_char(b);
    if (c == "\"" || c == "\\") c = "\\" + c;
    vocab << "\"" << c << "\": " << b << ", ";
  }
  int id = 256;
  for (const auto& [a, b] : merges) vocab << "\"" << a + b << "\": " << id++ << ", ";
  vocab << "\"<|endoftext|>\": " << id << "}";
  std::ofstream text(dir / "merges.txt");
  text << "#version: 0.2\n";
  for (const auto& [a, b] : merges) text << a << " " << b << "\n";
}

}  // namespace optimus::test
