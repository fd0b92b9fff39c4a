// GPT-2's byte-level BPE: loading, encoding, decoding.
#include "text/bpe.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <nlohmann/json.hpp>

#include <climits>
#include <filesystem>
#include <fstream>
#include <memory>
#include <utility>

#include "core/errors.h"
#include "io/file_io.h"

namespace optimus::text {

using core::ConfigError;

namespace {

constexpr std::string_view kEndOfText = "<|endoftext|>";
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
// Words remembered: those up to kCachedWordBytes (longer ones are rare, and would make the cache as
// large as the text), until about kCacheBytes are held, when the cache starts anew.
constexpr size_t kCachedWordBytes = 256;
constexpr size_t kCacheBytes = size_t{64} << 20;
constexpr size_t kCacheEntryBytes = 96;      // roughly: a hash node, its two headers and its bucket
constexpr size_t kMaxWordBytes = INT32_MAX;  // text/bpe_merges.h counts a word's positions in int32

// GPT-2's pre-tokenizer: contractions, an optional space before letters, digits or other symbols,
// whitespace not followed by a non-space (so a run gives its last space to the next word), whitespace.
constexpr const char* kPreTokenizer = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// The pre-tokenizer, compiled once for UTF-8 with Unicode properties (\s, \p{L}, \p{N}).
const pcre2_code* pre_tokenizer() {
  static const std::unique_ptr<pcre2_code, decltype(&pcre2_code_free)> code = [] {
    int error = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* c = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kPreTokenizer), PCRE2_ZERO_TERMINATED,
                                  PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &error, &offset, nullptr);
    if (c != nullptr) pcre2_jit_compile(c, PCRE2_JIT_COMPLETE);  // faster where JIT exists; optional
    return std::unique_ptr<pcre2_code, decltype(&pcre2_code_free)>(c, &pcre2_code_free);
  }();
  if (!code) throw std::logic_error("the GPT-2 pre-tokenizer pattern does not compile");
  return code.get();
}

// One code point as UTF-8.
std::string utf8(unsigned cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

// GPT-2's bytes_to_unicode: the printable bytes '!'..'~', '¡'..'¬' and '®'..'ÿ' stand for themselves;
// the other 68 bytes, in order, for U+0100, U+0101, ...
std::array<std::string, 256> bytes_to_unicode() {
  std::array<std::string, 256> chars;
  unsigned next = 256;
  for (unsigned b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    chars[b] = utf8(printable ? b : next++);
  }
  return chars;
}

// The length of the valid UTF-8 sequence starting at s[i], or 0 with `bad` set to the length of the
// maximal invalid subpart to replace (at least 1).
size_t valid_sequence(std::string_view s, size_t i, size_t& bad) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b = byte(i);
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF)
    len = 2;
  else if (b == 0xE0)
    len = 3, lo = 0xA0;
  else if (b >= 0xE1 && b <= 0xEF)
    len = 3, hi = b == 0xED ? 0x9F : 0xBF;
  else if (b == 0xF0)
    len = 4, lo = 0x90;
  else if (b >= 0xF1 && b <= 0xF4)
    len = 4, hi = b == 0xF4 ? 0x8F : 0xBF;
  bad = 1;
  if (len == 0) return 0;
  for (size_t k = 1; k < len; ++k) {
    const bool ok = i + k < s.size() && byte(i + k) >= (k == 1 ? lo : 0x80) && byte(i + k) <= (k == 1 ? hi : 0xBF);
    if (!ok) {
      bad = k;
      return 0;
    }
  }
  return len;
}

// vocab.json read in one pass as a stream of JSON events, straight into (token, id) pairs (-1 for an
// id that is not an integer): no document is built, and a flat object is all it accepts.
struct VocabReader : nlohmann::json_sax<nlohmann::json> {
  explicit VocabReader(std::string path) : path(std::move(path)) {}
  [[noreturn]] void refuse() const {
    throw ConfigError("the tokenizer's vocabulary " + path + " must be a JSON object of token: id; fix it");
  }
  bool id(int64_t value) {
    if (depth != 1) refuse();
    entries.emplace_back(std::move(token), value);
    return true;
  }
  bool number_integer(number_integer_t v) override { return id(v); }
  bool number_unsigned(number_unsigned_t v) override { return id(v > INT64_MAX ? -1 : static_cast<int64_t>(v)); }
  bool number_float(number_float_t, const string_t&) override { return id(-1); }
  bool null() override { return id(-1); }
  bool boolean(bool) override { return id(-1); }
  bool string(string_t&) override { return id(-1); }
  bool binary(binary_t&) override { return id(-1); }
  bool start_object(std::size_t) override {
    if (depth++ != 0) refuse();
    return true;
  }
  bool key(string_t& k) override {
    token = std::move(k);
    return true;
  }
  bool end_object() override { return --depth, true; }
  bool start_array(std::size_t) override { refuse(); }
  bool end_array() override { refuse(); }
  bool parse_error(std::size_t byte, const std::string&, const nlohmann::detail::exception&) override {
    throw ConfigError("the tokenizer's vocabulary " + path + " is not valid JSON (parse error near byte " +
                      std::to_string(byte) + "); fix it");
  }

  std::string path;
  std::vector<std::pair<std::string, int64_t>> entries;
  std::string token;  // the key just read
  int depth = 0;
};

}  // namespace

std::string valid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    size_t bad = 0;
    const size_t len = valid_sequence(bytes, i, bad);
    if (len > 0) {
      out.append(bytes.substr(i, len));
      i += len;
    } else {
      out.append(kReplacement);
      i += bad;
    }
  }
  return out;
}

Tokenizer Tokenizer::load(const std::string& dir) {
  namespace fs = std::filesystem;
  for (const char* file : kFiles) {
    std::error_code ec;
    if (!fs::is_regular_file(fs::path(dir) / file, ec)) {
      throw ConfigError("the tokenizer folder " + dir + " has no " + file +
                        "; give a folder with vocab.json and merges.txt (scripts/train_tokenizer writes them)");
    }
  }
  Tokenizer t;
  t.char_of_byte_ = bytes_to_unicode();
  for (int b = 0; b < 256; ++b) t.byte_of_char_[t.char_of_byte_[b]] = static_cast<unsigned char>(b);
  t.read_vocab((fs::path(dir) / "vocab.json").string());
  t.read_merges((fs::path(dir) / "merges.txt").string());
  return t;
}

void Tokenizer::read_vocab(const std::string& path) {
  VocabReader reader(path);
  const std::string text = io::read_whole_file(path, "the tokenizer's vocabulary", 64 << 20);
  nlohmann::json::sax_parse(text, &reader);
  std::vector<std::pair<std::string, int64_t>>& vocab = reader.entries;
  if (vocab.empty()) reader.refuse();
  token_of_id_.assign(vocab.size(), std::string());
  id_of_token_.reserve(vocab.size());
  std::vector<bool> seen(vocab.size(), false);
  for (auto& [token, id] : vocab) {
    if (id < 0 || id >= static_cast<int64_t>(vocab.size()) || seen[static_cast<size_t>(id)]) {
      throw ConfigError("the tokenizer's vocabulary " + path + " gives '" + token.substr(0, 40) +
                        "' a bad id; its ids must be 0 to " + std::to_string(vocab.size() - 1) + ", each once");
    }
    seen[static_cast<size_t>(id)] = true;
    if (!id_of_token_.emplace(token, static_cast<int>(id)).second) {
      throw ConfigError("the tokenizer's vocabulary " + path + " has the token '" + token.substr(0, 40) +
                        "' twice; fix it");
    }
    token_of_id_[static_cast<size_t>(id)] = std::move(token);
  }
  for (int b = 0; b < 256; ++b) {
    const auto it = id_of_token_.find(char_of_byte_[b]);
    if (it == id_of_token_.end()) {
      throw ConfigError("the tokenizer's vocabulary " + path + " lacks the character of byte " + std::to_string(b) +
                        "; a byte-level BPE vocabulary holds all 256");
    }
    id_of_byte_[b] = it->second;
  }
  if (auto it = id_of_token_.find(std::string(kEndOfText)); it != id_of_token_.end()) end_of_text_ = it->second;
}

void Tokenizer::read_merges(const std::string& path) {
  std::ifstream merges(path);
  if (!merges) throw ConfigError("cannot read the tokenizer's merges " + path + "; check the path");
  const auto id = [&](const std::string& token) {
    const auto it = id_of_token_.find(token);
    return it == id_of_token_.end() ? -1 : it->second;
  };
  std::string line;
  for (int line_number = 1; std::getline(merges, line); ++line_number) {
    if (line.empty() || (line_number == 1 && line.rfind("#version", 0) == 0)) continue;
    const size_t space = line.find(' ');
    const std::string a = line.substr(0, space), b = space == std::string::npos ? "" : line.substr(space + 1);
    const int id_a = id(a), id_b = id(b), id_ab = id(a + b);
    if (a.empty() || b.empty() || b.find(' ') != std::string::npos || id_a < 0 || id_b < 0 || id_ab < 0) {
      throw ConfigError("the tokenizer's merges " + path + " line " + std::to_string(line_number) +
                        " is not two tokens of the vocabulary whose join is in it too; fix it");
    }
    merges_.add(id_a, id_b, id_ab);
  }
}

std::vector<int> Tokenizer::encode(std::string_view raw) const {
  const std::string text = valid_utf8(raw);
  std::vector<int> ids;
  std::string_view rest = text;
  while (!rest.empty()) {
    const size_t special = end_of_text_ ? rest.find(kEndOfText) : std::string_view::npos;
    encode_piece(rest.substr(0, special), ids);
    if (special == std::string_view::npos) break;
    ids.push_back(*end_of_text_);
    rest.remove_prefix(special + kEndOfText.size());
  }
  return ids;
}

void Tokenizer::encode_piece(std::string_view piece, std::vector<int>& out) const {
  const pcre2_code* code = pre_tokenizer();
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match(
      pcre2_match_data_create_from_pattern(code, nullptr), &pcre2_match_data_free);
  const auto subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
  for (PCRE2_SIZE at = 0; at < piece.size();) {
    // Every character starts a match (the alternatives cover letters, digits, whitespace and the rest).
    const int rc = pcre2_match(code, subject, piece.size(), at, PCRE2_NO_UTF_CHECK, match.get(), nullptr);
    const PCRE2_SIZE* span = pcre2_get_ovector_pointer(match.get());
    if (rc < 0 || span[0] != at || span[1] <= at) throw std::logic_error("the pre-tokenizer skipped a character");
    encode_word(piece.substr(at, span[1] - at), out);
    at = span[1];
  }
}

void Tokenizer::encode_word(std::string_view word, std::vector<int>& out) const {
  if (word.size() > kMaxWordBytes) {
    throw ConfigError("the text has a run of " + std::to_string(word.size()) + " bytes without a space or a change " +
                      "between letters, digits and symbols; the tokenizer takes runs up to 2 GiB, so split it");
  }
  const bool cached = word.size() <= kCachedWordBytes;
  if (cached) {
    if (auto it = cache_.find(std::string(word)); it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int> symbols(word.size());
  for (size_t i = 0; i < word.size(); ++i) symbols[i] = id_of_byte_[static_cast<unsigned char>(word[i])];
  const std::vector<int> ids = merges_.apply(symbols);
  out.insert(out.end(), ids.begin(), ids.end());
  if (!cached) return;
  if (cache_bytes_ > kCacheBytes) cache_.clear(), cache_bytes_ = 0;
  cache_bytes_ += kCacheEntryBytes + word.size() + ids.size() * sizeof(int);
  cache_.emplace(word, ids);
}

std::string Tokenizer::decode(const std::vector<int>& ids) const {
  std::string bytes;
  for (int id : ids) {
    if (id < 0 || id >= vocab_size()) {
      throw ConfigError("token id " + std::to_string(id) + " is outside the tokenizer's vocabulary of " +
                        std::to_string(vocab_size()));
    }
    const std::string& token = token_of_id_[static_cast<size_t>(id)];
    if (end_of_text_ && id == *end_of_text_) {
      bytes += kEndOfText;
      continue;
    }
    // Each character of the token stands for one byte (bytes_to_unicode).
    for (size_t i = 0; i < token.size();) {
      const auto c = static_cast<unsigned char>(token[i]);
      const size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
      const auto it = byte_of_char_.find(token.substr(i, len));
      if (it != byte_of_char_.end()) bytes += static_cast<char>(it->second);
      i += len;
    }
  }
  return bytes;
}

}  // namespace optimus::text
