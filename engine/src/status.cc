#include "larder/status.h"

#include <cstdio>
#include <cstdlib>

namespace larder {

std::string Status::ToString() const {
  const char* name = "OK";
  switch (code_) {
    case Code::kOk:
      return "OK";
    case Code::kNotFound:
      name = "NotFound";
      break;
    case Code::kInvalidArgument:
      name = "InvalidArgument";
      break;
    case Code::kNoSpace:
      name = "NoSpace";
      break;
    case Code::kCorruption:
      name = "Corruption";
      break;
    case Code::kIOError:
      name = "IOError";
      break;
    case Code::kBusy:
      name = "Busy";
      break;
    case Code::kNotSupported:
      name = "NotSupported";
      break;
    case Code::kConditionNotMet:
      name = "ConditionNotMet";
      break;
  }
  return msg_.empty() ? std::string(name) : std::string(name) + ": " + msg_;
}

void DieOnValueOfError(const Status& s) {
  std::fprintf(stderr, "larder: Result::value() called on an error: %s\n", s.ToString().c_str());
  std::abort();
}

}  // namespace larder
