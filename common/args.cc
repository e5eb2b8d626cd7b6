#include "common/args.h"

namespace larder::common {

namespace {

// isspace() in the C locale.
bool IsBlank(unsigned char c) {
  return c == ' ' || (c >= '\t' && c <= '\r');
}

int HexValue(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

char Unescape(unsigned char c) {
  switch (c) {
    case 'n':
      return '\n';
    case 'r':
      return '\r';
    case 't':
      return '\t';
    case 'b':
      return '\b';
    case 'a':
      return '\a';
    default:
      return static_cast<char>(c);
  }
}

// Reads one argument starting at line[*i] (not a blank) into *arg; false on unbalanced quotes.
// `at(k)` is line[k], or 0 past the end (the NUL of Redis's C string).
template <typename At>
bool ReadArg(const At& at, size_t* i, std::string* arg) {
  enum { kPlain, kDouble, kSingle } mode = kPlain;
  for (;; ++*i) {
    const unsigned char c = at(*i);
    if (mode == kDouble) {
      if (c == '\\' && at(*i + 1) == 'x' && HexValue(at(*i + 2)) >= 0 &&
          HexValue(at(*i + 3)) >= 0) {
        arg->push_back(static_cast<char>(HexValue(at(*i + 2)) * 16 + HexValue(at(*i + 3))));
        *i += 3;
      } else if (c == '\\' && at(*i + 1) != 0) {
        arg->push_back(Unescape(at(++*i)));
      } else if (c == '"') {
        if (at(*i + 1) != 0 && !IsBlank(at(*i + 1))) return false;  // "a"b
        ++*i;
        return true;
      } else if (c == 0) {
        return false;  // quote never closed
      } else {
        arg->push_back(static_cast<char>(c));
      }
    } else if (mode == kSingle) {
      if (c == '\\' && at(*i + 1) == '\'') {
        arg->push_back('\'');
        ++*i;
      } else if (c == '\'') {
        if (at(*i + 1) != 0 && !IsBlank(at(*i + 1))) return false;
        ++*i;
        return true;
      } else if (c == 0) {
        return false;
      } else {
        arg->push_back(static_cast<char>(c));
      }
    } else if (c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == 0) {
      return true;
    } else if (c == '"') {
      mode = kDouble;
    } else if (c == '\'') {
      mode = kSingle;
    } else {
      arg->push_back(static_cast<char>(c));
    }
  }
}

}  // namespace

bool SplitArgs(std::string_view line, std::vector<std::string>* out) {
  if (const size_t nul = line.find('\0'); nul != std::string_view::npos) line = line.substr(0, nul);
  const size_t n = line.size();
  auto at = [&](size_t k) -> unsigned char {
    return k < n ? static_cast<unsigned char>(line[k]) : 0;
  };
  size_t i = 0;
  while (true) {
    while (i < n && IsBlank(at(i))) ++i;
    if (i >= n) return true;
    if (!ReadArg(at, &i, &out->emplace_back())) return false;
  }
}

std::optional<std::vector<std::string>> SplitArgs(std::string_view line) {
  std::vector<std::string> args;
  if (!SplitArgs(line, &args)) return std::nullopt;
  return args;
}

std::string Repr(std::string_view bytes) {
  std::string out = "\"";
  for (char c : bytes) {
    auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\a':
        out += "\\a";
        break;
      case '\b':
        out += "\\b";
        break;
      default:
        if (u >= 0x20 && u < 0x7f) {
          out += c;
        } else {
          static constexpr char kHex[] = "0123456789abcdef";
          out += "\\x";
          out += kHex[u >> 4];
          out += kHex[u & 15];
        }
    }
  }
  return out + "\"";
}

std::string QuoteArg(std::string_view arg) {
  bool plain = !arg.empty();
  for (char c : arg) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f || c == '"' || c == '\'' || c == '\\') plain = false;
  }
  return plain ? std::string(arg) : Repr(arg);
}

}  // namespace larder::common
