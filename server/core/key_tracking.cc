#include "core/key_tracking.h"

#include <algorithm>

#include "resp/reply_writer.h"

namespace larder::server {

namespace {

// The command this thread runs, while a CommandScope marks it: its client, and the keys it
// changed that BCAST clients are told of when it ends.
struct ThreadCommand {
  bool active = false;
  uint64_t client = 0;
  std::vector<std::pair<std::string, uint64_t>> changed;  // key, who changed it (0: nobody)
};
thread_local ThreadCommand current;

// Whether `a` is a prefix of `b` or `b` of `a` (Redis refuses overlapping BCAST prefixes).
bool Overlap(std::string_view a, std::string_view b) {
  return a.starts_with(b) || b.starts_with(a);
}

// The null sent in place of the keys on FLUSHALL, in the receiving connection's protocol
// (Redis uses the tracking client's, which sends a RESP3 null to a RESP2 redirect target).
std::string_view NullFor(const ClientState& to) {
  return to.resp == 3 ? "_\r\n" : "$-1\r\n";
}

}  // namespace

std::optional<std::string> KeyTracking::CheckEnable(const ClientState& client,
                                                    const TrackingOptions& o) const {
  if (!o.bcast && !o.prefixes.empty()) return "ERR PREFIX option requires BCAST mode to be enabled";
  const TrackingInfo now = InfoOf(client);
  if (now.on && now.bcast != o.bcast) {
    return "ERR You can't switch BCAST mode on/off before disabling tracking for this client, "
           "and then re-enabling it with a different mode.";
  }
  if (o.bcast && (o.optin || o.optout)) return "ERR OPTIN and OPTOUT are not compatible with BCAST";
  if (o.optin && o.optout) return "ERR You can't specify both OPTIN mode and OPTOUT mode";
  if ((o.optin && now.optout) || (o.optout && now.optin)) {
    return "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, "
           "and then re-enabling it with a different mode.";
  }
  for (size_t i = 0; i < o.prefixes.size(); ++i) {
    for (const std::string& have : now.prefixes) {
      if (Overlap(o.prefixes[i], have)) {
        return "ERR Prefix '" + o.prefixes[i] + "' overlaps with an existing prefix '" + have +
               "'. Prefixes for a single client must not overlap.";
      }
    }
    for (size_t j = i + 1; j < o.prefixes.size(); ++j) {
      if (Overlap(o.prefixes[i], o.prefixes[j])) {
        return "ERR Prefix '" + o.prefixes[i] + "' overlaps with another provided prefix '" +
               o.prefixes[j] + "'. Prefixes for a single client must not overlap.";
      }
    }
  }
  return std::nullopt;
}

void KeyTracking::Enable(ClientState& client, const TrackingOptions& o, const ClientState* target) {
  std::lock_guard<std::mutex> lock(mu_);
  Tracker& t = trackers_[client.id];
  t.self = &client;
  t.target = target;
  t.redirect = o.redirect;
  static_cast<TrackingMode&>(t) = o;
  t.broken = false;
  if (o.bcast) {
    std::vector<std::string> add = o.prefixes;
    if (add.empty()) add.emplace_back();  // no PREFIX: every key
    for (std::string& p : add) {
      if (!t.prefixes.insert(p).second) continue;
      std::vector<uint64_t>& ids = prefix_clients_[std::move(p)];
      ids.push_back(client.id);
    }
  }
  client.tracking = true;
  tracker_count_.store(trackers_.size(), std::memory_order_relaxed);
  UpdateActive();
}

void KeyTracking::DropPrefixesLocked(uint64_t id, Tracker& t) {
  for (const std::string& p : t.prefixes) {
    auto it = prefix_clients_.find(p);
    if (it == prefix_clients_.end()) continue;
    std::erase(it->second, id);
    if (it->second.empty()) prefix_clients_.erase(it);
  }
  t.prefixes.clear();
}

void KeyTracking::Disable(ClientState& client) {
  if (!client.tracking) return;  // every disconnect comes here: no lock for most
  std::lock_guard<std::mutex> lock(mu_);
  auto it = trackers_.find(client.id);
  if (it != trackers_.end()) {
    DropPrefixesLocked(client.id, it->second);
    trackers_.erase(it);
  }
  client.tracking = false;
  tracker_count_.store(trackers_.size(), std::memory_order_relaxed);
  UpdateActive();
}

void KeyTracking::TargetGone(uint64_t id) {
  if (tracker_count_.load(std::memory_order_relaxed) == 0) return;  // every disconnect
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [tracker_id, t] : trackers_) {
    if (t.target != nullptr && t.target->id == id) t.target = nullptr;
  }
}

void KeyTracking::Remember(const ClientState& client, const std::vector<std::string_view>& keys,
                           int64_t max_keys) {
  if (keys.empty()) return;
  std::vector<Message> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = trackers_.find(client.id);
    if (it == trackers_.end() || it->second.bcast) return;
    const Tracker& t = it->second;
    if ((t.optin && !client.tracking_caching) || (t.optout && client.tracking_caching)) return;
    for (std::string_view key : keys) {
      auto entry = table_.find(key);
      if (entry == table_.end()) entry = table_.try_emplace(std::string(key)).first;
      std::vector<uint64_t>& ids = entry->second;
      // Ids of clients that stopped tracking go here, so that a key read by many short-lived
      // connections keeps only the live ones.
      items_ -= std::erase_if(ids, [this](uint64_t id) { return !trackers_.contains(id); });
      if (std::find(ids.begin(), ids.end(), client.id) != ids.end()) continue;
      ids.push_back(client.id);
      ++items_;
    }
    while (max_keys > 0 && table_.size() > static_cast<size_t>(max_keys)) {
      InvalidateEntryLocked(table_.begin(), 0, &out);  // forgotten: told as a change
    }
    UpdateActive();
  }
  Send(out);
}

std::optional<KeyTracking::Message> KeyTracking::MessageFor(Tracker& t,
                                                            std::optional<std::string_view> keys) {
  const ClientState* to = t.self;
  if (t.redirect != 0) {
    if (t.target == nullptr) {
      t.broken = true;
      if (t.self->resp != 3) return std::nullopt;
      const std::string id = std::to_string(t.redirect);
      return Message{t.self->push, std::make_shared<const std::string>(
                                       "*2\r\n$21\r\ntracking-redir-broken\r\n:" + id + "\r\n")};
    }
    to = t.target;
  }
  std::string frame;
  if (to->resp == 3) {
    frame = "*2\r\n$10\r\ninvalidate\r\n";
  } else if (t.redirect != 0 && to->subscribed()) {
    frame = "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n";
  } else {
    return std::nullopt;  // RESP2 has no push to carry it
  }
  frame.append(keys ? *keys : NullFor(*to));
  return Message{to->push, std::make_shared<const std::string>(std::move(frame))};
}

void KeyTracking::Send(std::vector<Message>& out) {
  for (Message& m : out) m.sink->Push(std::move(m.frame));
}

void KeyTracking::InvalidateEntryLocked(Table::iterator entry, uint64_t by,
                                        std::vector<Message>* out) {
  const std::string keys = resp::BulkArrayFrame({entry->first});
  for (uint64_t id : entry->second) {
    auto t = trackers_.find(id);
    if (t == trackers_.end() || t->second.bcast) continue;  // stopped, or switched mode
    if (t->second.noloop && id == by) continue;
    if (auto m = MessageFor(t->second, keys)) out->push_back(std::move(*m));
  }
  items_ -= entry->second.size();
  table_.erase(entry);
}

void KeyTracking::Invalidate(std::string_view key, bool by_command) {
  if (!active_.load(std::memory_order_acquire)) return;
  // Redis skips a NOLOOP client's invalidation whenever that client's command is running,
  // also for a key its command evicted or found expired, which leaves the client a stale
  // copy: here only the client's own changes are skipped.
  const uint64_t by = current.active && by_command ? current.client : 0;
  std::vector<Message> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!prefix_clients_.empty()) {
      if (current.active) {
        current.changed.emplace_back(std::string(key), by);
        if (current.changed.size() >= kMaxBatchedKeys) {
          BroadcastLocked(current.changed, &out);
          current.changed.clear();
        }
      } else {
        BroadcastLocked({{std::string(key), 0}}, &out);
      }
    }
    auto entry = table_.find(key);
    if (entry != table_.end()) {
      InvalidateEntryLocked(entry, by, &out);
      UpdateActive();
    }
  }
  Send(out);
}

void KeyTracking::InvalidateAll() {
  std::vector<Message> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, t] : trackers_) {
      if (auto m = MessageFor(t, std::nullopt)) out.push_back(std::move(*m));
    }
    table_.clear();
    items_ = 0;
    UpdateActive();
  }
  Send(out);
}

void KeyTracking::BroadcastLocked(const std::vector<std::pair<std::string, uint64_t>>& changes,
                                  std::vector<Message>* out) {
  for (auto& [prefix, ids] : prefix_clients_) {
    std::map<std::string_view, uint64_t> keys;  // sorted, each with its last changer
    for (const auto& [key, by] : changes) {
      if (std::string_view(key).starts_with(prefix)) keys[key] = by;
    }
    if (keys.empty()) continue;
    for (uint64_t id : ids) {
      auto t = trackers_.find(id);
      if (t == trackers_.end()) continue;
      std::vector<std::string_view> sent;
      for (const auto& [key, by] : keys) {
        if (!(t->second.noloop && by == id)) sent.push_back(key);
      }
      if (sent.empty()) continue;
      if (auto m = MessageFor(t->second, resp::BulkArrayFrame(sent))) out->push_back(std::move(*m));
    }
  }
}

KeyTracking::CommandScope::CommandScope(KeyTracking& tracking, const ClientState& client)
    : tracking_(tracking), outermost_(!current.active) {
  if (!outermost_) return;
  current.active = true;
  current.client = client.id;
}

KeyTracking::CommandScope::~CommandScope() {
  if (!outermost_) return;
  current.active = false;
  if (current.changed.empty()) return;
  std::vector<Message> out;
  {
    std::lock_guard<std::mutex> lock(tracking_.mu_);
    tracking_.BroadcastLocked(current.changed, &out);
  }
  current.changed.clear();
  Send(out);
}

TrackingInfo KeyTracking::InfoOf(const ClientState& client) const {
  TrackingInfo info;
  if (!client.tracking) return info;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = trackers_.find(client.id);
  if (it == trackers_.end()) return info;
  const Tracker& t = it->second;
  info.on = true;
  static_cast<TrackingMode&>(info) = t;
  info.broken_redirect = t.broken;
  info.redirect = static_cast<int64_t>(t.redirect);
  info.prefixes.assign(t.prefixes.begin(), t.prefixes.end());
  return info;
}

size_t KeyTracking::items() const {
  std::lock_guard<std::mutex> lock(mu_);
  return items_;
}

void KeyTracking::UpdateActive() {
  keys_.store(table_.size(), std::memory_order_relaxed);
  prefix_count_.store(prefix_clients_.size(), std::memory_order_relaxed);
  active_.store(!table_.empty() || !prefix_clients_.empty(), std::memory_order_release);
}

}  // namespace larder::server
