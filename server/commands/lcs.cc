#include "commands/lcs.h"

#include <algorithm>
#include <limits>
#include <new>

namespace larder::server {
namespace {

// LCS lengths of every pair of prefixes: At(i, j) is the LCS length of a[0..i) and b[0..j).
class LcsTable {
 public:
  LcsTable(std::string_view a, std::string_view b)
      : width_(b.size() + 1), cells_(CellCount(a.size(), b.size()), 0) {
    for (size_t i = 1; i <= a.size(); i++) {
      for (size_t j = 1; j <= b.size(); j++) {
        Cell(i, j) =
            a[i - 1] == b[j - 1] ? At(i - 1, j - 1) + 1 : std::max(At(i - 1, j), At(i, j - 1));
      }
    }
  }
  uint32_t At(size_t i, size_t j) const { return cells_[i * width_ + j]; }

 private:
  uint32_t& Cell(size_t i, size_t j) { return cells_[i * width_ + j]; }

  // The table's size, or std::bad_alloc when it cannot be addressed at all.
  static size_t CellCount(size_t alen, size_t blen) {
    const uint64_t bytes = LcsTableBytes(alen, blen);
    if (bytes / sizeof(uint32_t) > std::vector<uint32_t>().max_size()) throw std::bad_alloc();
    return static_cast<size_t>(bytes / sizeof(uint32_t));
  }

  size_t width_;
  std::vector<uint32_t> cells_;
};

// Walks the table back from (a.size(), b.size()) as Redis does: on equal bytes take the byte
// and step diagonally; otherwise step up (drop a's byte) only if that keeps a strictly longer
// LCS, else left (drop b's byte). A run ends at the first non-diagonal step or when it reaches
// the start of either string; it is recorded then, if want_matches and it is long enough.
void WalkBack(const LcsTable& table, std::string_view a, std::string_view b, bool want_string,
              bool want_matches, uint64_t min_match_len, LcsResult* out) {
  if (want_string) out->lcs.resize(out->len);
  size_t i = a.size(), j = b.size(), kept = out->len;
  bool in_run = false;
  LcsMatch run{};
  while (i > 0 && j > 0) {
    bool run_ends;
    if (a[i - 1] == b[j - 1]) {
      if (want_string) out->lcs[--kept] = a[i - 1];
      // A match right after a match is always diagonally adjacent, so it extends the run.
      if (!in_run) run = LcsMatch{i - 1, i - 1, j - 1, j - 1, 0};
      run.a_start = i - 1;
      run.b_start = j - 1;
      in_run = true;
      run_ends = i == 1 || j == 1;
      i--;
      j--;
    } else {
      if (table.At(i - 1, j) > table.At(i, j - 1)) {
        i--;
      } else {
        j--;
      }
      run_ends = in_run;
    }
    if (run_ends) {
      run.len = run.a_end - run.a_start + 1;
      if (want_matches && run.len >= min_match_len) out->matches.push_back(run);
      in_run = false;
    }
  }
}

}  // namespace

LcsResult ComputeLcs(std::string_view a, std::string_view b, bool want_string, bool want_matches,
                     uint64_t min_match_len) {
  LcsTable table(a, b);
  LcsResult result{{}, table.At(a.size(), b.size()), {}};
  if (want_string || want_matches) {
    WalkBack(table, a, b, want_string, want_matches, min_match_len, &result);
  }
  return result;
}

uint64_t LcsTableBytes(size_t alen, size_t blen) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  if (alen >= kMax || blen >= kMax) return kMax;
  const uint64_t rows = uint64_t{alen} + 1, cols = uint64_t{blen} + 1;
  if (rows > kMax / cols) return kMax;
  const uint64_t cells = rows * cols;
  if (cells > kMax / sizeof(uint32_t)) return kMax;
  return cells * sizeof(uint32_t);
}

}  // namespace larder::server
