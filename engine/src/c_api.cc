// The C API: thin wrappers over larder::Store; every entry point is noexcept.
#include "larder/larder_c.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "larder/store.h"

using larder::Status;

struct larder_t {
  std::unique_ptr<larder::Store> store;
};
struct larder_options_t {
  larder::Options options;
};
struct larder_value_t {
  larder::Value value;
};

namespace {

int Code(const Status& s) {
  switch (s.code()) {
    case Status::Code::kOk:
      return LARDER_OK;
    case Status::Code::kNotFound:
      return LARDER_NOT_FOUND;
    case Status::Code::kInvalidArgument:
      return LARDER_ERR_INVALID;
    case Status::Code::kNoSpace:
      return LARDER_ERR_NO_SPACE;
    case Status::Code::kCorruption:
      return LARDER_ERR_CORRUPTION;
    case Status::Code::kIOError:
      return LARDER_ERR_IO;
    case Status::Code::kBusy:
      return LARDER_ERR_BUSY;
    default:
      return LARDER_ERR_OTHER;
  }
}

void SetErr(char** errptr, const std::string& msg) {
  if (!errptr) return;
  std::free(*errptr);
  *errptr = strdup(msg.c_str());
}

// Maps a Status to a return code; errors (not misses) also fill *errptr.
int Report(const Status& s, char** errptr) {
  if (!s.ok() && !s.IsNotFound()) SetErr(errptr, s.ToString());
  return Code(s);
}

template <typename F>
int Guard(char** errptr, F&& f) noexcept {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    SetErr(errptr, "out of memory");
  } catch (...) {
    SetErr(errptr, "internal error");
  }
  return LARDER_ERR_OTHER;
}

std::vector<std::string_view> Keys(size_t n, const char* const* keys, const size_t* klens) {
  std::vector<std::string_view> v;
  v.reserve(n);
  for (size_t i = 0; i < n; ++i) v.emplace_back(keys[i], klens[i]);
  return v;
}

}  // namespace

extern "C" {

larder_options_t* larder_options_create(void) {
  return new (std::nothrow) larder_options_t;
}
void larder_options_destroy(larder_options_t* o) {
  delete o;
}
void larder_options_set_max_disk_bytes(larder_options_t* o, uint64_t v) {
  o->options.max_disk_bytes = v;
}
void larder_options_set_generation_bytes(larder_options_t* o, uint64_t v) {
  o->options.generation_bytes = v;
}
int larder_options_set_eviction_policy(larder_options_t* o, const char* name) {
  return larder::ParseEvictionPolicy(name ? name : "", &o->options.eviction_policy)
             ? LARDER_OK
             : LARDER_ERR_INVALID;
}
void larder_options_set_wal(larder_options_t* o, int on) {
  o->options.wal = on != 0;
}
void larder_options_set_blob_cache_bytes(larder_options_t*, uint64_t) {}
void larder_options_set_direct_reads(larder_options_t* o, int on) {
  o->options.direct_reads = on != 0;
}
void larder_options_set_mapped_reads(larder_options_t* o, int on) {
  o->options.mapped_reads = on != 0;
}
void larder_options_set_direct_writes(larder_options_t* o, int on) {
  o->options.direct_writes = on != 0;
}
void larder_options_set_read_queue_depth(larder_options_t* o, int depth) {
  o->options.read_queue_depth = depth;
}
void larder_options_set_sync_writes(larder_options_t* o, int on) {
  o->options.sync_writes = on != 0;
}
void larder_options_set_memtable_bytes(larder_options_t* o, uint64_t v) {
  o->options.memtable_bytes = v;
}
void larder_options_set_read_only(larder_options_t* o, int on) {
  o->options.read_only = on != 0;
}

larder_t* larder_open(const larder_options_t* o, const char* dir, char** errptr) {
  larder_t* out = nullptr;
  Guard(errptr, [&] {
    if (!dir) return Report(Status::InvalidArgument("dir is NULL"), errptr);
    auto r = larder::Store::Open(o ? o->options : larder::Options(), dir);
    if (!r.ok()) return Report(r.status(), errptr);
    out = new larder_t{std::move(r).value()};
    return LARDER_OK;
  });
  return out;
}

int larder_close(larder_t* db, char** errptr) {
  int rc = Guard(errptr, [&] { return db ? Report(db->store->Close(), errptr) : LARDER_OK; });
  delete db;
  return rc;
}

int larder_put(larder_t* db, const char* key, size_t klen, const char* val, size_t vlen,
               int64_t ttl_ms, char** errptr) {
  return Guard(errptr, [&] {
    return Report(db->store->Put({key, klen}, {val, vlen}, ttl_ms), errptr);
  });
}

int larder_get(larder_t* db, const char* key, size_t klen, larder_value_t** out, char** errptr) {
  *out = nullptr;
  return Guard(errptr, [&] {
    auto r = db->store->Get({key, klen});
    if (!r.ok()) return Report(r.status(), errptr);
    *out = new larder_value_t{std::move(r).value()};
    return LARDER_OK;
  });
}

const char* larder_value_data(const larder_value_t* v) {
  return v->value.data();
}
size_t larder_value_size(const larder_value_t* v) {
  return v->value.size();
}
void larder_value_free(larder_value_t* v) {
  delete v;
}

// GetInto's result as a return code; a too-small buffer reports the value's size.
int IntoCode(larder::Store& store, std::string_view key, const larder::Result<uint64_t>& r,
             size_t* vlen, char** errptr) {
  if (r.ok()) {
    *vlen = *r;
    return LARDER_OK;
  }
  if (r.status().IsInvalidArgument()) {
    auto info = store.Info(key);
    if (info.ok()) {
      *vlen = info->value_size;
      SetErr(errptr, r.status().ToString());
      return LARDER_ERR_BUFFER_TOO_SMALL;
    }
  }
  return Report(r.status(), errptr);
}

int larder_get_into(larder_t* db, const char* key, size_t klen, void* buf, size_t cap, size_t* vlen,
                    char** errptr) {
  return Guard(errptr, [&] {
    auto r = db->store->GetInto({key, klen}, static_cast<char*>(buf), cap);
    return IntoCode(*db->store, {key, klen}, r, vlen, errptr);
  });
}

int larder_multi_get_into(larder_t* db, size_t n, const char* const* keys, const size_t* klens,
                          void* const* bufs, const size_t* caps, size_t* vlens, int* codes,
                          char** errptr) {
  return Guard(errptr, [&] {
    std::vector<larder::Store::Buffer> b(n);
    for (size_t i = 0; i < n; ++i) b[i] = {static_cast<char*>(bufs[i]), caps[i]};
    auto rs = db->store->MultiGetInto(Keys(n, keys, klens), b);
    for (size_t i = 0; i < n; ++i) {
      codes[i] = IntoCode(*db->store, {keys[i], klens[i]}, rs[i], &vlens[i], nullptr);
    }
    return LARDER_OK;
  });
}

uint64_t larder_exists(larder_t* db, size_t n, const char* const* keys, const size_t* klens) {
  uint64_t out = 0;
  Guard(nullptr, [&] { return out = db->store->Exists(Keys(n, keys, klens)), 0; });
  return out;
}

uint64_t larder_prefix_count(larder_t* db, size_t n, const char* const* keys, const size_t* klens) {
  uint64_t out = 0;
  Guard(nullptr, [&] { return out = db->store->PrefixCount(Keys(n, keys, klens)), 0; });
  return out;
}

uint64_t larder_touch(larder_t* db, size_t n, const char* const* keys, const size_t* klens) {
  uint64_t out = 0;
  Guard(nullptr, [&] { return out = db->store->Touch(Keys(n, keys, klens)), 0; });
  return out;
}

int larder_delete(larder_t* db, const char* key, size_t klen, char** errptr) {
  return Guard(errptr, [&] { return Report(db->store->Delete({key, klen}), errptr); });
}

int larder_expire(larder_t* db, const char* key, size_t klen, int64_t ttl_ms, char** errptr) {
  return Guard(errptr, [&] { return Report(db->store->Expire({key, klen}, ttl_ms), errptr); });
}

int larder_persist(larder_t* db, const char* key, size_t klen, char** errptr) {
  return Guard(errptr, [&] { return Report(db->store->Persist({key, klen}), errptr); });
}

int64_t larder_ttl(larder_t* db, const char* key, size_t klen) {
  int64_t out = larder::kTtlNoKey;
  Guard(nullptr, [&] { return out = db->store->Ttl({key, klen}), 0; });
  return out;
}

uint64_t larder_scan(larder_t* db, uint64_t cursor, const char* pattern, size_t count,
                     void (*fn)(const char*, size_t, void*), void* arg) {
  uint64_t next = 0;
  Guard(nullptr, [&] {
    larder::ScanPage p = db->store->Scan(cursor, pattern ? pattern : "", count);
    for (const auto& k : p.keys) fn(k.data(), k.size(), arg);
    next = p.next_cursor;
    return 0;
  });
  return next;
}

void larder_stats(larder_t* db, larder_stats_t* out) {
  Guard(nullptr, [&] {
    larder::Stats s = db->store->GetStats();
#define LARDER_C_COPY_STAT(name, doc) out->name = s.name;
    LARDER_STATS(LARDER_C_COPY_STAT)
#undef LARDER_C_COPY_STAT
    return 0;
  });
}

int larder_flush(larder_t* db, char** errptr) {
  return Guard(errptr, [&] { return Report(db->store->Flush(), errptr); });
}

void larder_unmap_files(larder_t* db) {
  Guard(nullptr, [&] {
    db->store->UnmapFiles();
    return 0;
  });
}

void larder_free(void* p) {
  std::free(p);
}

}  // extern "C"
