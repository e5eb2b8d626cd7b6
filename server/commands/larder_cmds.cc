// Larder's own commands.
#include "commands/families.h"
#include "commands/util.h"

namespace larder::server {

namespace {

// LARDER.PREFIX key [key ...] → how many leading keys exist (one round trip for LMCache's
// prefix lookups). Index only, no disk I/O; keys found past the first missing one are marked
// used for eviction (Store::PrefixCount).
void LarderPrefix(Ctx& ctx) {
  std::vector<std::string_view> keys(ctx.argv.begin() + 1, ctx.argv.end());
  ctx.w.Integer(static_cast<int64_t>(ctx.store().PrefixCount(keys)));
}

constexpr CommandRow kRows[] = {
    {"larder.prefix", -2, "readonly fast", WithFlags(kEveryArgKey, "RO"), LarderPrefix},
};

}  // namespace

std::span<const CommandRow> LarderCommands() {
  return kRows;
}

}  // namespace larder::server
