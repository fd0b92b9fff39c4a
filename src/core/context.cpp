// Contexts.
#include "core/context.h"

namespace optimus::core {

Context cpu_context(MemoryLedger& ledger) {
  Context ctx;
  ctx.device = Device::cpu;
  ctx.ledger = &ledger;
  return ctx;
}

}  // namespace optimus::core
