#include "common/text.h"

namespace larder::common {

namespace {
char LowerChar(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}
}  // namespace

bool EqualsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (LowerChar(a[i]) != LowerChar(b[i])) return false;
  }
  return true;
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = LowerChar(c);
  return out;
}

namespace {

// Calls piece(p) for each piece of `s` between `sep`s, as Split() defines them.
template <typename Fn>
void ForEachPiece(std::string_view s, char sep, Fn piece) {
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string_view::npos) end = s.size();
    piece(s.substr(start, end - start));
    start = end + 1;
  }
}

}  // namespace

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> pieces;
  ForEachPiece(s, sep, [&](std::string_view p) { pieces.emplace_back(p); });
  return pieces;
}

std::vector<std::string_view> SplitNonEmpty(std::string_view s, char sep) {
  std::vector<std::string_view> pieces;
  ForEachPiece(s, sep, [&](std::string_view p) {
    if (!p.empty()) pieces.push_back(p);
  });
  return pieces;
}

std::string ToUpper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

}  // namespace larder::common
