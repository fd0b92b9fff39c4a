// What the 3D product and the 3D layers share inside tp3d: the size check.
#include "tp3d/shared.h"

#include "core/errors.h"

namespace optimus::tp3d {

void check_multiple(const std::string& who, const std::string& what, int n, int by, const std::string& by_name,
                    const std::string& why) {
  if (n > 0 && n % by == 0) return;
  throw core::ConfigError(who + " needs " + what + " = " + std::to_string(n) + " to be a positive multiple of " +
                          by_name + " = " + std::to_string(by) + ", since " + why +
                          "; pad the matrices or choose another cube");
}

}  // namespace optimus::tp3d
