// The grids: the square check and the two splits that make row_comm and col_comm.
#include "comm/grid.h"

#include <string>

#include "core/errors.h"

namespace optimus::comm {

int Grid2D::side(int p, const std::string& who) {
  int q = 0;
  while ((q + 1) * (q + 1) <= p) ++q;
  if (q * q == p && p > 0) return q;
  const std::string below = q > 0 ? std::to_string(q * q) + " or " : "";
  throw core::ConfigError("the 2D layout needs a square number of ranks (q×q), but " +
                          (who.empty() ? "the world has " + std::to_string(p) : who) + "; run with " + below +
                          std::to_string((q + 1) * (q + 1)) + " ranks");
}

Grid2D::Grid2D(Communicator& world, bool overlap)
    : world_(&world), q_(side(world.size())), i_(world.rank() / q_), j_(world.rank() % q_), overlap_(overlap) {
  // Same i → one row, ordered by j; same j → one column, ordered by i.
  row_comm_ = world.split(i_, j_, "row");
  col_comm_ = world.split(j_, i_, "col");
}

}  // namespace optimus::comm
