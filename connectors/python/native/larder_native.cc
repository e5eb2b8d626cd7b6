// larder_native: liblarder in-process for Python, over the C API (larder_c.h).
//
// Contract: every call that touches the disk releases the GIL; values go in and out through
// the buffer protocol, so put() reads the caller's memory in place and get_into() writes the
// verified value straight into a caller's writable buffer (one memcpy, no Python object).
// Failures raise larder_native.Error (or its NoSpaceError / CorruptionError subclasses)
// carrying the engine's message; a closed store raises ValueError.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "contiguous_buffer.h"
#include "larder/larder_c.h"

namespace py = pybind11;
using larder_py::ByteSize;
using larder_py::ContiguousBuffer;

namespace {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct NoSpaceError : Error {
  using Error::Error;
};
struct CorruptionError : Error {
  using Error::Error;
};

// Throws the exception matching a negative C API code, with the engine's message.
void Raise(int code, char* err) {
  std::string msg = err ? err : "larder error";
  larder_free(err);
  if (code == LARDER_ERR_NO_SPACE) throw NoSpaceError(msg);
  if (code == LARDER_ERR_CORRUPTION) throw CorruptionError(msg);
  throw Error(msg);
}

// A key from str (UTF-8) or any contiguous bytes-like object; valid while the source object
// lives.
class Key {
 public:
  explicit Key(const py::object& o) {
    if (py::isinstance<py::str>(o)) {
      is_str_ = true;
      owned_ = o.cast<std::string>();
      size_ = owned_.size();
      return;
    }
    info_ = ContiguousBuffer(o, /*writable=*/false);
    data_ = static_cast<const char*>(info_.ptr);
    size_ = ByteSize(info_);
  }
  Key(Key&&) = default;
  // Computed on each call: moving a Key moves a short string's bytes to a new address.
  const char* data() const { return is_str_ ? owned_.data() : data_; }
  size_t size() const { return size_; }

 private:
  bool is_str_ = false;
  std::string owned_;
  py::buffer_info info_;
  const char* data_ = nullptr;
  size_t size_ = 0;
};

class KeyList {
 public:
  explicit KeyList(const py::iterable& keys) {
    if (py::isinstance<py::str>(keys) || py::isinstance<py::bytes>(keys) ||
        py::isinstance<py::bytearray>(keys) || py::isinstance<py::memoryview>(keys)) {
      throw py::type_error("keys must be a list of keys, not one key");
    }
    for (const py::handle& k : keys) owned_.emplace_back(py::reinterpret_borrow<py::object>(k));
    for (const Key& k : owned_) {
      ptrs_.push_back(k.data());
      lens_.push_back(k.size());
    }
  }
  size_t size() const { return ptrs_.size(); }
  const char* const* ptrs() const { return ptrs_.data(); }
  const size_t* lens() const { return lens_.data(); }

 private:
  std::vector<Key> owned_;
  std::vector<const char*> ptrs_;
  std::vector<size_t> lens_;
};

class Store {
 public:
  Store(const std::string& path, uint64_t max_disk_bytes, uint64_t generation_bytes,
        const std::string& eviction_policy, bool wal, uint64_t blob_cache_bytes,
        uint64_t memtable_bytes) {
    std::unique_ptr<larder_options_t, void (*)(larder_options_t*)> o(larder_options_create(),
                                                                     larder_options_destroy);
    larder_options_set_max_disk_bytes(o.get(), max_disk_bytes);
    larder_options_set_generation_bytes(o.get(), generation_bytes);
    if (larder_options_set_eviction_policy(o.get(), eviction_policy.c_str()) != LARDER_OK) {
      throw py::value_error("eviction_policy must be lru-reuse, lru, fifo or none, not '" +
                            eviction_policy + "'");
    }
    larder_options_set_wal(o.get(), wal ? 1 : 0);
    larder_options_set_blob_cache_bytes(o.get(), blob_cache_bytes);
    if (memtable_bytes) larder_options_set_memtable_bytes(o.get(), memtable_bytes);
    char* err = nullptr;
    {
      py::gil_scoped_release nogil;
      db_ = larder_open(o.get(), path.c_str(), &err);
    }
    if (!db_) Raise(LARDER_ERR_OTHER, err);
  }
  ~Store() {
    if (db_) larder_close(db_, nullptr);
  }

  void Put(const py::object& key, const py::object& value, int64_t ttl_ms) {
    Key k(key);
    py::buffer_info v = ContiguousBuffer(value, /*writable=*/false);
    if (ttl_ms < 0) throw py::value_error("ttl_ms must be >= 0 (0 = no expiry)");
    Call([&](larder_t* db, char** err) {
      return larder_put(db, k.data(), k.size(), static_cast<const char*>(v.ptr), ByteSize(v),
                        ttl_ms, err);
    });
  }

  py::object Get(const py::object& key) {
    Key k(key);
    larder_value_t* raw = nullptr;
    int rc = Call(
        [&](larder_t* db, char** err) { return larder_get(db, k.data(), k.size(), &raw, err); });
    if (rc == LARDER_NOT_FOUND) return py::none();
    std::unique_ptr<larder_value_t, void (*)(larder_value_t*)> val(raw, larder_value_free);
    return py::bytes(larder_value_data(val.get()), larder_value_size(val.get()));
  }

  // The value's size, or None on a miss; raises ValueError if `buffer` is too small.
  py::object GetInto(const py::object& key, const py::object& buffer) {
    Key k(key);
    py::buffer_info b = ContiguousBuffer(buffer, /*writable=*/true);
    size_t cap = ByteSize(b), n = 0;
    int rc = Call(
        [&](larder_t* db, char** err) {
          return larder_get_into(db, k.data(), k.size(), b.ptr, cap, &n, err);
        },
        LARDER_ERR_BUFFER_TOO_SMALL);
    if (rc == LARDER_NOT_FOUND) return py::none();
    if (rc == LARDER_ERR_BUFFER_TOO_SMALL) {
      throw py::value_error("buffer of " + std::to_string(cap) + " bytes is too small for a " +
                            std::to_string(n) + "-byte value");
    }
    return py::int_(n);
  }

  // The engine's batched read (MultiGetInto): each value straight into its buffer, the reads
  // in parallel. Per key: the value's size, or None for a miss or a value larger than its
  // buffer (that buffer untouched); a failure of the batch raises.
  py::list MultiGetInto(const py::iterable& keys, const py::list& buffers) {
    KeyList list(keys);
    const size_t n = list.size();
    if (py::len(buffers) != n) throw py::value_error("one buffer per key is needed");
    std::vector<py::buffer_info> infos;
    std::vector<void*> bufs;
    std::vector<size_t> caps, vlens(n, 0);
    std::vector<int> codes(n, LARDER_OK);
    for (const py::handle& h : buffers) {
      infos.push_back(ContiguousBuffer(h, /*writable=*/true));
      bufs.push_back(infos.back().ptr);
      caps.push_back(ByteSize(infos.back()));
    }
    Call([&](larder_t* db, char** err) {
      return larder_multi_get_into(db, n, list.ptrs(), list.lens(), bufs.data(), caps.data(),
                                   vlens.data(), codes.data(), err);
    });
    py::list out;
    for (size_t i = 0; i < n; ++i) {
      if (codes[i] == LARDER_OK) {
        out.append(py::int_(vlens[i]));
      } else if (codes[i] == LARDER_NOT_FOUND || codes[i] == LARDER_ERR_BUFFER_TOO_SMALL ||
                 codes[i] == LARDER_ERR_CORRUPTION) {
        // A corrupt value is counted and removed by the engine: a miss, as LmcachePlugin's
        // loads take it, and the batch's other results stand.
        out.append(py::none());
      } else {
        std::string msg = "multi_get_into: key " + std::to_string(i) + " failed (code " +
                          std::to_string(codes[i]) + ")";
        if (codes[i] == LARDER_ERR_CORRUPTION) throw CorruptionError(msg + ": checksum mismatch");
        throw Error(msg);
      }
    }
    return out;
  }

  uint64_t Exists(const py::iterable& keys) { return Count(keys, larder_exists); }
  uint64_t PrefixCount(const py::iterable& keys) { return Count(keys, larder_prefix_count); }
  uint64_t Touch(const py::iterable& keys) { return Count(keys, larder_touch); }

  bool Delete(const py::object& key) {
    Key k(key);
    return Call([&](larder_t* db, char** err) {
             return larder_delete(db, k.data(), k.size(), err);
           }) == LARDER_OK;
  }

  bool Expire(const py::object& key, int64_t ttl_ms) {
    Key k(key);
    return Call([&](larder_t* db, char** err) {
             return larder_expire(db, k.data(), k.size(), ttl_ms, err);
           }) == LARDER_OK;
  }

  int64_t Ttl(const py::object& key) {
    Key k(key);
    std::shared_lock lock(mu_);
    larder_t* db = Open();
    py::gil_scoped_release nogil;
    return larder_ttl(db, k.data(), k.size());
  }

  py::tuple Scan(uint64_t cursor, const std::string& match, size_t count) {
    std::vector<std::string> keys;
    uint64_t next;
    {
      std::shared_lock lock(mu_);
      larder_t* db = Open();
      py::gil_scoped_release nogil;
      next = larder_scan(
          db, cursor, match.c_str(), count,
          [](const char* k, size_t n, void* arg) {
            static_cast<std::vector<std::string>*>(arg)->emplace_back(k, n);
          },
          &keys);
    }
    py::list out;
    for (const std::string& k : keys) out.append(py::bytes(k));
    return py::make_tuple(next, out);
  }

  py::dict Stats() {
    larder_stats_t s{};
    {
      std::shared_lock lock(mu_);
      larder_t* db = Open();
      py::gil_scoped_release nogil;
      larder_stats(db, &s);
    }
    py::dict d;
#define LARDER_PY_STAT(name, doc) d[#name] = s.name;
    LARDER_STATS(LARDER_PY_STAT)
#undef LARDER_PY_STAT
    return d;
  }

  void Flush() {
    Call([](larder_t* db, char** err) { return larder_flush(db, err); });
  }

  void UnmapFiles() {
    std::shared_lock lock(mu_);
    larder_t* db = Open();
    py::gil_scoped_release nogil;
    larder_unmap_files(db);
  }

  void Close() {
    larder_t* db;
    {
      py::gil_scoped_release nogil;
      std::unique_lock lock(mu_);  // waits for calls in flight
      db = db_;
      db_ = nullptr;
    }
    if (!db) return;
    char* err = nullptr;
    int rc;
    {
      py::gil_scoped_release nogil;
      rc = larder_close(db, &err);
    }
    if (rc < 0) Raise(rc, err);
  }

  // fn(db) with the store held open (a Close waits for it); false if it is closed. For
  // threads without the GIL (LmcachePlugin's workers).
  template <typename Fn>
  bool WithOpenStore(Fn&& fn) {
    std::shared_lock lock(mu_);
    if (!db_) return false;
    fn(db_);
    return true;
  }

 private:
  larder_t* Open() const {
    if (!db_) throw py::value_error("the store is closed");
    return db_;
  }

  // Runs fn(db, &err) without the GIL; raises on a negative code other than `expected_error`,
  // returns the others.
  template <typename Fn>
  int Call(Fn&& fn, int expected_error = LARDER_OK) {
    char* err = nullptr;
    int rc;
    {
      std::shared_lock lock(mu_);
      larder_t* db = Open();
      py::gil_scoped_release nogil;
      rc = fn(db, &err);
    }
    if (rc < 0 && rc != expected_error) Raise(rc, err);
    larder_free(err);
    return rc;
  }

  uint64_t Count(const py::iterable& keys,
                 uint64_t (*fn)(larder_t*, size_t, const char* const*, const size_t*)) {
    KeyList list(keys);
    std::shared_lock lock(mu_);
    larder_t* db = Open();
    py::gil_scoped_release nogil;
    return fn(db, list.size(), list.ptrs(), list.lens());
  }

  std::shared_mutex mu_;  // shared by calls, exclusive by Close
  larder_t* db_ = nullptr;
};

}  // namespace

#include "lmcache_plugin.h"
#include "server_backend.h"

namespace {

// LmcachePlugin over an in-process Store, or over a running larder-server.
void BindLmcachePlugin(py::module_& m) {
  using lmcache_plugin::Plugin;
  py::class_<Plugin>(m, "LmcachePlugin")
      .def(py::init([](py::object store, int workers, bool close_store) {
             if (!py::isinstance<Store>(store)) {
               throw py::type_error("LmcachePlugin needs a larder_native.Store, not " +
                                    std::string(py::str(py::type::of(store).attr("__name__"))));
             }
             Store* s = &store.cast<Store&>();
             return std::make_unique<Plugin>(store, lmcache_plugin::StoreRunners(s), workers,
                                             /*tiles=*/1, close_store);
           }),
           py::arg("store"), py::arg("workers") = 2, py::arg("close_store") = false,
           "LMCache's native_plugin contract over `store` (a Store), `workers` batch threads; "
           "with `close_store`, close() closes the store too (flushed, its directory unlocked).")
      .def("event_fd", &Plugin::EventFd)
      .def("submit_batch_get", &Plugin::SubmitGet, py::arg("keys"), py::arg("buffers"))
      .def("submit_batch_set", &Plugin::SubmitSet, py::arg("keys"), py::arg("buffers"))
      .def("submit_batch_exists", &Plugin::SubmitExists, py::arg("keys"))
      .def("submit_batch_delete", &Plugin::SubmitDelete, py::arg("keys"))
      .def("drain_completions", &Plugin::Drain)
      .def("close", &Plugin::Close);
  m.def(
      "connect_plugin",
      [](const std::string& server, int workers, double timeout, const std::string& username,
         const std::string& password) {
        lmcache_plugin::ServerOptions o;
        std::string error;
        if (!lmcache_plugin::ServerAddress::Parse(server, &o.address, &error)) {
          throw py::value_error(error);
        }
        if (!(timeout > 0) || !std::isfinite(timeout)) {
          throw py::value_error("timeout must be a finite number of seconds > 0");
        }
        // Past INT_MAX ms (24.8 days) a wait is as good as unbounded.
        o.timeout_ms = static_cast<int>(std::clamp(timeout * 1000, 1.0, double{INT_MAX}));
        o.username = username;
        o.password = password;
        // A wrong or missing password is refused here, where LMCache shows the error; a server
        // not up yet is warned of (batches fail, misses, until it is).
        std::string unreachable;
        std::optional<std::string> refused;
        {
          py::gil_scoped_release nogil;
          refused = lmcache_plugin::ProbeServer(o, &unreachable);
        }
        if (refused) throw py::value_error("larder-server at " + server + ": " + *refused);
        if (!unreachable.empty()) {
          py::module_::import("warnings")
              .attr("warn")("larder-server at " + server + " is not reachable yet (" + unreachable +
                            "); batches fail (misses) until it is");
        }
        auto breaker = std::make_shared<lmcache_plugin::Breaker>();
        auto runners = [o, breaker] {
          auto runner = std::make_shared<lmcache_plugin::ServerRunner>(o, breaker);
          return lmcache_plugin::Runner([runner](const auto& b) { return (*runner)(b); });
        };
        // A batch is split over the workers' connections, each tile one pipeline.
        return std::make_unique<Plugin>(py::none(), runners, workers, workers);
      },
      py::arg("server"), py::arg("workers") = 4, py::arg("timeout") = 1.0, py::arg("username") = "",
      py::arg("password") = "",
      "LmcachePlugin over a running larder-server at `server` (a unix socket path or "
      "host:port): one connection per worker, every socket wait bounded by `timeout` seconds, "
      "an unreachable server costs misses (see server_backend.h).");
}

}  // namespace

PYBIND11_MODULE(larder_native, m) {
  m.doc() = "liblarder in-process: a KV-cache block store on local disk (see connectors/python)";
  auto error = py::register_exception<Error>(m, "Error");
  py::register_exception<NoSpaceError>(m, "NoSpaceError", error.ptr());
  py::register_exception<CorruptionError>(m, "CorruptionError", error.ptr());

  py::class_<Store>(m, "Store")
      .def(py::init<const std::string&, uint64_t, uint64_t, const std::string&, bool, uint64_t,
                    uint64_t>(),
           py::arg("path"), py::arg("max_disk_bytes") = 0, py::arg("generation_bytes") = 0,
           py::arg("eviction_policy") = "lru-reuse", py::arg("wal") = false,
           py::arg("blob_cache_bytes") = 0, py::arg("memtable_bytes") = 0,
           "Opens (creating if needed) the store in `path`; 0 = the engine's default.")
      .def("put", &Store::Put, py::arg("key"), py::arg("value"), py::arg("ttl_ms") = 0,
           "Stores value (any bytes-like object, read in place); ttl_ms 0 = no expiry.")
      .def("get", &Store::Get, py::arg("key"), "The verified value as bytes, or None.")
      .def("get_into", &Store::GetInto, py::arg("key"), py::arg("buffer"),
           "Copies the verified value into a writable buffer; returns its size, or None.")
      .def("multi_get_into", &Store::MultiGetInto, py::arg("keys"), py::arg("buffers"),
           "Reads each verified value into its writable buffer, in parallel; per key its "
           "size, or None (a miss, a buffer too small, or a corrupt value, which the store "
           "counts in stats()['corruptions'] and removes).")
      .def("exists", &Store::Exists, py::arg("keys"), "How many of the keys exist.")
      .def("prefix_count", &Store::PrefixCount, py::arg("keys"),
           "How many leading keys exist (a prefix lookup).")
      .def("touch", &Store::Touch, py::arg("keys"), "Marks keys reused; returns how many exist.")
      .def("delete", &Store::Delete, py::arg("key"), "True if the key existed.")
      .def("expire", &Store::Expire, py::arg("key"), py::arg("ttl_ms"),
           "Sets a TTL (<= 0 deletes); True if the key exists.")
      .def("ttl", &Store::Ttl, py::arg("key"), "Remaining ms, -1 no expiry, -2 no key.")
      .def("scan", &Store::Scan, py::arg("cursor") = 0, py::arg("match") = "*",
           py::arg("count") = 100, "One page: (next cursor, [keys]); cursor 0 = done.")
      .def("stats", &Store::Stats, "Counters, as in INFO larder.")
      .def("flush", &Store::Flush, "Writes memtables to blob files.")
      .def("unmap_files", &Store::UnmapFiles,
           "Lets go of the value files' read mappings, so that posix_fadvise(DONTNEED) can drop "
           "their pages from the page cache.")
      .def("close", &Store::Close, "Flushes and closes; further calls raise ValueError.")
      .def("__enter__", [](Store& s) -> Store& { return s; })
      .def("__exit__", [](Store& s, const py::args&) { s.Close(); });

  BindLmcachePlugin(m);
}
