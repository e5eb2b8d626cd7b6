// StagedPuts: values written ahead of their keys. A staged value is in a generation's blob
// file (or its inline bytes counted in it) with no index record, so no read finds it; the
// generation counts it (Generation::staged) until it is indexed or freed, so that maintenance
// does not drop a generation holding only staged values as empty. The
// commit pins the generation again (Generations::Rejoin) while it writes the record, as a Put
// pins the head while it writes: a generation retired meanwhile (eviction, Clear) took the bytes
// with it, and the value is written again into the head from the caller's memory (or the
// buffer StageOwned kept).
#include <string>
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

  Status Commit(size_t* committed) override {
    Status result;
    size_t n = 0;
    for (; n < puts_.size() && result.ok(); ++n) result = store_.CommitStaged(&puts_[n]);
    if (committed) *committed = result.ok() ? n : n - 1;
    AbandonAll();  // those from the failed one on (a committed one is no longer staged)
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

Result<Generations::WriteTicket> StoreImpl::PinStaged(StagedPut* p) {
  for (int rewrites = 0;; ++rewrites) {
    if (std::optional<Generations::WriteTicket> t = gens_->Rejoin(p->gen)) return std::move(*t);
    // Its generation is being dropped, and the value's bytes with it.
    p->gen->staged--;
    p->gen.reset();
    if (rewrites == kMaxRewrites) {
      return Status::Busy("the generation of a staged value was dropped " +
                          std::to_string(kMaxRewrites + 1) + " times before it was indexed");
    }
    if (Status s = WriteStaged(p, /*wait_for_room=*/false); !s.ok()) return s;
  }
}

Status StoreImpl::CommitStaged(StagedPut* p) {
  if (Status s = CheckWritable(); !s.ok()) return s;
  if (p->remove) {
    p->remove = false;
    std::lock_guard stripe(Stripe(p->hash));
    std::optional<Located> old = LookupExact(p->hash, p->key);
    return old ? RemoveLocked(p->hash, p->key, *old) : Status::OK();
  }
  Result<Generations::WriteTicket> ticket = PinStaged(p);
  if (!ticket.ok()) return ticket.status();
  std::lock_guard stripe(Stripe(p->hash));
  std::optional<Located> old = LookupExact(p->hash, p->key);
  Status committed =
      IndexVersion(p->hash, p->key, &p->e, p->rec, *p->gen, old, HandedOver{nullptr, p->bytes});
  p->gen->staged--;
  p->gen.reset();
  if (committed.ok()) counters_.bytes_written += p->value.size();
  return committed;
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
