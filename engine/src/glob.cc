#include "larder/glob.h"

#include <cctype>
#include <utility>

namespace larder {
namespace {

unsigned char Fold(unsigned char c, bool nocase) {
  return nocase ? static_cast<unsigned char>(std::tolower(c)) : c;
}

// A byte as Redis's matcher compares it in a range: a signed char.
int Signed(char c) {
  return static_cast<signed char>(c);
}

// A range end or the character tested, folded A-Z to a-z under `nocase` (after ordering).
int FoldRange(int v, bool nocase) {
  return nocase && v >= 'A' && v <= 'Z' ? v - 'A' + 'a' : v;
}

// Matches a bracket class starting just after '['. On return *p is past the closing ']'
// (or at the end of the pattern when it is unterminated, which Redis treats as closed).
// As Redis's stringmatchlen: an escaped character is compared as is (never folded); "x-y" is
// a range whatever y is, ']' included ("[a-]" is not closed by that ']'), its ends ordered as
// signed chars before they are folded.
bool MatchClass(std::string_view pat, size_t* p, char c, bool nocase) {
  size_t i = *p;
  bool negate = false;
  if (i < pat.size() && pat[i] == '^') {
    negate = true;
    ++i;
  }
  bool matched = false;
  while (i < pat.size() && pat[i] != ']') {
    if (pat[i] == '\\' && i + 1 < pat.size()) {
      if (pat[i + 1] == c) matched = true;
      i += 2;
    } else if (i + 2 < pat.size() && pat[i + 1] == '-') {
      int lo = Signed(pat[i]), hi = Signed(pat[i + 2]);
      if (lo > hi) std::swap(lo, hi);
      const int v = FoldRange(Signed(c), nocase);
      if (v >= FoldRange(lo, nocase) && v <= FoldRange(hi, nocase)) matched = true;
      i += 3;
    } else {
      if (Fold(pat[i], nocase) == Fold(c, nocase)) matched = true;
      ++i;
    }
  }
  *p = i < pat.size() ? i + 1 : i;
  return negate ? !matched : matched;
}

}  // namespace

// Iterative matcher with single-star backtracking: linear in practice, no recursion, so a
// hostile pattern cannot exhaust the stack.
bool GlobMatch(std::string_view pat, std::string_view text, bool nocase) {
  size_t p = 0, t = 0;
  size_t star_p = std::string_view::npos, star_t = 0;
  while (t < text.size()) {
    if (p < pat.size()) {
      char pc = pat[p];
      if (pc == '*') {
        while (p < pat.size() && pat[p] == '*') ++p;
        if (p == pat.size()) return true;
        star_p = p;
        star_t = t;
        continue;
      }
      if (pc == '?') {
        ++p;
        ++t;
        continue;
      }
      if (pc == '[') {
        size_t q = p + 1;
        if (MatchClass(pat, &q, text[t], nocase)) {
          p = q;
          ++t;
          continue;
        }
      } else {
        size_t q = p;
        if (pc == '\\' && q + 1 < pat.size()) ++q;
        if (Fold(pat[q], nocase) == Fold(text[t], nocase)) {
          p = q + 1;
          ++t;
          continue;
        }
      }
    }
    if (star_p == std::string_view::npos) return false;
    p = star_p;
    t = ++star_t;
  }
  while (p < pat.size() && pat[p] == '*') ++p;
  return p == pat.size();
}

}  // namespace larder
