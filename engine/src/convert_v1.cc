// Converting a format-1 directory (values in RocksDB's blob files) to format 2 at open.
//
// Every live value is read, checked against its XXH3, and written the format-2 way into a new
// generation, one legacy generation at a time, oldest first, so eviction order is kept and the
// extra space needed is at most one generation. Each key's new record and the deletion of its
// old metadata are one batch; a legacy generation is dropped once all of its keys moved and
// their new records are flushed. A crash part way loses nothing: the next open continues with
// what is left. Values that fail their checksum are dropped and counted as corruptions.
#include <rocksdb/write_batch.h>

#include <map>

#include "format.h"
#include "format_v1.h"
#include "store_impl.h"

namespace larder {

namespace {

struct LegacyEntry {
  std::string key;
  format::v1::MetaRecord meta;
};

}  // namespace

Status StoreImpl::ConvertFormat1(LegacyHandles* legacy) {
  rocksdb::ColumnFamilyHandle* meta = nullptr;
  std::map<uint64_t, rocksdb::ColumnFamilyHandle*> old_gens;
  for (auto* h : *legacy) {
    if (h->GetName() == format::v1::kMetaCf) {
      meta = h;
    } else if (auto id = format::v1::ParseGenerationCfName(h->GetName())) {
      old_gens[*id] = h;
    }
  }
  const int64_t now = NowMs();
  // What is left to convert, by legacy generation.
  std::map<uint64_t, std::vector<LegacyEntry>> todo;
  rocksdb::WriteBatch dead;  // metadata that cannot be served
  if (meta) {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), meta));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      auto m = format::v1::MetaRecord::Decode(it->value().ToStringView());
      if (!m || !old_gens.count(m->generation) || (m->expire_at_ms && m->expire_at_ms <= now)) {
        if (!m) counters_.corruptions++;
        dead.Delete(meta, it->key());
        continue;
      }
      todo[m->generation].push_back({it->key().ToString(), *m});
    }
    if (!it->status().ok())
      return Status::Corruption("reading format-1 metadata: " + it->status().ToString());
  }
  if (dead.Count() > 0 && !RocksWrite(WriteOpts(), &dead).ok()) {
    return Status::IOError("converting " + dir_ + ": cleaning format-1 metadata failed");
  }
  for (auto& [id, entries] : todo) {
    if (Status s = gens_->Rotate(now); !s.ok()) return s;
    for (const LegacyEntry& le : entries) {
      if (Status s = ConvertEntry(le.key, le.meta, old_gens[id], meta); !s.ok()) return s;
    }
    // The new records must be on disk before the old values go.
    if (Status s = Flush(); !s.ok()) return s;
    if (!db_->DropColumnFamily(old_gens[id]).ok()) {
      return Status::IOError("converting " + dir_ + ": dropping a format-1 generation failed");
    }
    old_gens.erase(id);
  }
  for (auto& [id, h] : old_gens) {
    if (!db_->DropColumnFamily(h).ok()) {
      return Status::IOError("converting " + dir_ + ": dropping a format-1 generation failed");
    }
  }
  if (meta && !db_->DropColumnFamily(meta).ok()) {
    return Status::IOError("converting " + dir_ + ": dropping format-1 metadata failed");
  }
  return Flush();
}

Status StoreImpl::ConvertEntry(const std::string& key, const format::v1::MetaRecord& m,
                               rocksdb::ColumnFamilyHandle* old_gen,
                               rocksdb::ColumnFamilyHandle* meta) {
  rocksdb::PinnableSlice stored;
  rocksdb::Status rs = db_->Get(rocksdb::ReadOptions(), old_gen, key, &stored);
  std::optional<std::string_view> value;
  if (rs.ok()) value = format::v1::ValueOf(stored.ToStringView(), m);
  rocksdb::WriteBatch batch;
  batch.Delete(meta, key);
  if (value && format::Checksum(*value) == m.checksum) {
    auto ticket = gens_->BeginWrite();
    if (!ticket.ok()) return ticket.status();
    const uint64_t hash = format::KeyHash(key);
    Entry e;
    format::IndexRecord rec;
    rec.expire_at_ms = m.expire_at_ms;
    rec.created_ms = m.created_ms;
    rec.last_access_ms = m.last_access_ms;
    rec.reuse_count = m.reuse_count;
    if (Status s = StageValue(hash, key, *value, HandedOver{}, true, m.checksum, *ticket, &e, &rec);
        !s.ok()) {
      return s;
    }
    batch.Put(ticket->gen().cf, format::IndexKey(hash, key), rec.Encode());
  } else {
    counters_.corruptions++;  // unreadable or damaged: the key is dropped
  }
  rocksdb::Status ws = RocksWrite(WriteOpts(), &batch);
  if (!ws.ok()) return Status::IOError("converting " + dir_ + ": " + ws.ToString());
  return Status::OK();
}

}  // namespace larder
