#include "cluster/migrator.h"

#include "cluster/slot_keys.h"
#include "log.h"

namespace larder::server::cluster {

namespace {

constexpr int kLinkTimeoutMs = 30000;      // per wait on the destination's socket
constexpr size_t kPipelineDepth = 16;      // commands sent before their replies are read
constexpr int kCatchUpRounds = 10;         // rounds of re-sending keys written meanwhile
constexpr size_t kFewEnoughToFreeze = 64;  // noted keys small enough to ban writes for

using common::ReplyHeader;
using common::RespConnection;

// Reads one reply of a migration command (+OK, :n or an error): the reason it is not a
// success, or nullopt.
std::optional<std::string> ReadReply(RespConnection& link) {
  ReplyHeader h;
  if (!link.ReadHeader(&h)) return link.error();
  if (h.type == '-') return "the migration target replied " + h.line;
  if (h.type == '$' || h.type == '*') {
    link.Abandon(std::string("unexpected ") + (h.type == '$' ? "bulk" : "array") +
                 " reply from the migration target");
    return link.error();
  }
  return std::nullopt;
}

std::optional<std::string> Call(RespConnection& link, const std::vector<std::string_view>& args) {
  if (!link.SendCommand(args)) return link.error();
  return ReadReply(link);
}

}  // namespace

SlotMigrator::~SlotMigrator() {
  Abort("the server is shutting down");
  if (thread_.joinable()) thread_.join();
}

void SlotMigrator::Abort(std::string why) {
  std::lock_guard lock(mu_);
  if (done_) return;
  abort_reason_ = std::move(why);
  aborting_.store(true, std::memory_order_release);
}

std::optional<std::string> SlotMigrator::AbortReason() {
  if (!aborting_.load(std::memory_order_acquire)) return std::nullopt;
  std::lock_guard lock(mu_);
  return abort_reason_;
}

std::optional<std::string> SlotMigrator::Start(SlotRange range, const std::string& destination_id) {
  auto t = state_.Current();
  const ClusterNode* dst = t ? t->Find(destination_id) : nullptr;
  if (dst == nullptr) return "ERR Can't find the destination node id";
  const ClusterNode* myself = t->Find(state_.MyId());
  if (state_.AnyMigrated(range)) {
    return "ERR Can't migrate slot which has been migrated";  // the switch is still pending
  }
  for (int s = range.first; s <= range.last; ++s) {
    if (myself == nullptr || t->OwnerOf(s) != myself) {
      return "ERR Can't migrate slot which doesn't belong to me";
    }
  }
  if (!myself->master) return "ERR Slave can't migrate slot";
  if (!dst->master) return "ERR Can't migrate slot to a slave";
  if (dst == myself) return "ERR Can't migrate slot to myself";
  std::unique_lock lock(mu_);
  if (!done_) return "ERR There is already a migrating job";
  if (thread_.joinable()) thread_.join();  // the last one, finished
  done_ = false;
  error_.clear();
  abort_reason_.clear();
  aborting_.store(false, std::memory_order_release);
  range_ = range;
  noted_.clear();
  state_.BeginMigration(range, destination_id);
  active_.store(true, std::memory_order_release);  // writes are noted from here on
  thread_ = std::thread([this, range, d = *dst] { Run(range, d); });
  return std::nullopt;
}

std::optional<std::string> SlotMigrator::Wait(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  auto finished = [this] { return done_; };
  if (timeout.count() == 0) {
    done_cv_.wait(lock, finished);
  } else if (!done_cv_.wait_for(lock, timeout, finished)) {
    return std::nullopt;
  }
  return error_;
}

void SlotMigrator::NoteWrite(std::string_view key) {
  std::lock_guard lock(mu_);
  if (range_ && range_->Contains(KeySlot(key))) noted_.emplace(key);
}

std::vector<std::string> SlotMigrator::TakeNoted() {
  std::lock_guard lock(mu_);
  std::vector<std::string> keys(noted_.begin(), noted_.end());
  noted_.clear();
  return keys;
}

void SlotMigrator::Run(SlotRange range, const ClusterNode& destination) {
  RespConnection link({"", destination.host, std::to_string(destination.port)}, kLinkTimeoutMs);
  std::optional<std::string> error;
  if (!link.Connect("", password_())) error = link.error();  // AUTH with this node's password
  if (!error) error = Migrate(range, link);
  active_.store(false, std::memory_order_release);
  const std::string where = destination.host + ":" + std::to_string(destination.port);
  if (error) {
    // Best effort: the destination drops what it received (it also does when the link closes).
    if (!link.broken()) (void)Call(link, {"CLUSTER", "IMPORT", range.ToString(), "2"});
    Log(LogLevel::kWarning,
        "migrating slots " + range.ToString() + " to " + where + " failed: " + *error);
  } else {
    Log(LogLevel::kNotice, "migrated slots " + range.ToString() + " to " + where);
  }
  // Slots the topology gave away before this end: their keys go now (this node serves them no
  // more, and a later topology giving them back must not find them), but for a key of a slot
  // a topology gave back meanwhile (what clients write there stays).
  for (const SlotRange& gone : state_.FinishMigration(!error)) {
    for (const std::string& key : KeysInRange(store_, gone)) {
      if (state_.Route({KeySlot(key), /*write=*/true}) && store_.Delete(key).ok()) deleted_(key);
    }
  }
  std::lock_guard lock(mu_);
  done_ = true;
  error_ = error ? "ERR " + *error : "";
  range_.reset();
  noted_.clear();
  done_cv_.notify_all();
}

std::optional<std::string> SlotMigrator::Migrate(SlotRange range, RespConnection& link) {
  if (auto e = Call(link, {"CLUSTER", "IMPORT", range.ToString(), "0"})) return e;
  std::vector<std::string> keys = KeysInRange(store_, range);
  if (auto e = SendKeys(keys, link)) return e;
  for (int round = 0; round < kCatchUpRounds; ++round) {
    keys = TakeNoted();
    if (keys.size() < kFewEnoughToFreeze) break;
    if (auto e = SendKeys(keys, link)) return e;
    keys.clear();
  }
  if (auto why = AbortReason()) return why;
  state_.ForbidWrites(range);
  drain_();  // every write admitted before the ban has finished; later ones are routed again
             // under the lock (dispatch.cc, RoutedAwayMeanwhile) and get TRYAGAIN
  std::vector<std::string> last = TakeNoted();
  keys.insert(keys.end(), last.begin(), last.end());
  if (auto e = SendKeys(keys, link)) return e;
  // FLUSHALL is not routed by slot, so the ban does not hold it off: look once more, after
  // the drain, before the range is handed over.
  if (auto why = AbortReason()) return why;
  return Call(link, {"CLUSTER", "IMPORT", range.ToString(), "1"});
}

std::optional<std::string> SlotMigrator::SendKeys(const std::vector<std::string>& keys,
                                                  RespConnection& link) {
  size_t in_flight = 0;
  auto read_replies = [&](size_t down_to) -> std::optional<std::string> {
    for (; in_flight > down_to; --in_flight) {
      if (auto e = ReadReply(link)) return e;
    }
    return std::nullopt;
  };
  for (const std::string& key : keys) {
    if (auto why = AbortReason()) return why;
    // A key written after this read was noted, and is read and sent again in a later round.
    auto value = store_.Get(key);
    if (!value.ok() && !value.status().IsNotFound()) return value.status().ToString();
    int64_t expire_at_ms = -1;  // -1: gone
    if (value.ok()) {
      auto info = store_.Info(key);
      if (info.ok()) expire_at_ms = info->expire_at_ms;
    }
    bool sent;
    if (expire_at_ms < 0) {
      sent = link.SendCommand({"DEL", key});
    } else if (expire_at_ms > 0) {
      sent = link.SendCommand({"SET", key, value->view(), "PXAT", std::to_string(expire_at_ms)});
    } else {
      sent = link.SendCommand({"SET", key, value->view()});
    }
    if (!sent) return link.error();
    if (++in_flight >= kPipelineDepth) {
      if (auto r = read_replies(kPipelineDepth / 2)) return r;
    }
  }
  return read_replies(0);
}

}  // namespace larder::server::cluster
