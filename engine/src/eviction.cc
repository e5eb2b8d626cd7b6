// Eviction: the disk budget, and dropping the oldest generation whole with reinsertion of the
// entries the policy keeps (see docs/architecture.md, "Eviction").
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <iterator>
#include <map>

#include "format.h"
#include "rocks_status.h"
#include "store_impl.h"
#include "sync_point.h"

namespace larder {

uint64_t StoreImpl::BudgetUsage() const {
  const uint64_t pending = wbm_->memory_usage();
  return gens_->FileBytes() + sfm_->GetTotalSize() + pending * (options_.wal ? 2 : 1);
}

Status StoreImpl::MakeRoom(uint64_t incoming) {
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
  // In place, the policy may keep most of each generation it evicts (all of it was used
  // since): if as many evictions as there are generations have not made room, the rest keep
  // nothing, so a write never waits on a store that cannot shrink.
  size_t keeping_rounds = gens_->size();
  while (estimate + incoming > target) {
    uint64_t freed = 0;
    const EvictionPolicy p = keeping_rounds > 0 ? policy : EvictionPolicy::kFifo;
    if (keeping_rounds > 0) --keeping_rounds;
    if (Status s = EvictOldest(p, estimate + incoming - target, &freed); !s.ok()) return s;
    if (freed == 0) break;
    estimate = std::min(BudgetUsage(), estimate - std::min(estimate, freed));
  }
  return Status::OK();
}

Status StoreImpl::EvictTo(uint64_t target_bytes) {
  if (Status s = CheckWritable(); !s.ok()) return s;
  EvictionPolicy p = options_.eviction_policy;
  if (p == EvictionPolicy::kNone) p = EvictionPolicy::kFifo;
  std::lock_guard lock(evict_mu_);
  return EvictUntil(target_bytes, 0, p);
}

void StoreImpl::MaybeRotate() {
  std::lock_guard lock(rotate_mu_);
  GenerationPtr head = gens_->Head();
  if (!head) return;
  // Hits close the head only while the generations are few enough: in a store read far more
  // than written they would pile up faster than eviction drops them. A failed rotation leaves
  // the head in place: writes keep going there and the next retries.
  const bool by_hits = head->bytes + hit_bytes_.load() >= generation_bytes_ &&
                       gens_->size() < max_generations_by_hits_;
  if (head->bytes >= generation_bytes_ || by_hits) {
    if (gens_->Rotate(NowMs()).ok()) hit_bytes_ = 0;
    WantSpareGenerations();
  }
}

void StoreImpl::WantSpareGenerations() {
  // Without a maintenance thread nobody reads it: each Rotate creates its generation.
  {
    std::lock_guard lock(maint_mu_);
    spares_wanted_ = true;
  }
  maint_cv_.notify_all();
}

namespace {

// In place by recency, each round of evicting the oldest generation frees what the write needs
// plus this fraction of a generation (the room a round leaves empty is half that on average),
// and the walk of its records that lists what to drop serves the rounds until the list runs out.
constexpr uint64_t kDropsPerGeneration = 64;

// Whether the entry was last accessed while generation `id` or a later one was the head; 16-bit
// serial arithmetic, as live generations span far fewer than 2^15 ids.
bool AccessedSince(const Entry& e, uint64_t id) {
  return static_cast<int16_t>(e.access_gen - static_cast<uint16_t>(id)) >= 0;
}

// Whether an entry of generation `id`, written while it was the head, was read since: reused
// (a hit or a touch), or accessed once a newer generation was the head. A first write not
// read since is what learned demotion lets go early (DemotedFirstWrites).
bool ReadSinceWritten(const Entry& e, uint64_t id) {
  return e.reuse > 0 || AccessedSince(e, id + 1);
}

// Whether `policy` keeps a live entry of the generation being evicted, by copying it. `next_id`
// is its successor's id, `recent_id` the oldest of the newer half of the live generations.
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

// Whether `policy` keeps a live entry of generation `victim_id` in place (keeping writes no
// value byte): the recency policies keep every entry used since that generation stopped being
// the head. Kept entries move to the generation of their last use (PlaceByAccess), so the
// generations hold entries by when they were last used, and evicting the oldest one drops the
// least recently used: LRU, one generation's worth of accesses at a time.
bool PolicyKeepsInPlace(EvictionPolicy policy, const Entry& e, uint64_t victim_id) {
  switch (policy) {
    case EvictionPolicy::kLruReuse:
    case EvictionPolicy::kLru:
      return AccessedSince(e, victim_id + 1);
    case EvictionPolicy::kFifo:
    case EvictionPolicy::kNone:
      return false;
  }
  return false;
}

// The generation an entry kept in place moves to: the one that was the head when it was last
// used (of the live ones, the oldest from then on), or the victim's successor if that was the
// victim. Generations then hold the entries last used while they were the head, so dropping the
// oldest drops the least recently used, and a kept entry moves again only once used again.
// `all` lists the generations oldest first, the victim first.
GenerationPtr PlaceByAccess(const Entry& e, const std::vector<GenerationPtr>& all) {
  const uint64_t head = all.back()->id;
  const int16_t since = static_cast<int16_t>(e.access_gen - static_cast<uint16_t>(head));
  if (since >= 0) return all.back();
  const uint64_t accessed = head - static_cast<uint64_t>(-int64_t{since});
  auto it = std::lower_bound(all.begin() + 1, all.end(), accessed,
                             [](const GenerationPtr& g, uint64_t id) { return g->id < id; });
  return it == all.end() ? all.back() : *it;
}

// Most recently used first; among entries last used in the same second, lower list positions
// first: a prefix's head before its tail, since a reader stops at the first missing chunk.
void SortMostRecentFirst(std::vector<RecordMember>* v) {
  std::sort(v->begin(), v->end(), [](const RecordMember& a, const RecordMember& b) {
    const Entry& x = a.at.entry;
    const Entry& y = b.at.entry;
    if (x.last_access_ms != y.last_access_ms) return x.last_access_ms > y.last_access_ms;
    return x.position < y.position;
  });
}

// The order a partial drop takes entries in: expired ones, then the deepest place in a prefix
// first (a key never listed counts as deepest), since a reader stops at the first missing chunk
// and a prefix's tail is worth nothing without its head; then the least recently used.
void SortLeastValuableFirst(std::vector<RecordMember>* v, int64_t now) {
  std::sort(v->begin(), v->end(), [now](const RecordMember& a, const RecordMember& b) {
    const Entry& x = a.at.entry;
    const Entry& y = b.at.entry;
    if (x.ExpiredAt(now) != y.ExpiredAt(now)) return x.ExpiredAt(now);
    if (x.position != y.position) return x.position > y.position;
    return x.last_access_ms < y.last_access_ms;
  });
}

// The value bytes of `v` held in blob files (a value inside its record goes with its generation).
uint64_t FileValueBytes(const std::vector<RecordMember>& v) {
  uint64_t n = 0;
  for (const RecordMember& m : v) n += m.at.entry.is_inline() ? 0 : m.at.entry.size;
  return n;
}

}  // namespace

bool StoreImpl::KeepsInPlaceByRecency(EvictionPolicy policy) const {
  return keep_in_place_ && (policy == EvictionPolicy::kLru || policy == EvictionPolicy::kLruReuse);
}

bool StoreImpl::Reinsert(RecordMember& m, const GenerationPtr& to) {
  testing::SyncPoint("StoreImpl::Reinsert", &m.key);
  std::lock_guard stripe(Stripe(m.hash));
  // The version still indexed, its record and entry as they are now: the walk's copies would
  // undo a TTL change (EXPIRE, PERSIST) made since.
  format::IndexRecord rec;
  std::string rec_bytes;  // an inline value's bytes, which rec points into
  if (!StillIndexed(m.at) || !RecordMatches(m.hash, m.key, m.at, &rec, &rec_bytes)) return false;
  Entry e = m.at.entry;
  index_.Update(m.at.entry, [&](const Entry& x) { e = x; });
  std::optional<Generations::WriteTicket> ticket;  // a copy appends to the head
  if (!to) {
    auto t = gens_->BeginWrite();
    if (!t.ok()) return false;
    ticket.emplace(std::move(*t));
  }
  Generation& dest = to ? *to : ticket->gen();
  e.reuse = 0;  // it must be reused again to be kept again
  e.flags &= static_cast<uint8_t>(~Entry::kDirty);
  rec.reuse_count = 0;
  rec.last_access_ms = e.last_access_ms;
  if (e.is_inline()) {
    rec.generation = dest.id;
    e.seg = dest.inline_seg;
    dest.bytes += rec_bytes.size();
  } else if (to) {
    // The record moves, naming the file it already names; the bytes stay.
    e.seg = gens_->Borrow(dest, m.at.seg.file);
    dest.bytes += rec_bytes.size();
  } else {
    rec.generation = dest.id;
    auto lease = gens_->LeasePartition(*ticket, NowMs());
    if (!lease.ok()) return false;
    BlobFile& f = lease->file();
    const uint64_t before = f.disk_bytes();
    uint64_t offset = 0;
    if (!f.AppendCopy(*m.at.seg.file, m.at.entry.offset, e.size, &offset).ok()) return false;
    gens_->AddFileBytes(f.disk_bytes() - before);
    dest.bytes += f.disk_bytes() - before;
    // As for a Put: with synced writes the copy is durable before the record naming it is.
    if (options_.wal && options_.sync_writes && !f.Sync().ok()) return false;
    e.seg = lease->seg();
    e.offset = rec.offset = offset;
    rec.partition = lease->partition();
  }
  const std::string ik = format::IndexKey(m.hash, m.key);
  rocksdb::WriteBatch batch;
  batch.Put(dest.cf, ik, rec.Encode());
  batch.Delete(m.at.seg.gen->cf, ik);
  if (!RocksWrite(WriteOpts(), &batch).ok()) return false;
  index_writes_++;
  if (index_.Replace(m.at.entry, e)) {
    m.at.seg.gen->live--;
    dest.live++;
  }
  counters_.reinserted_keys++;
  if (!to || e.is_inline()) counters_.reinserted_bytes += e.size;
  return true;
}

void StoreImpl::SelectKept(EvictionPolicy policy, const std::vector<GenerationPtr>& all,
                           std::vector<RecordMember>* keep, std::vector<RecordMember>* drop) {
  const Generation& victim = *all[0];
  const uint64_t next_id = all[1]->id;
  const uint64_t recent_id = all[all.size() / 2]->id;
  const int64_t now = NowMs();
  ForEachRecord(victim, [&](RecordMember m) {
    const Entry& e = m.at.entry;
    const bool kept =
        !e.ExpiredAt(now) && (keep_in_place_ ? PolicyKeepsInPlace(policy, e, victim.id)
                                             : PolicyKeeps(policy, e, next_id, recent_id));
    (kept ? keep : drop)->push_back(std::move(m));
  });
}

Status StoreImpl::EvictOldest(EvictionPolicy policy, uint64_t need, uint64_t* freed) {
  *freed = 0;
  std::vector<GenerationPtr> all = gens_->All();
  if (all.size() == 1) {
    if (all[0]->bytes == 0) return Status::OK();  // nothing but an empty head
    std::lock_guard lock(rotate_mu_);
    if (Status s = gens_->Rotate(NowMs()); !s.ok()) return s;
    all = gens_->All();
  }
  GenerationPtr victim = all[0];
  gens_->Retire(*victim);
  const int64_t now = NowMs();
  const uint64_t usage_before = gens_->FileBytes();
  auto note_freed = [&] {
    *freed = std::max<uint64_t>(1, usage_before - std::min(usage_before, gens_->FileBytes()));
  };
  if (evicting_.generation != victim->id) {
    evicting_ = {};
    evicting_.generation = victim->id;
  }
  GenerationEvicted report;
  report.generation = victim->id;
  const bool in_parts = KeepsInPlaceByRecency(policy);
  const uint64_t goal = need + generation_bytes_ / kDropsPerGeneration;
  // The last walk's list still holds more than this round takes: no walk.
  if (in_parts && evicting_.droppable_bytes > goal) {
    Status s = DropPart(victim, goal, now, &report);
    note_freed();
    return s;
  }

  std::vector<RecordMember> keep, drop;
  SelectKept(policy, all, &keep, &drop);
  ReinsertKept(&keep, &drop, all, &report);
  if (in_parts) {
    // First writes demoted as deep as the oldest go first, then the victim's. Too little for a
    // round: the victim goes whole, and the demoted wait for their own generation.
    std::vector<RecordMember> list = DemotedFirstWrites(all);
    const uint64_t droppable = FileValueBytes(list) + FileValueBytes(drop);
    if (droppable > goal) {
      SortLeastValuableFirst(&drop, now);
      std::move(drop.begin(), drop.end(), std::back_inserter(list));
      evicting_.droppable = std::move(list);
      evicting_.next = 0;
      evicting_.droppable_bytes = droppable;
      Status s = DropPart(victim, goal, now, &report);
      note_freed();
      return s;
    }
  }
  Status s = DropWhole(victim, &drop, now, &report);
  if (s.ok()) note_freed();
  return s;
}

Status StoreImpl::DropWhole(const GenerationPtr& victim, std::vector<RecordMember>* drop,
                            int64_t now, GenerationEvicted* report) {
  std::vector<RecordMember> dropped;
  // The index first: if its drop fails, every entry stays where it is, on disk and in memory.
  Status s = DropGeneration(victim, [&] {
    for (RecordMember& m : *drop) {
      std::lock_guard stripe(Stripe(m.hash));
      if (!index_.Erase(m.at.entry)) continue;
      LeftIndex(m.at, victim.get());  // a borrowed file's range is freed now, own files below
      dropped.push_back(std::move(m));
    }
    PunchAroundKept(*victim);
  });
  if (!s.ok()) return s.IsNoSpace() ? s : Status::IOError("eviction failed: " + s.message());
  ReportDropped(dropped, now, *victim, report);
  if (options_.listener) options_.listener->OnGenerationEvicted(*report);
  evicting_ = {};
  return Status::OK();
}

Status StoreImpl::DropPart(const GenerationPtr& victim, uint64_t goal, int64_t now,
                           GenerationEvicted* report) {
  report->whole = false;
  std::vector<RecordMember>& list = evicting_.droppable;
  std::vector<RecordMember> gone;
  uint64_t bytes = 0;
  // Each record's deletion is written under its key's stripe, before the entry leaves the
  // index: a Put of the key that kept a ticket on the member's generation (a demoted first
  // write's, which is not retired) may commit its new record under the same index key once
  // the stripe is released, and a deletion written later would remove that one instead; a
  // deletion that fails leaves the entry, and the round ends there. Not synced: a record that
  // a crash brings back points into a hole where ranges are freed (the open drops it), and
  // elsewhere brings back the evicted value, its key's own bytes, as a cache may. (With
  // wal-sync, a closed WAL file holding such records is synced by the next flush or synced
  // write; should that sync fail, RocksDB 7.8 asserts when the other syncs the file again: a
  // rare race on a failing disk, left rather than pay a sync per evicted value.)
  rocksdb::WriteOptions delete_opts = WriteOpts();
  delete_opts.sync = false;
  rocksdb::Status rs;
  for (; evicting_.next < list.size() && bytes < goal; ++evicting_.next) {
    RecordMember& m = list[evicting_.next];
    if (m.at.entry.is_inline()) continue;  // its record's bytes go with the column family
    evicting_.droppable_bytes -= m.at.entry.size;
    std::lock_guard stripe(Stripe(m.hash));
    // Used since the walk listed it: the next walk keeps it. A demoted first write (in a newer
    // generation than the victim) is kept by any read.
    const uint64_t home = m.at.seg.gen->id;
    const bool demoted = home != victim->id;
    bool used = false;
    auto check = [&](Entry& x) {
      used = demoted ? ReadSinceWritten(x, home) : AccessedSince(x, victim->id + 1);
    };
    if (!StillIndexed(m.at)) continue;  // the list is older than this round
    if (!index_.Update(m.at.entry, check) || used) continue;
    rocksdb::WriteBatch batch;
    batch.Delete(m.at.seg.gen->cf, format::IndexKey(m.hash, m.key));
    if (rs = RocksWrite(delete_opts, &batch); !rs.ok()) {
      evicting_.droppable_bytes += m.at.entry.size;  // the next round tries it again
      break;
    }
    if (!index_.Erase(m.at.entry)) continue;  // StillIndexed under the stripe: not expected
    LeftIndex(m.at);                          // its range is freed now
    bytes += m.at.entry.size;
    if (demoted) counters_.demoted_keys++;
    gone.push_back(std::move(m));
  }
  ReportDropped(gone, now, *victim, report);
  if (options_.listener) options_.listener->OnGenerationEvicted(*report);
  if (!rs.ok()) return FromRocks(rs, "eviction failed");
  index_writes_ += gone.size();
  return Status::OK();
}

std::vector<RecordMember> StoreImpl::DemotedFirstWrites(const std::vector<GenerationPtr>& all) {
  constexpr int kNewPerCall = 2;
  std::vector<RecordMember> out;
  if (!demote_first_writes_) return out;
  demotion_.SetCapacity(index_.size());
  // Generation i of n (0 the oldest) holds entries about n - i generations old; entered depth d
  // of the lifetime below the newest, a first write is as old as the oldest once i <= d * n.
  const size_t n = all.size();
  const size_t end = std::min(n - 1, static_cast<size_t>(demotion_.Depth() * n) + 1);
  int walked = 0;
  for (size_t i = 1; i < end && walked < kNewPerCall; ++i) {
    const Generation& g = *all[i];
    if (g.id <= demotion_walked_) continue;
    demotion_walked_ = g.id;
    ++walked;
    ForEachRecord(g, [&](RecordMember m) {
      const Entry& e = m.at.entry;
      const bool own_file = m.at.seg.file && m.at.seg.file->header().generation == g.id;
      if (!e.is_inline() && own_file && !ReadSinceWritten(e, g.id)) out.push_back(std::move(m));
    });
  }
  std::stable_sort(out.begin(), out.end(), [](const RecordMember& a, const RecordMember& b) {
    if (a.at.seg.gen->id != b.at.seg.gen->id) return a.at.seg.gen->id < b.at.seg.gen->id;
    return a.at.entry.position > b.at.entry.position;
  });
  return out;
}

void StoreImpl::ReportDropped(const std::vector<RecordMember>& dropped, int64_t now,
                              const Generation& victim, GenerationEvicted* report) {
  for (const RecordMember& m : dropped) {
    if (m.at.entry.ExpiredAt(now)) {
      counters_.expired_keys++;
      report->expired_keys++;
    } else {
      counters_.evicted_keys++;
      counters_.evicted_bytes += m.at.entry.size;
      report->evicted_keys++;
      report->evicted_bytes += m.at.entry.size;
    }
  }
  if (EventListener* l = options_.listener.get()) {
    for (const RecordMember& m : dropped) {
      m.at.entry.ExpiredAt(now) ? l->OnExpired(m.key) : l->OnEvicted(m.key);
    }
  }
  EvictCompanions(dropped, victim, report);
}

void StoreImpl::PunchAroundKept(const Generation& victim) {
  // Its own files that entries kept in place still point into (newer generations borrowed them):
  // everything else in them goes (values dropped now, and versions replaced, deleted or expired
  // earlier, whose records were all the victim's). Other files, copied from or not, are
  // unlinked whole by the release. The kept entries are found in the index, not remembered by
  // the rounds that kept them: a restart between rounds forgets those.
  testing::SyncPoint("StoreImpl::PunchAroundKept");
  PunchAroundLive(gens_->BorrowedSegmentsOf(victim));
}

void StoreImpl::PunchAroundLive(const std::unordered_map<uint32_t, BlobFilePtr>& segs) {
  if (segs.empty()) return;
  std::map<BlobFile*, std::vector<std::pair<uint64_t, uint64_t>>> live;
  for (const auto& [seg, file] : segs) live[file.get()];
  index_.ForEach([&](Entry& e) {
    if (auto it = segs.find(e.seg); it != segs.end()) {
      live[it->second.get()].emplace_back(e.offset, e.size);
    }
    return true;
  });
  for (auto& [file, extents] : live) gens_->PunchAllBut(*file, std::move(extents));
}

void StoreImpl::ReinsertKept(std::vector<RecordMember>* keep, std::vector<RecordMember>* drop,
                             const std::vector<GenerationPtr>& all, GenerationEvicted* report) {
  // Copies: most recently used first, up to the reinsertion cap; the rest is dropped. In place:
  // all of them, in any order (no value byte is written).
  const Generation& victim = *all[0];
  if (!keep_in_place_) SortMostRecentFirst(keep);
  const uint64_t cap = keep_in_place_
                           ? UINT64_MAX
                           : static_cast<uint64_t>(options_.max_reinsert_fraction * victim.bytes);
  std::vector<RecordMember> kept;
  for (RecordMember& m : *keep) {
    if (report->reinserted_bytes + m.at.entry.size <= cap &&
        Reinsert(m, keep_in_place_ ? PlaceByAccess(m.at.entry, all) : nullptr)) {
      report->reinserted_bytes += m.at.entry.size;
      report->reinserted_keys++;
      kept.push_back(std::move(m));
    } else {
      drop->push_back(std::move(m));
    }
  }
  keep->swap(kept);
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
        // Absent, or goes with the victim (only when all of it goes: a part leaves the rest).
        if (!c || (report->whole && c->seg.gen && c->seg.gen->id == victim.id)) continue;
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
