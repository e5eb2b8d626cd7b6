// Eviction: the disk budget, and dropping the oldest generation whole with reinsertion of the
// entries the policy keeps (see docs/architecture.md, "Eviction").
#include <rocksdb/write_batch.h>

#include <algorithm>

#include "format.h"
#include "store_impl.h"

namespace larder {

uint64_t StoreImpl::BudgetUsage() const {
  const uint64_t pending = wbm_->memory_usage();
  return gens_->FileBytes() + sfm_->GetTotalSize() + pending * (options_.wal ? 2 : 1);
}

Status StoreImpl::MakeRoom(uint64_t incoming) {
  if (incoming > budget_) {
    return Status::NoSpace("a value of " + std::to_string(incoming) +
                           " bytes cannot fit in max_disk_bytes (" + std::to_string(budget_) + ")");
  }
  if (BudgetUsage() + incoming <= budget_) return Status::OK();
  if (options_.eviction_policy == EvictionPolicy::kNone) {
    return Status::NoSpace("max_disk_bytes (" + std::to_string(budget_) +
                           ") reached and the eviction policy is none");
  }
  std::lock_guard lock(evict_mu_);
  return EvictUntil(budget_, incoming, options_.eviction_policy);
}

Status StoreImpl::EvictUntil(uint64_t target, uint64_t incoming, EvictionPolicy policy) {
  uint64_t estimate = BudgetUsage();
  while (estimate + incoming > target) {
    uint64_t freed = 0;
    if (Status s = EvictOldest(policy, &freed); !s.ok()) return s;
    if (freed == 0) break;
    estimate = std::min(BudgetUsage(), estimate - std::min(estimate, freed));
  }
  return Status::OK();
}

Status StoreImpl::EvictTo(uint64_t target_bytes) {
  if (Status s = CheckOpen(); !s.ok()) return s;
  EvictionPolicy p = options_.eviction_policy;
  if (p == EvictionPolicy::kNone) p = EvictionPolicy::kFifo;
  std::lock_guard lock(evict_mu_);
  return EvictUntil(target_bytes, 0, p);
}

void StoreImpl::MaybeRotate() {
  std::lock_guard lock(rotate_mu_);
  GenerationPtr head = gens_->Head();
  // A failed rotation leaves the head in place: writes keep going there and the next retries.
  if (head && head->bytes >= generation_bytes_) gens_->Rotate(Now()).PermitUncheckedError();
}

namespace {

// Whether the entry was last accessed while generation `id` or a later one was the head; 16-bit
// serial arithmetic, as live generations span far fewer than 2^15 ids.
bool AccessedSince(const Entry& e, uint64_t id) {
  return static_cast<int16_t>(e.access_gen - static_cast<uint16_t>(id)) >= 0;
}

// Whether `policy` keeps a live entry of the generation being evicted. `next_id` is its
// successor's id, `recent_id` the oldest of the newer half of the live generations.
bool PolicyKeeps(EvictionPolicy policy, const Entry& e, uint64_t next_id, uint64_t recent_id) {
  switch (policy) {
    case EvictionPolicy::kLruReuse:
      // Reused, and recently: an entry whose last use is older than half the window is more
      // likely done with (a conversation that ended) than about to be read, and copying it
      // would cost a write for nothing.
      return e.reuse > 0 && AccessedSince(e, recent_id);
    case EvictionPolicy::kLru:
      return e.reuse > 0 && AccessedSince(e, next_id);
    case EvictionPolicy::kFifo:
    case EvictionPolicy::kNone:
      return false;
  }
  return false;
}

}  // namespace

bool StoreImpl::Reinsert(RecordMember& m) {
  std::lock_guard stripe(Stripe(m.hash));
  if (!index_.Contains(m.at.entry)) return false;  // replaced or removed meanwhile
  auto ticket = gens_->BeginWrite();
  if (!ticket.ok()) return false;
  Generation& head = ticket->gen();
  Entry e = m.at.entry;
  e.reuse = 0;  // it must be reused again to be kept again
  e.flags &= static_cast<uint8_t>(~Entry::kDirty);
  format::IndexRecord rec = *format::IndexRecord::Decode(m.rec_bytes);
  rec.generation = head.id;
  rec.reuse_count = 0;
  rec.last_access_ms = e.last_access_ms;
  if (e.is_inline()) {
    e.seg = head.inline_seg;
    head.bytes += m.rec_bytes.size();
  } else {
    auto lease = gens_->LeasePartition(*ticket, Now());
    if (!lease.ok()) return false;
    BlobFile& f = lease->file();
    const uint64_t before = f.disk_bytes();
    uint64_t offset = 0;
    if (!f.AppendCopy(*m.at.seg.file, m.at.entry.offset, e.size, &offset).ok()) return false;
    gens_->AddFileBytes(f.disk_bytes() - before);
    head.bytes += f.disk_bytes() - before;
    e.seg = lease->seg();
    e.offset = rec.offset = offset;
    rec.partition = lease->partition();
  }
  const std::string ik = format::IndexKey(m.hash, m.key);
  rocksdb::WriteBatch batch;
  batch.Put(head.cf, ik, rec.Encode());
  batch.Delete(m.at.seg.gen->cf, ik);
  if (!db_->Write(WriteOpts(), &batch).ok()) return false;
  index_writes_++;
  if (index_.Replace(m.at.entry, e)) {
    m.at.seg.gen->live--;
    head.live++;
  }
  counters_.reinserted_keys++;
  counters_.reinserted_bytes += e.size;
  return true;
}

Status StoreImpl::EvictOldest(EvictionPolicy policy, uint64_t* freed) {
  *freed = 0;
  std::vector<GenerationPtr> all = gens_->All();
  if (all.size() == 1) {
    if (all[0]->bytes == 0) return Status::OK();  // nothing but an empty head
    std::lock_guard lock(rotate_mu_);
    if (Status s = gens_->Rotate(Now()); !s.ok()) return s;
    all = gens_->All();
  }
  GenerationPtr victim = all[0];
  const uint64_t next_id = all[1]->id;
  const uint64_t recent_id = all[all.size() / 2]->id;
  gens_->Retire(*victim);
  const int64_t now = Now();

  std::vector<RecordMember> keep, drop;
  ForEachRecord(*victim, [&](RecordMember m) {
    if (!m.at.entry.ExpiredAt(now) && PolicyKeeps(policy, m.at.entry, next_id, recent_id)) {
      keep.push_back(std::move(m));
    } else {
      drop.push_back(std::move(m));
    }
  });
  GenerationEvicted report;
  report.generation = victim->id;
  ReinsertKept(&keep, &drop, *victim, &report);
  const uint64_t bytes = victim->bytes;
  std::vector<bool> expired(drop.size()), gone(drop.size());
  // The index first: if its drop fails, every entry stays where it is, on disk and in memory.
  Status s = DropGeneration(victim, [&] {
    for (size_t i = 0; i < drop.size(); ++i) {
      const RecordMember& m = drop[i];
      std::lock_guard stripe(Stripe(m.hash));
      if (!index_.Erase(m.at.entry)) continue;
      victim->live--;
      gone[i] = true;
      expired[i] = m.at.entry.ExpiredAt(now);
      if (expired[i]) {
        counters_.expired_keys++;
        report.expired_keys++;
      } else {
        counters_.evicted_keys++;
        counters_.evicted_bytes += m.at.entry.size;
        report.evicted_keys++;
        report.evicted_bytes += m.at.entry.size;
      }
    }
  });
  if (!s.ok()) return s.IsNoSpace() ? s : Status::IOError("eviction failed: " + s.message());
  if (EventListener* l = options_.listener.get()) {
    for (size_t i = 0; i < drop.size(); ++i) {
      if (!gone[i]) continue;
      expired[i] ? l->OnExpired(drop[i].key) : l->OnEvicted(drop[i].key);
    }
  }
  EvictCompanions(drop, *victim, &report);
  if (options_.listener) options_.listener->OnGenerationEvicted(report);
  *freed = std::max<uint64_t>(1, bytes - std::min(bytes, report.reinserted_bytes));
  return Status::OK();
}

void StoreImpl::ReinsertKept(std::vector<RecordMember>* keep, std::vector<RecordMember>* drop,
                             const Generation& victim, GenerationEvicted* report) {
  // Most recently used first, up to the reinsertion cap; the rest is dropped. Among entries
  // last used in the same second, lower list positions first: a prefix's head before its tail,
  // since a reader stops at the first missing chunk.
  std::sort(keep->begin(), keep->end(), [](const RecordMember& a, const RecordMember& b) {
    const Entry& x = a.at.entry;
    const Entry& y = b.at.entry;
    if (x.last_access_ms != y.last_access_ms) return x.last_access_ms > y.last_access_ms;
    return x.position < y.position;
  });
  const uint64_t cap = static_cast<uint64_t>(options_.max_reinsert_fraction * victim.bytes);
  for (RecordMember& m : *keep) {
    if (report->reinserted_bytes + m.at.entry.size <= cap && Reinsert(m)) {
      report->reinserted_bytes += m.at.entry.size;
      report->reinserted_keys++;
    } else {
      drop->push_back(std::move(m));
    }
  }
}

void StoreImpl::EvictCompanions(const std::vector<RecordMember>& evicted, const Generation& victim,
                                GenerationEvicted* report) {
  for (const RecordMember& m : evicted) {
    for (const auto& [first, second] : options_.evict_together) {
      if (!m.key.ends_with(first)) continue;
      std::string companion = m.key.substr(0, m.key.size() - first.size()) + second;
      const uint64_t hash = format::KeyHash(companion);
      {
        std::lock_guard stripe(Stripe(hash));
        std::optional<Located> c = LookupExact(hash, companion);
        if (!c || (c->seg.gen && c->seg.gen->id == victim.id)) continue;  // absent, or goes too
        if (!RemoveLocked(hash, companion, *c).ok()) continue;
        counters_.evicted_keys++;
        counters_.evicted_bytes += c->entry.size;
        report->evicted_keys++;
        report->evicted_bytes += c->entry.size;
      }
      if (options_.listener) options_.listener->OnEvicted(companion);
    }
  }
}

}  // namespace larder
