#include "core/slowlog.h"

namespace larder::server {

std::vector<std::string> SlowLog::ShortenedArgs(const std::vector<std::string>& argv) {
  const size_t kept = argv.size() > kMaxArgs ? kMaxArgs - 1 : argv.size();
  std::vector<std::string> out;
  out.reserve(kept + 1);
  for (size_t i = 0; i < kept; ++i) {
    const std::string& a = argv[i];
    if (a.size() <= kMaxArgBytes) {
      out.push_back(a);
    } else {
      out.push_back(a.substr(0, kMaxArgBytes) + "... (" + std::to_string(a.size() - kMaxArgBytes) +
                    " more bytes)");
    }
  }
  if (kept < argv.size()) {
    out.push_back("... (" + std::to_string(argv.size() - kept) + " more arguments)");
  }
  return out;
}

void SlowLog::Add(SlowLogEntry entry, size_t max_len) {
  std::lock_guard<std::mutex> lock(mu_);
  entry.id = next_id_++;
  entries_.push_front(std::move(entry));
  while (entries_.size() > max_len) entries_.pop_back();
}

std::vector<SlowLogEntry> SlowLog::Newest(int64_t count) const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = count < 0 ? entries_.size() : std::min<size_t>(entries_.size(), count);
  return {entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(n)};
}

size_t SlowLog::Len() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

void SlowLog::Reset() {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.clear();
}

}  // namespace larder::server
