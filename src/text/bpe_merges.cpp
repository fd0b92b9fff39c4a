// BPE merges applied to one word with a linked list of symbols and a queue of candidate merges.
#include "text/bpe_merges.h"

#include <functional>
#include <queue>
#include <utility>

namespace optimus::text {

void Merges::add(int a, int b, int ab) {
  merges_.emplace(key(a, b), Merge{static_cast<int>(merges_.size()), ab});
}

std::vector<int> Merges::apply(const std::vector<int>& symbols) const {
  // The word as a doubly linked list over its n byte positions: symbol i holds id[i] and links to
  // its neighbours prev[i] and next[i] (-1 at the ends). Merging i with next[i] gives i the merged
  // id and unlinks next[i], whose id becomes -1. Positions fit int32: a word is under 2 GiB.
  const auto n = static_cast<int32_t>(symbols.size());
  std::vector<int32_t> id(symbols.begin(), symbols.end()), prev(symbols.size()), next(symbols.size());
  for (int32_t i = 0; i < n; ++i) prev[i] = i - 1, next[i] = i + 1 < n ? i + 1 : -1;

  // Candidates (rank, i): the pair of symbol i and its right neighbour has a merge of that rank.
  // The smallest is on top, so equal ranks go left to right. A merge changes the pairs around it;
  // a candidate whose pair has since changed is stale and skipped when it comes to the top (its
  // position's pair would now have another rank), and the new pairs are pushed.
  using Candidate = std::pair<int, int32_t>;
  std::vector<Candidate> initial;
  const auto candidate = [&](int32_t i, auto&& emit) {
    if (i < 0 || next[i] < 0) return;
    const auto it = merges_.find(key(id[i], id[next[i]]));
    if (it != merges_.end()) emit(Candidate{it->second.rank, i});
  };
  for (int32_t i = 0; i < n; ++i) candidate(i, [&](Candidate c) { initial.push_back(c); });
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue(std::greater<>(), std::move(initial));
  const auto push = [&](Candidate c) { queue.push(c); };

  while (!queue.empty()) {
    const auto [rank, i] = queue.top();
    queue.pop();
    if (id[i] < 0 || next[i] < 0) continue;  // i was merged into its left neighbour, or is last now
    const auto it = merges_.find(key(id[i], id[next[i]]));
    if (it == merges_.end() || it->second.rank != rank) continue;  // stale: the pair at i has changed
    const int32_t j = next[i];
    id[i] = it->second.id, id[j] = -1;
    next[i] = next[j];
    if (next[j] >= 0) prev[next[j]] = i;
    candidate(prev[i], push);  // the new pairs: (left neighbour, merged) and (merged, right neighbour)
    candidate(i, push);
  }
  std::vector<int> ids;
  for (int32_t i = 0; i >= 0 && i < n; i = next[i]) ids.push_back(id[i]);
  return ids;
}

}  // namespace optimus::text
