// The BPE encoder's merge queue (text/bpe_merges.h) against the straightforward algorithm, GPT-2's
// own: find the pair of lowest rank, merge every occurrence left to right, repeat. On random merges
// and random words they give the same ids; on long words the queue takes O(n log n), where the
// straightforward algorithm takes a pass over the word per merge applied.
#include <catch2/catch.hpp>

#include <algorithm>
#include <climits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.h"
#include "text/bpe.h"
#include "unit/bpe_files.h"

using namespace optimus;

namespace {

using Merge = std::pair<std::string, std::string>;

// `count` random merges of tokens made of `letters`: each joins two tokens that exist (letters, or
// earlier joins) into a new token of at most `longest` letters, so each token has one merge making
// it and a merge's parts are older than it — as in a trained tokenizer.
std::vector<Merge> random_merges(std::mt19937& rng, const std::string& letters, size_t count, size_t longest) {
  std::vector<std::string> tokens;
  for (char c : letters) tokens.emplace_back(1, c);
  std::set<std::string> known(tokens.begin(), tokens.end());
  std::vector<Merge> merges;
  while (merges.size() < count) {
    const std::string& a = tokens[rng() % tokens.size()];
    const std::string& b = tokens[rng() % tokens.size()];
    if (a.size() + b.size() > longest || !known.insert(a + b).second) continue;
    merges.emplace_back(a, b);
    tokens.push_back(a + b);
  }
  return merges;
}

std::string random_word(std::mt19937& rng, const std::string& letters, size_t length) {
  std::string word;
  for (size_t i = 0; i < length; ++i) word += letters[rng() % letters.size()];
  return word;
}

// GPT-2's bpe(): the pair of lowest rank is merged, every occurrence of it left to right, until no
// pair has a merge; the tokens left, as ids (byte characters are their byte; joins 256 onwards).
std::vector<int> reference_ids(const std::string& word, const std::vector<Merge>& merges) {
  std::map<Merge, int> rank;
  std::map<std::string, int> id;
  for (size_t k = 0; k < merges.size(); ++k) {
    rank.emplace(merges[k], static_cast<int>(k));
    id.emplace(merges[k].first + merges[k].second, 256 + static_cast<int>(k));
  }
  std::vector<std::string> symbols;
  for (char c : word) symbols.emplace_back(1, c);
  for (;;) {
    int best = INT_MAX;
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      const auto it = rank.find({symbols[i], symbols[i + 1]});
      if (it != rank.end()) best = std::min(best, it->second);
    }
    if (best == INT_MAX) break;
    const Merge& pair = merges[static_cast<size_t>(best)];
    std::vector<std::string> merged;
    for (size_t i = 0; i < symbols.size(); ++i) {
      const bool hit = i + 1 < symbols.size() && symbols[i] == pair.first && symbols[i + 1] == pair.second;
      merged.push_back(hit ? symbols[i] + symbols[i + 1] : symbols[i]);
      i += hit ? 1 : 0;
    }
    symbols.swap(merged);
  }
  std::vector<int> ids;
  for (const std::string& s : symbols) ids.push_back(s.size() == 1 ? static_cast<unsigned char>(s[0]) : id.at(s));
  return ids;
}

}  // namespace

TEST_CASE("bpe: the merge queue gives the ids of GPT-2's straightforward algorithm on random words", "[text]") {
  std::mt19937 rng(23);
  // Few letters and many merges: long runs of one pair, overlapping pairs ("aaa"), long tokens.
  // All the letters: many merges apply once or twice in a word. Words up to 300 letters, so some
  // pass the cache's length and take the uncached path every time.
  const std::vector<std::pair<std::string, size_t>> cases = {
      {"ab", 30}, {"abc", 200}, {"abcdefghijklmnopqrstuvwxyz", 800}};  // letters, merges
  for (const auto& [letters, count] : cases) {
    test::TempDir dir;
    const std::vector<Merge> merges = random_merges(rng, letters, count, 12);
    test::write_tokenizer(dir.path, merges);
    const text::Tokenizer t = text::Tokenizer::load(dir.path.string());
    for (int k = 0; k < 1000; ++k) {
      const std::string word = random_word(rng, letters, rng() % (k < 900 ? 40 : 300));
      INFO(letters.size() << " letters, " << count << " merges, the word '" << word << "'");
      REQUIRE(t.encode(word) == reference_ids(word, merges));
      REQUIRE(t.encode(word) == reference_ids(word, merges));  // again, from the cache
    }
  }
}

// Run by its own ctest entry with a 10 s timeout (tests/CMakeLists.txt): the straightforward
// algorithm took minutes here, and loading the vocabulary took seconds.
TEST_CASE("bpe: a 65 536-token vocabulary loads and 1 MB of one word encodes quickly", "[.][text][slow]") {
  std::mt19937 rng(1);
  // Ranks 0-9 double a run of 'a' (a^2, a^4, ..., a^1024: ids 256-265). Then, as a trained tokenizer
  // would have them, every pair of the other letters (625, in random order), and joins of two pairs
  // into four letters until the vocabulary holds 65 536 tokens.
  std::vector<Merge> merges;
  for (std::string a = "a"; a.size() < 1024; a += a) merges.emplace_back(a, a);
  const std::string letters = "bcdefghijklmnopqrstuvwxyz";
  std::vector<std::string> pairs;
  for (char x : letters)
    for (char y : letters) pairs.push_back({x, y}), merges.emplace_back(std::string(1, x), std::string(1, y));
  std::shuffle(merges.begin() + 10, merges.end(), rng);
  for (std::set<std::string> fours; merges.size() < 65536 - 256 - 1;) {
    const std::string& x = pairs[rng() % pairs.size()];
    const std::string& y = pairs[rng() % pairs.size()];
    if (fours.insert(x + y).second) merges.emplace_back(x, y);
  }
  test::TempDir dir;
  test::write_tokenizer(dir.path, merges);
  const text::Tokenizer t = text::Tokenizer::load(dir.path.string());
  REQUIRE(t.vocab_size() == 65536);

  // 1 MB of random letters: every pair merge and thousands of the four-letter ones apply (a merge
  // of pairs removes one id for four letters, and a letter left between pairs adds one).
  const std::string word = random_word(rng, letters, 1'000'000);
  const std::vector<int> ids = t.encode(word);
  CHECK(ids.size() < word.size() * 6 / 10);
  CHECK(t.decode(ids) == word);

  // 1 MB of 'a': the doublings apply level by level, so the ids are the binary digits of 10^6 past
  // the largest token: 976 a^1024 (976 · 1024 = 999 424), then 576 = a^512 + a^64.
  std::vector<int> expected(976, 265);
  expected.push_back(264);  // a^512
  expected.push_back(261);  // a^64
  CHECK(t.encode(std::string(1'000'000, 'a')) == expected);
}
