// GPT-2's byte-level BPE tokenizer, read from the two files Hugging Face writes: vocab.json (token
// string -> id) and merges.txt (one merge "a b" per line, earlier lines first). Encoding:
//   1. the text is made valid UTF-8: each invalid sequence becomes U+FFFD, as Python's
//      bytes.decode("utf-8", errors="replace") does (one per maximal invalid subpart);
//   2. it is cut at the special token <|endoftext|> (when the vocabulary has it), which is one id;
//   3. each piece is split by GPT-2's pre-tokenizer, a Unicode regular expression (PCRE2):
//      contractions, an optional space and letters, or digits, or other symbols, and whitespace runs;
//   4. each pre-token's bytes become characters (bytes_to_unicode: printable bytes stand for
//      themselves, the others for U+0100 onwards, so no byte is a space or a control character) and
//      the merges are applied, lowest rank first, until none applies; the symbols left are the ids
//      (text/bpe_merges.h: O(n log n) in a pre-token's length; short pre-tokens are remembered).
// The ids equal transformers' GPT2Tokenizer's on the same files (tests/interop/check_bpe_ids.py).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/bpe_merges.h"

namespace optimus::text {

/// The text with each invalid UTF-8 sequence replaced by U+FFFD (EF BF BD), one replacement per
/// maximal subpart of a valid sequence (Unicode's recommended practice, Python's errors="replace").
std::string valid_utf8(std::string_view bytes);

class Tokenizer {
 public:
  /// Reads dir/vocab.json and dir/merges.txt; a missing or malformed file, a merge of unknown
  /// tokens, or a vocabulary without the 256 byte characters is a ConfigError naming the file.
  static Tokenizer load(const std::string& dir);

  std::vector<int> encode(std::string_view text) const;
  /// The bytes the ids stand for (not necessarily valid UTF-8 when cut mid-character); an id
  /// outside the vocabulary is a ConfigError.
  std::string decode(const std::vector<int>& ids) const;

  int vocab_size() const { return static_cast<int>(token_of_id_.size()); }
  /// The id of <|endoftext|>, if the vocabulary has it.
  std::optional<int> end_of_text() const { return end_of_text_; }

  /// The files a tokenizer is made of, in dir.
  static constexpr std::array<const char*, 2> kFiles = {"vocab.json", "merges.txt"};

 private:
  void read_vocab(const std::string& path);                                // vocab.json
  void read_merges(const std::string& path);                               // merges.txt, after the vocabulary
  void encode_piece(std::string_view piece, std::vector<int>& out) const;  // steps 3 and 4
  void encode_word(std::string_view word, std::vector<int>& out) const;    // step 4, short words cached

  std::unordered_map<std::string, int> id_of_token_;
  std::vector<std::string> token_of_id_;
  Merges merges_;
  std::array<std::string, 256> char_of_byte_;  // bytes_to_unicode, as UTF-8
  std::array<int, 256> id_of_byte_{};          // the id of each byte's character
  std::unordered_map<std::string, unsigned char> byte_of_char_;
  std::optional<int> end_of_text_;
  mutable std::unordered_map<std::string, std::vector<int>> cache_;  // word -> ids, for short words
  mutable size_t cache_bytes_ = 0;                                   // about what cache_ holds, in bytes
};

}  // namespace optimus::text
