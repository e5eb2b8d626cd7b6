// StagedPuts: values written ahead of their keys. A staged value is in a generation's blob
// file (or its inline bytes counted in it) with no index record, so no read finds it; the
// generation counts it (Generation::staged) until it is indexed or freed, so that maintenance
// does not drop a generation holding only staged values as empty. The commit pins the
// generations again (Generations::Rejoin) while it writes the records, as a Put pins the head
// while it writes: a generation retired meanwhile (eviction, Clear) took the bytes with it, and
// the value is written again into the head from the caller's memory (or the buffer StageOwned
// kept). The records go in one RocksDB write batch, under the stripes of all the keys: every
// key changes, or none, in memory and on disk (the WAL has the batch whole; without it, the
// atomic flush takes it whole).
#include <algorithm>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "format.h"
#include "store_impl.h"

namespace larder {

namespace {

// How many times a commit writes a value again whose generation was dropped since it was
// written; past it the commit fails (only a store evicting faster than one index write could
// get there).
constexpr int kMaxRewrites = 3;

class StagedPutsImpl final : public StagedPuts {
 public:
  explicit StagedPutsImpl(StoreImpl& store) : store_(store) {}
  ~StagedPutsImpl() override { AbandonAll(); }

  Status Stage(std::string_view key, std::string_view value, const PutOptions& opts) override {
    return Add(key, value, nullptr, opts);
  }

  Status StageOwned(std::string_view key, std::string&& value, const PutOptions& opts) override {
    // Kept whatever its size: an inline value's record points into it until the commit.
    auto bytes = std::make_shared<const std::string>(std::move(value));
    return Add(key, *bytes, bytes, opts);
  }

  Status Commit() override {
    Status result = store_.CommitStaged(LastOfEachKey());
    AbandonAll();  // those a later value of the same key replaced, and all if it failed
    puts_.clear();
    return result;
  }

  size_t size() const override { return puts_.size(); }

 private:
  Status Add(std::string_view key, std::string_view value, std::shared_ptr<const std::string> bytes,
             const PutOptions& opts) {
    StagedPut p;
    if (Status s = store_.StagePut(key, value, std::move(bytes), opts, &p); !s.ok()) return s;
    puts_.push_back(std::move(p));
    return Status::OK();
  }

  // A key staged twice gets its last value, as by Puts in order; the earlier ones are never
  // indexed.
  std::vector<StagedPut*> LastOfEachKey() {
    std::vector<StagedPut*> last;
    last.reserve(puts_.size());
    std::unordered_set<std::string_view> seen;
    for (auto it = puts_.rbegin(); it != puts_.rend(); ++it) {
      if (seen.insert(it->key).second) last.push_back(&*it);
    }
    std::reverse(last.begin(), last.end());
    return last;
  }

  void AbandonAll() {
    for (StagedPut& p : puts_) store_.AbandonStagedPut(&p);
  }

  StoreImpl& store_;
  std::vector<StagedPut> puts_;
};

}  // namespace

std::unique_ptr<StagedPuts> StoreImpl::StagePuts() {
  return std::make_unique<StagedPutsImpl>(*this);
}

Status StoreImpl::StagePut(std::string_view key, std::string_view value,
                           std::shared_ptr<const std::string> bytes, const PutOptions& opts,
                           StagedPut* p) {
  if (opts.mode != PutMode::kAlways || opts.keep_ttl) {
    return Status::InvalidArgument("a staged put takes no NX, XX or KEEPTTL");
  }
  if (Status s = CheckPut(key, value.size()); !s.ok()) return s;
  p->key = std::string(key);
  p->value = value;
  p->bytes = std::move(bytes);
  p->hash = format::KeyHash(key);
  p->expire_at_ms = opts.expire_at_ms;
  if (opts.expire_at_ms != 0 && opts.expire_at_ms <= NowMs()) {
    p->remove = true;  // as Put: the key goes away, nothing is written
    return Status::OK();
  }
  p->value_hash = format::Checksum(value);
  return WriteStaged(p, !opts.never_wait_for_writers);
}

Status StoreImpl::WriteStaged(StagedPut* p, bool wait_for_room) {
  if (Status s = MakeRoom(format::StoredBytes(p->key.size(), p->value.size())); !s.ok()) return s;
  auto ticket =
      WriteVersion(p->hash, p->key, p->value, HandedOver{nullptr, p->bytes}, wait_for_room,
                   p->value_hash, p->expire_at_ms, NowMs(), &p->e, &p->rec);
  if (!ticket.ok()) return ticket.status();
  Generation& gen = ticket->gen();
  gen.staged++;  // see the top of the file
  p->gen = ticket->ptr();
  RotateIfFull(gen);
  return Status::OK();
}

Result<std::vector<Generations::WriteTicket>> StoreImpl::PinStaged(
    const std::vector<StagedPut*>& puts) {
  for (int rewrites = 0;; ++rewrites) {
    std::vector<Generations::WriteTicket> pins;
    pins.reserve(puts.size());
    bool dropped = false;
    for (StagedPut* p : puts) {
      if (p->remove) continue;
      std::optional<Generations::WriteTicket> t = gens_->Rejoin(p->gen);
      if (!t) {
        dropped = true;
        break;
      }
      pins.push_back(std::move(*t));
    }
    if (!dropped) return pins;
    pins.clear();
    if (rewrites == kMaxRewrites) {
      return Status::Busy("the generation of a staged value was dropped " +
                          std::to_string(kMaxRewrites + 1) + " times before it was indexed");
    }
    for (StagedPut* p : puts) {
      if (p->remove || !p->gen->retired.load()) continue;
      // Its generation is being dropped, and the value's bytes with it.
      p->gen->staged--;
      p->gen.reset();
      if (Status s = WriteStaged(p, /*wait_for_room=*/false); !s.ok()) return s;
    }
  }
}

namespace {

// The stripes of `puts`' keys, each once, taken in one order (their addresses): no other path
// holds two stripes, and two commits cannot each wait for the other's.
std::vector<std::unique_lock<std::mutex>> LockStripes(std::vector<std::mutex*> stripes) {
  std::sort(stripes.begin(), stripes.end());
  stripes.erase(std::unique(stripes.begin(), stripes.end()), stripes.end());
  std::vector<std::unique_lock<std::mutex>> held;
  held.reserve(stripes.size());
  for (std::mutex* m : stripes) held.emplace_back(*m);
  return held;
}

}  // namespace

Status StoreImpl::CommitStaged(const std::vector<StagedPut*>& puts) {
  if (Status s = CheckWritable(); !s.ok()) return s;
  Result<std::vector<Generations::WriteTicket>> pins = PinStaged(puts);
  if (!pins.ok()) return pins.status();
  std::vector<std::mutex*> stripes;
  for (const StagedPut* p : puts) stripes.push_back(&Stripe(p->hash));
  auto held = LockStripes(std::move(stripes));
  rocksdb::WriteBatch batch;
  std::vector<std::optional<Located>> olds;
  olds.reserve(puts.size());
  for (StagedPut* p : puts) {
    const std::optional<Located>& old = olds.emplace_back(LookupExact(p->hash, p->key));
    if (p->remove) {
      if (old) AddRemoval(&batch, p->hash, p->key, *old);
      continue;
    }
    AddVersion(&batch, p->hash, p->key, &p->e, p->rec, *p->gen, old);
  }
  const Status written = WriteIndex(&batch, "writing the index");
  for (size_t i = 0; i < puts.size(); ++i) {
    StagedPut* p = puts[i];
    if (p->remove) {
      p->remove = false;
      if (written.ok() && olds[i]) Removed(*olds[i]);
      continue;
    }
    SettleVersion(written.ok(), p->hash, p->key, p->e, *p->gen, olds[i],
                  HandedOver{nullptr, p->bytes});
    if (written.ok()) counters_.bytes_written += p->value.size();
    p->gen->staged--;
    p->gen.reset();
  }
  return written;
}

void StoreImpl::AbandonStagedPut(StagedPut* p) {
  if (!p->gen) return;
  // A generation retired meanwhile takes the value's bytes with it; else, pinned, its segments
  // still name its files.
  if (auto ticket = gens_->Rejoin(p->gen)) {
    if (MayWriteBehind(HandedOver{nullptr, p->bytes})) {
      std::lock_guard stripe(Stripe(p->hash));
      SettlePut(p->hash, p->key, p->e);  // never indexed: a failed background write is let go
    }
    AbandonStaged(p->e);
  }
  p->gen->staged--;
  p->gen.reset();
}

}  // namespace larder
