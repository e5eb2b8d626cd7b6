// larder::Verify: every value against its XXH3, every SST of the index against its block
// checksums, and what the open found and dropped.
#include <rocksdb/sst_file_reader.h>

#include "format.h"
#include "store_impl.h"

namespace larder {

namespace {

void AddProblem(VerifyReport* r, std::string line) {
  if (r->problems.size() < 1000) r->problems.push_back(std::move(line));
}

// Checks every block of every live SST file; adds the bad files to `r`.
void VerifySstFiles(rocksdb::DB* db, VerifyReport* r) {
  std::vector<rocksdb::LiveFileMetaData> files;
  db->GetLiveFilesMetaData(&files);
  rocksdb::Options opts(db->GetDBOptions(), rocksdb::ColumnFamilyOptions());
  for (const auto& f : files) {
    r->sst_files++;
    const std::string path = f.directory + "/" + f.relative_filename;
    rocksdb::SstFileReader reader(opts);
    rocksdb::Status s = reader.Open(path);
    if (s.ok()) s = reader.VerifyChecksum();
    if (s.ok()) continue;
    r->corrupt_sst_files++;
    AddProblem(r,
               "file " + path + " (column family " + f.column_family_name + "): " + s.ToString());
  }
}

}  // namespace

VerifyReport StoreImpl::VerifyAll(void (*progress)(uint64_t, uint64_t, void*), void* arg) {
  VerifyReport r;
  r.corrupt = found_.corrupt_records + found_.damaged_generations.size();
  r.missing = found_.lost_writes;
  r.corrupt_sst_files = found_.damaged_sst_files.size();
  for (const std::string& f : found_.damaged_sst_files) {
    AddProblem(&r, f + ": failed its block checksums; its generation's entries are unreadable");
  }
  for (const std::string& f : found_.damaged_files) {
    AddProblem(&r, f + ": not a readable blob file; its values are unreadable");
  }
  if (found_.corrupt_records) {
    AddProblem(&r, std::to_string(found_.corrupt_records) + " unreadable index records");
  }
  if (found_.lost_writes) {
    AddProblem(&r, std::to_string(found_.lost_writes) +
                       " index records whose values never reached the disk");
  }
  for (const std::string& k : found_.dropped_keys) AddProblem(&r, k);
  if (!found_.torn_manifest.empty()) {
    r.damaged_manifests++;
    AddProblem(&r, found_.torn_manifest);
  }
  const uint64_t total = index_.size();
  r.entries = total + r.corrupt + r.missing;
  uint64_t done = 0;
  std::vector<char> buf;
  for (const GenerationPtr& g : gens_->All()) {
    ForEachRecord(*g, [&](RecordMember m) {
      buf.resize(m.at.entry.size);
      Status s = ReadVerified(m.hash, m.key, m.at, buf.data(), /*allow_direct=*/false);
      if (s.ok()) {
        r.ok++;
      } else {
        (s.IsNotFound() ? r.missing : r.corrupt)++;
        AddProblem(&r, "generation " + std::to_string(g->id) + " key '" + m.key +
                           "': " + (s.message().empty() ? "value missing" : s.message()));
      }
      ++done;
      if (progress && (done % 64 == 0 || done == total)) progress(done, total, arg);
    });
  }
  VerifySstFiles(db_.get(), &r);
  return r;
}

Result<VerifyReport> Verify(const std::string& dir, void (*progress)(uint64_t, uint64_t, void*),
                            void* arg) {
  Options o;
  o.read_only = true;
  o.create_if_missing = false;
  o.maintenance_interval_ms = 0;
  o.max_disk_bytes = ~0ull >> 2;
  StoreImpl store(o, dir);
  if (Status s = store.OpenDb(); !s.ok()) return s;
  return store.VerifyAll(progress, arg);
}

}  // namespace larder
