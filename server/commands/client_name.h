// Client names (CLIENT SETNAME, HELLO ... SETNAME): Redis's rule and error text.
#pragma once

#include <string_view>

namespace larder::server {

inline constexpr std::string_view kErrClientName =
    "ERR Client names cannot contain spaces, newlines or special characters.";

// Client names (and CLIENT SETINFO's values) may not hold spaces, newlines or other
// non-printable bytes: CLIENT LIST shows each as one field.
inline bool ValidClientName(std::string_view name) {
  for (char c : name) {
    if (c < '!' || c > '~') return false;
  }
  return true;
}

}  // namespace larder::server
