// Tests of files that change together: a staged set of files leaves a folder as it was when one
// write fails, a full disk is said in words, and token files record the tokenizer that wrote them,
// so a tokenizer folder whose files do not belong with its token files is refused.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

#include "core/errors.h"
#include "io/file_io.h"
#include "io/staged_files.h"
#include "text/tokenizer_folder.h"
#include "unit/temp_dir.h"

using namespace optimus;
namespace fs = std::filesystem;

namespace {

using test::TempDir;

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A byte-level tokenizer of 258 tokens: the 256 byte characters (GPT-2's bytes_to_unicode: the
// printable bytes stand for themselves, the others for U+0100 onwards; id = byte), then "he" and
// "the"; merges "h e" and "t he". `spacing` follows each colon of vocab.json.
void write_tokenizer(const fs::path& dir, const std::string& spacing = " ") {
  std::string vocab = "{";
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
    const int cp = printable ? b : next++;
    std::string c;
    if (cp < 0x80) {
      c = std::string(1, static_cast<char>(cp));
      if (c == "\"" || c == "\\") c = "\\" + c;
    } else {
      c += static_cast<char>(0xC0 | (cp >> 6));
      c += static_cast<char>(0x80 | (cp & 0x3F));
    }
    vocab += "\"" + c + "\":" + spacing + std::to_string(b) + ",";
  }
  vocab += "\"he\":" + spacing + "256, \"the\":" + spacing + "257}";
  std::ofstream(dir / "vocab.json") << vocab;
  std::ofstream(dir / "merges.txt") << "#version: 0.2\nh e\nt he\n";
}

}  // namespace

TEST_CASE("staged files: a write that fails leaves the folder's earlier files as they were", "[folder]") {
  TempDir dir;
  std::ofstream(dir.path / "a.txt") << "old a";
  std::ofstream(dir.path / "b.txt") << "old b";
  {
    io::StagedFiles files(dir.path.string());
    files.write("a.txt", [](std::FILE* f) { std::fputs("new a", f); });
    CHECK_THROWS_AS(files.write("b.txt",
                                [](std::FILE* f) {
                                  std::fputs("half of b", f);
                                  throw std::runtime_error("the disk filled up");
                                }),
                    std::runtime_error);
  }  // never committed
  CHECK(read_text(dir.path / "a.txt") == "old a");
  CHECK(read_text(dir.path / "b.txt") == "old b");
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 2);  // no temporary left

  io::StagedFiles files(dir.path.string());
  files.write("a.txt", [](std::FILE* f) { std::fputs("new a", f); });
  files.remove_at_commit("b.txt");
  files.commit();
  CHECK(read_text(dir.path / "a.txt") == "new a");
  CHECK(!fs::exists(dir.path / "b.txt"));
}

TEST_CASE("staged files: a full disk is said in words", "[folder]") {
  std::FILE* full = std::fopen("/dev/full", "wb");
  if (full == nullptr) {
    WARN("no /dev/full here: not checked");
    return;
  }
  const std::string block(size_t{1} << 20, 'x');  // past stdio's buffer, so the write itself fails
  try {
    io::write_bytes(full, block.data(), block.size(), "/dev/full");
    FAIL("a write to /dev/full succeeded");
  } catch (const core::ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains("cannot write /dev/full: the disk is full (no space left on device)"));
  }
  std::fclose(full);
}

TEST_CASE("tokenizer folders: token files record their tokenizer, and another one is refused", "[folder]") {
  TempDir dir;
  write_tokenizer(dir.path);
  const text::TokenizerFiles tokenizer = text::read_tokenizer_files(dir.path.string());
  CHECK(tokenizer.vocab_size == 258);
  CHECK(tokenizer.merges == 2);
  text::TokenFileHeader header;
  text::stamp(header, tokenizer);
  CHECK_NOTHROW(text::require_written_with(header, "train.tok", tokenizer));

  text::TokenFileHeader older;  // written before headers recorded merges and a fingerprint
  older.vocab_size = 258;
  CHECK_NOTHROW(text::require_written_with(older, "train.tok", tokenizer));

  std::ofstream(dir.path / "merges.txt") << "#version: 0.2\nh e\n";  // the merges of another tokenizer
  const text::TokenizerFiles fewer_merges = text::read_tokenizer_files(dir.path.string());
  CHECK_THROWS_WITH(text::require_written_with(header, "train.tok", fewer_merges),
                    Catch::Contains("was written with a tokenizer of 2 merges") && Catch::Contains("has 1"));

  write_tokenizer(dir.path, "  ");  // the same tokens and merges in other bytes
  const text::TokenizerFiles other_bytes = text::read_tokenizer_files(dir.path.string());
  CHECK(other_bytes.vocab_size == 258);
  CHECK_THROWS_WITH(text::require_written_with(header, "train.tok", other_bytes),
                    Catch::Contains("was written with another vocab.json or merges.txt"));

  header.vocab_size = 300;
  CHECK_THROWS_WITH(text::require_written_with(header, "train.tok", tokenizer),
                    Catch::Contains("holds ids of a vocabulary of 300 tokens"));
}
