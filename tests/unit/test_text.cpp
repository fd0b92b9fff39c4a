// Tests of the BPE tokenizer on a vocabulary small enough to follow by hand, of the UTF-8 repair
// against Unicode's "maximal subpart" rule, and of token files (round trip, damage refused). The
// ids of a real tokenizer against transformers' are tests/interop/check_bpe_ids.py's.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/errors.h"
#include "text/bpe.h"
#include "text/token_file.h"
#include "unit/bpe_files.h"

using namespace optimus;

namespace {

using test::TempDir;

// vocab.json: the 256 byte characters (id = byte), then "he" 256, "Ġt" 257, "Ġthe" 258, "the" 259,
// "<|endoftext|>" 260; merges by rank: "h e", "Ġ t", "Ġt he", "t he".
void write_small_tokenizer(const std::filesystem::path& dir) {
  const std::string G = test::byte_char(' ');
  test::write_tokenizer(dir, {{"h", "e"}, {G, "t"}, {G + "t", "he"}, {"t", "he"}});
}

}  // namespace

TEST_CASE("bpe: the merges apply lowest rank first, each pre-token on its own", "[text]") {
  TempDir dir;
  write_small_tokenizer(dir.path);
  const text::Tokenizer t = text::Tokenizer::load(dir.path.string());
  CHECK(t.vocab_size() == 261);
  CHECK(t.end_of_text() == 260);
  // "the": t h e -> t he ("h e", rank 0) -> the ("t he", rank 3).
  // " the": Ġ t h e -> Ġ t he -> Ġt he ("Ġ t", rank 1) -> Ġthe ("Ġt he", rank 2).
  CHECK(t.encode("the the") == std::vector<int>{259, 258});
  // "  the": the whitespace run gives its last space to the word: " " then " the".
  CHECK(t.encode("  the") == std::vector<int>{32, 258});
  // Contractions are pre-tokens of their own; "'s" has no merge, so two ids.
  CHECK(t.encode("he's") == std::vector<int>{256, '\'', 's'});
  // <|endoftext|> is one id wherever it is.
  CHECK(t.encode("the<|endoftext|>the") == std::vector<int>{259, 260, 259});
  CHECK(t.decode({259, 260, 258}) == "the<|endoftext|> the");
}

TEST_CASE("bpe: decode(encode(text)) is the text, with invalid UTF-8 replaced", "[text]") {
  TempDir dir;
  write_small_tokenizer(dir.path);
  const text::Tokenizer t = text::Tokenizer::load(dir.path.string());
  for (const std::string s : {"the theory of the\tthe\n\n  the", "naïve 日本 😀 ١٢٣", "bad \xff byte", ""}) {
    CHECK(t.decode(t.encode(s)) == text::valid_utf8(s));
  }
  CHECK_THROWS_AS(t.decode({261}), core::ConfigError);
}

TEST_CASE("bpe: invalid UTF-8 becomes one U+FFFD per maximal subpart", "[text]") {
  const std::string R = "\xEF\xBF\xBD";
  // The examples of Unicode 15, section 3.9 (U+FFFD substitution of maximal subparts).
  CHECK(text::valid_utf8("\xC0\xAF") == R + R);                  // C0 never starts a sequence
  CHECK(text::valid_utf8("\xE0\x80\xAF") == R + R + R);          // E0 needs A0..BF next
  CHECK(text::valid_utf8("\xF4\x90\x80\x80") == R + R + R + R);  // past U+10FFFF
  CHECK(text::valid_utf8("\xED\xA0\x80") == R + R + R);          // a surrogate
  CHECK(text::valid_utf8("\xE2\x82") == R);                      // a truncated euro sign: one subpart
  CHECK(text::valid_utf8("\xF0\x9F\x98 x") == R + " x");         // a truncated emoji
  CHECK(text::valid_utf8("a\x80z") == "a" + R + "z");            // a lone continuation byte
  CHECK(text::valid_utf8("ok \xE2\x82\xAC \xF0\x9F\x98\x80") == "ok \xE2\x82\xAC \xF0\x9F\x98\x80");  // valid stays
}

TEST_CASE("bpe: a vocabulary without every byte, or a merge of unknown tokens, is refused", "[text]") {
  TempDir dir;
  write_small_tokenizer(dir.path);
  {
    std::ofstream merges(dir.path / "merges.txt", std::ios::app);
    merges << "x yz\n";  // "xyz" is not in the vocabulary
  }
  CHECK_THROWS_AS(text::Tokenizer::load(dir.path.string()), core::ConfigError);
  std::ofstream(dir.path / "vocab.json") << "{\"a\": 0}";
  CHECK_THROWS_AS(text::Tokenizer::load(dir.path.string()), core::ConfigError);
}

TEST_CASE("bpe: a vocabulary that is not one flat object of token: id, each once, is refused", "[text]") {
  TempDir dir;
  write_small_tokenizer(dir.path);
  const auto refusal = [&](const std::string& vocab) {
    std::ofstream(dir.path / "vocab.json") << vocab;
    try {
      text::Tokenizer::load(dir.path.string());
    } catch (const core::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(refusal("[0, 1]"), Catch::Contains("must be a JSON object of token: id"));
  CHECK_THAT(refusal("{\"a\": {\"b\": 0}}"), Catch::Contains("must be a JSON object of token: id"));
  CHECK_THAT(refusal("{\"a\": [0]}"), Catch::Contains("must be a JSON object of token: id"));
  CHECK_THAT(refusal("{}"), Catch::Contains("must be a JSON object of token: id"));
  CHECK_THAT(refusal("{\"a\": 0, \"b\": 1.5}"), Catch::Contains("gives 'b' a bad id; its ids must be 0 to 1"));
  CHECK_THAT(refusal("{\"a\": 0, \"b\": 0}"), Catch::Contains("gives 'b' a bad id"));
  CHECK_THAT(refusal("{\"a\": 0, \"a\": 1}"), Catch::Contains("has the token 'a' twice"));
  CHECK_THAT(refusal("{\"a\": 0,"), Catch::Contains("is not valid JSON (parse error near byte"));
}

TEST_CASE("token files: ids round-trip in 2 or 4 bytes; damage is refused", "[text]") {
  TempDir dir;
  const std::vector<uint32_t> ids = {0, 1, 255, 256, 65535, 7, 9};
  for (uint32_t vocab : {65536u, 70000u}) {
    const std::string path = (dir.path / (std::to_string(vocab) + ".tok")).string();
    text::write_token_file(path, ids, 1, 5, 123, vocab);  // ids[1..5]
    std::ifstream in(path, std::ios::binary);
    const std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    REQUIRE(text::is_token_file(bytes.data(), bytes.size()));
    const text::TokenFileHeader h = text::read_token_file_header(bytes.data(), bytes.size(), path);
    CHECK(h.bytes_per_token == (vocab == 65536u ? 2u : 4u));
    CHECK(h.tokens == 5);
    CHECK(h.text_bytes == 123);
    CHECK(h.vocab_size == vocab);
    for (size_t i = 0; i < 5; ++i) {
      uint32_t id = 0;
      for (uint32_t k = 0; k < h.bytes_per_token; ++k) {
        id |= static_cast<uint32_t>(bytes[text::kTokenFileHeaderBytes + i * h.bytes_per_token + k]) << (8 * k);
      }
      CHECK(id == ids[i + 1]);
    }
    // A file cut short no longer matches its count.
    CHECK_THROWS_AS(text::read_token_file_header(bytes.data(), bytes.size() - 1, path), core::ConfigError);
  }
}
