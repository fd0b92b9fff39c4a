// The meta communicator's two pieces of logic: a world's checks, and the split rule (a declared
// size by name, this rank's key as its rank). The collectives are no-ops in the header.
#include "comm/meta_communicator.h"

#include <stdexcept>

namespace optimus::comm {

MetaCommunicator::MetaCommunicator(int rank, int size, std::string name, SplitSizes splits, CommLedger& ledger)
    : Communicator(rank, size, std::move(name), ledger), splits_(std::move(splits)) {}

std::unique_ptr<MetaCommunicator> MetaCommunicator::world(int size, int rank, SplitSizes splits, CommLedger& ledger) {
  if (size < 1 || rank < 0 || rank >= size) {
    throw std::invalid_argument("MetaCommunicator::world: rank " + std::to_string(rank) + " of " +
                                std::to_string(size) + " ranks; pass a size of 1 or more and a rank in [0, size)");
  }
  return std::unique_ptr<MetaCommunicator>(new MetaCommunicator(rank, size, "world", std::move(splits), ledger));
}

std::unique_ptr<Communicator> MetaCommunicator::do_split(int /*color*/, int key, std::string name) {
  const auto declared = splits_.find(name);
  if (declared == splits_.end()) {
    throw std::logic_error("meta split of '" + this->name() + "' into '" + name + "': no size was declared for '" +
                           name + "'; a meta world must be told the size of every communicator it is split into");
  }
  const int size = declared->second;
  if (key < 0 || key >= size) {
    throw std::logic_error("meta split into '" + name + "': key " + std::to_string(key) +
                           " is not a rank of its declared " + std::to_string(size) +
                           " ranks; a meta split takes the key as the rank, so keys must be 0..size-1");
  }
  return std::unique_ptr<Communicator>(new MetaCommunicator(key, size, std::move(name), splits_, ledger()));
}

}  // namespace optimus::comm
