// Stats: a snapshot of a Store's statistics. The fields and their meaning are declared once,
// in stats_fields.h.
#pragma once

#include <cstdint>

#include "larder/stats_fields.h"

namespace larder {

struct Stats {
#define LARDER_STATS_MEMBER(name, doc) uint64_t name = 0;
  LARDER_STATS(LARDER_STATS_MEMBER)
#undef LARDER_STATS_MEMBER
};

}  // namespace larder
