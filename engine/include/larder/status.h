// Status and Result<T>: errors as values. No exception crosses the engine's API.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace larder {

// A Status is OK, or a code plus a message a user can act on.
class [[nodiscard]] Status {
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
    kConditionNotMet,  // a conditional write (PutMode::kIfAbsent / kIfPresent) did not apply
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
  static Status ConditionNotMet(std::string msg) {
    return {Code::kConditionNotMet, std::move(msg)};
  }

  bool ok() const { return code_ == Code::kOk; }
  bool IsNotFound() const { return code_ == Code::kNotFound; }
  bool IsInvalidArgument() const { return code_ == Code::kInvalidArgument; }
  bool IsNoSpace() const { return code_ == Code::kNoSpace; }
  bool IsCorruption() const { return code_ == Code::kCorruption; }
  bool IsBusy() const { return code_ == Code::kBusy; }
  bool IsConditionNotMet() const { return code_ == Code::kConditionNotMet; }
  bool IsNotSupported() const { return code_ == Code::kNotSupported; }
  Code code() const { return code_; }
  const std::string& message() const { return msg_; }
  // "NotFound: <message>"-style text for logs.
  std::string ToString() const;
  // Marks a status as deliberately not acted on (RocksDB's name for it): the call site says
  // why. Status is [[nodiscard]], so every other dropped status fails to compile.
  void PermitUncheckedError() const {}

 private:
  Status(Code c, std::string m) : code_(c), msg_(std::move(m)) {}
  Code code_ = Code::kOk;
  std::string msg_;
};

// Aborts the process naming `s`: reaching a Result's value when it holds an error is a bug in
// the caller, caught in every build rather than left undefined.
[[noreturn]] void DieOnValueOfError(const Status& s);

// Either a value or a non-OK Status. value(), * and -> on an error abort (DieOnValueOfError).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = Status::InvalidArgument("Result built from an OK status");
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return Checked(); }
  const T& value() const& { return const_cast<Result*>(this)->Checked(); }
  T&& value() && { return std::move(Checked()); }
  T* operator->() { return &Checked(); }
  const T* operator->() const { return &const_cast<Result*>(this)->Checked(); }
  T& operator*() { return Checked(); }
  const T& operator*() const { return const_cast<Result*>(this)->Checked(); }

 private:
  T& Checked() {
    if (!value_) DieOnValueOfError(status_);
    return *value_;
  }
  Status status_;
  std::optional<T> value_;
};

}  // namespace larder
