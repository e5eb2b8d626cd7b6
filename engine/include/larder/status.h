// Status and Result<T>: errors as values. No exception crosses the engine's API.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace larder {

// A Status is OK, or a code plus a message a user can act on.
class Status {
 public:
  enum class Code {
    kOk = 0,
    kNotFound,         // the key does not exist, has expired, or failed verification
    kInvalidArgument,  // caller error: empty/oversized key or value, bad option
    kNoSpace,          // over max_disk_bytes with eviction disabled, or the disk is full
    kCorruption,       // stored bytes failed verification
    kIOError,          // the filesystem or RocksDB failed
    kBusy,             // the data directory is held by another process
    kNotSupported,
  };

  Status() = default;
  static Status OK() { return Status(); }
  static Status NotFound(std::string msg = "") { return {Code::kNotFound, std::move(msg)}; }
  static Status InvalidArgument(std::string msg) {
    return {Code::kInvalidArgument, std::move(msg)};
  }
  static Status NoSpace(std::string msg) { return {Code::kNoSpace, std::move(msg)}; }
  static Status Corruption(std::string msg) { return {Code::kCorruption, std::move(msg)}; }
  static Status IOError(std::string msg) { return {Code::kIOError, std::move(msg)}; }
  static Status Busy(std::string msg) { return {Code::kBusy, std::move(msg)}; }
  static Status NotSupported(std::string msg) { return {Code::kNotSupported, std::move(msg)}; }

  bool ok() const { return code_ == Code::kOk; }
  bool IsNotFound() const { return code_ == Code::kNotFound; }
  bool IsInvalidArgument() const { return code_ == Code::kInvalidArgument; }
  bool IsNoSpace() const { return code_ == Code::kNoSpace; }
  bool IsCorruption() const { return code_ == Code::kCorruption; }
  bool IsBusy() const { return code_ == Code::kBusy; }
  Code code() const { return code_; }
  const std::string& message() const { return msg_; }
  // "NotFound: <message>"-style text for logs.
  std::string ToString() const;

 private:
  Status(Code c, std::string m) : code_(c), msg_(std::move(m)) {}
  Code code_ = Code::kOk;
  std::string msg_;
};

// Either a value or a non-OK Status.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) { assert(!status_.ok()); }  // NOLINT

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace larder
