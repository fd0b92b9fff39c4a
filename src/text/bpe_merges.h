// The merges of a byte-level BPE tokenizer, as ids, and how they apply to one word (a pre-token):
// the word is a linked list of symbols, and a priority queue holds the candidate merges of
// neighbouring symbols by (rank, position), so each merge costs O(log n) and a word of n bytes
// O(n log n) — the algorithm of Hugging Face `tokenizers` and tiktoken, with their ids.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace optimus::text {

class Merges {
 public:
  /// Adds the merge of tokens a and b into token ab, with the next rank (a merges.txt line's order
  /// among the merges); a pair given again keeps its first rank, as GPT-2's encoder does.
  void add(int a, int b, int ab);
  size_t size() const { return merges_.size(); }

  /// The ids of a word, given the ids of its symbols (one per byte): the merge of lowest rank among
  /// neighbouring pairs applies first, equal ranks left to right, until no neighbours have a merge.
  std::vector<int> apply(const std::vector<int>& symbols) const;

 private:
  struct Merge {
    int rank;
    int id;  // the merged token's
  };
  static uint64_t key(int a, int b) { return uint64_t{static_cast<uint32_t>(a)} << 32 | static_cast<uint32_t>(b); }
  std::unordered_map<uint64_t, Merge> merges_;  // (a, b) -> its rank and ab's id
};

}  // namespace optimus::text
