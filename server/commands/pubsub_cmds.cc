// Pub/Sub commands: SUBSCRIBE UNSUBSCRIBE PSUBSCRIBE PUNSUBSCRIBE PUBLISH PUBSUB, with Redis's
// replies: each (un)subscription is confirmed by its own [kind, name, count] array — a push
// in RESP3 — count being the client's channels plus patterns. Messages reach subscribers
// through core/pubsub.h. A RESP2 client with a subscription may run only the commands flagged
// `pubsub_context` (dispatch.cc refuses the others, as Redis does).
#include "commands/families.h"
#include "commands/subcommands.h"
#include "commands/util.h"

namespace larder::server {

namespace {

using Kind = PubSub::Kind;

void Confirm(Ctx& ctx, std::string_view what, const std::string* name) {
  resp::ReplyWriter::PushScope push(ctx.w);  // sent whatever CLIENT REPLY says, as in Redis
  ctx.w.PushHeader(3);
  ctx.w.BulkString(what);
  name ? ctx.w.BulkString(*name) : ctx.w.Null();
  ctx.w.Integer(ctx.client.subscriptions());
}

// SUBSCRIBE channel [channel ...] / PSUBSCRIBE pattern [pattern ...]
template <Kind kind>
void Subscribe(Ctx& ctx) {
  const std::string_view what = kind == Kind::kChannel ? "subscribe" : "psubscribe";
  for (size_t i = 1; i < ctx.argc(); ++i) {
    ctx.core.pubsub.Subscribe(ctx.client, kind, ctx.argv[i]);
    Confirm(ctx, what, &ctx.argv[i]);
  }
}

// UNSUBSCRIBE [channel ...] / PUNSUBSCRIBE [pattern ...]: without arguments, from every one
// (one confirmation each; a single one with a null name when there was none).
template <Kind kind>
void Unsubscribe(Ctx& ctx) {
  const std::string_view what = kind == Kind::kChannel ? "unsubscribe" : "punsubscribe";
  std::vector<std::string> names(ctx.argv.begin() + 1, ctx.argv.end());
  if (names.empty()) {
    names = ctx.core.pubsub.SubscriptionsOf(ctx.client, kind);
    if (names.empty()) return Confirm(ctx, what, nullptr);
  }
  for (const std::string& name : names) {
    ctx.core.pubsub.Unsubscribe(ctx.client, kind, name);
    Confirm(ctx, what, &name);
  }
}

void Publish(Ctx& ctx) {
  ctx.w.Integer(static_cast<int64_t>(ctx.core.pubsub.Publish(ctx.argv[1], ctx.argv[2])));
}

void PubSubChannels(Ctx& ctx) {
  if (ctx.argc() > 3) {
    return ReplySubcommandSyntax(ctx);
  }
  const std::vector<std::string> channels =
      ctx.core.pubsub.ActiveChannels(ctx.argc() == 3 ? ctx.argv[2] : "");
  ctx.w.ArrayHeader(channels.size());
  for (const std::string& c : channels) ctx.w.BulkString(c);
}

void PubSubNumSub(Ctx& ctx) {
  ctx.w.ArrayHeader(2 * (ctx.argc() - 2));
  for (size_t i = 2; i < ctx.argc(); ++i) {
    ctx.w.BulkString(ctx.argv[i]);
    ctx.w.Integer(static_cast<int64_t>(ctx.core.pubsub.NumSub(ctx.argv[i])));
  }
}

// SHARDCHANNELS [<pattern>] / SHARDNUMSUB [<shardchannel> ...]: Larder has no sharded
// Pub/Sub (SSUBSCRIBE is unknown), so there is never a shard channel: the replies are Redis's
// for a server without any.
void PubSubShardChannels(Ctx& ctx) {
  if (ctx.argc() > 3) return ReplySubcommandSyntax(ctx);
  ctx.w.ArrayHeader(0);
}

void PubSubShardNumSub(Ctx& ctx) {
  ctx.w.ArrayHeader(2 * (ctx.argc() - 2));
  for (size_t i = 2; i < ctx.argc(); ++i) {
    ctx.w.BulkString(ctx.argv[i]);
    ctx.w.Integer(0);
  }
}

void PubSubNumPat(Ctx& ctx) {
  ctx.w.Integer(static_cast<int64_t>(ctx.core.pubsub.NumPat()));
}

constexpr SubcommandRow kPubSubSubcommands[] = {
    {"channels", -2, PubSubChannels, "CHANNELS [<pattern>]",
     "Return the currently active channels matching a <pattern> (default: '*')."},
    {"numpat", 2, PubSubNumPat, "NUMPAT", "Return number of subscriptions to patterns."},
    {"numsub", -2, PubSubNumSub, "NUMSUB [<channel> ...]",
     "Return the number of subscribers for the specified channels, excluding pattern "
     "subscriptions (default: no channels)."},
    {"shardchannels", -2, PubSubShardChannels, "SHARDCHANNELS [<pattern>]",
     "Return the currently active shard level channels matching a <pattern> (default: '*'); "
     "Larder has none."},
    {"shardnumsub", -2, PubSubShardNumSub, "SHARDNUMSUB [<shardchannel> ...]",
     "Return the number of subscribers for the specified shard level channel(s); Larder has "
     "none."},
};

void PubSubCommand(Ctx& ctx) {
  RunSubcommand(ctx, kPubSubSubcommands);
}

constexpr CommandRow kRows[] = {
    {"subscribe", -2, "pubsub fast loading stale pubsub_context", kNoKeys,
     Subscribe<Kind::kChannel>},
    {"psubscribe", -2, "pubsub fast loading stale pubsub_context", kNoKeys,
     Subscribe<Kind::kPattern>},
    {"unsubscribe", -1, "pubsub fast loading stale pubsub_context", kNoKeys,
     Unsubscribe<Kind::kChannel>},
    {"punsubscribe", -1, "pubsub fast loading stale pubsub_context", kNoKeys,
     Unsubscribe<Kind::kPattern>},
    {"publish", 3, "pubsub fast loading stale may_replicate", kNoKeys, Publish},
    {"pubsub", -2, "pubsub fast loading stale", kNoKeys, PubSubCommand, kPubSubSubcommands},
};

}  // namespace

std::span<const CommandRow> PubSubCommands() {
  return kRows;
}

}  // namespace larder::server
