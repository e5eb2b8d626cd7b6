// Bitmap commands, on string values as Redis 7 runs them: GETBIT SETBIT BITCOUNT BITPOS BITOP
// BITFIELD BITFIELD_RO. Bit 0 is the most significant bit of the first byte; bits past a
// value's end read as 0, and a write past it grows the value with zero bytes. A write reads the
// whole value and writes it back (commands/string_value.h) under the exclusive server lock.
#include <algorithm>
#include <bit>
#include <cstring>
#include <optional>
#include <vector>

#include "commands/bitfield_keys.h"
#include "commands/families.h"
#include "commands/string_value.h"
#include "commands/util.h"
#include "commands/value_reply.h"

namespace larder::server {

namespace {

constexpr std::string_view kErrBitOffset = "ERR bit offset is not an integer or out of range";

// A bit offset: an integer, or for a BITFIELD field of `field_bits` bits "#<n>", the n-th such
// field. As Redis limits it, the byte it falls in must be under proto-max-bulk-len. False after
// the error reply.
bool ArgBitOffset(Ctx& ctx, std::string_view arg, int field_bits, uint64_t* out) {
  const bool nth = field_bits > 0 && !arg.empty() && arg[0] == '#';
  int64_t n = 0;
  if (!ParseInt64(nth ? arg.substr(1) : arg, &n)) {
    ctx.w.Error(kErrBitOffset);
    return false;
  }
  const __int128 bit = nth ? static_cast<__int128>(n) * field_bits : n;
  if (bit < 0 || (bit >> 3) >= ctx.core.config.snapshot()->proto_max_bulk_len) {
    ctx.w.Error(kErrBitOffset);
    return false;
  }
  *out = static_cast<uint64_t>(bit);
  return true;
}

int BitAt(std::string_view s, uint64_t bit) {
  const uint64_t byte = bit >> 3;
  if (byte >= s.size()) return 0;
  return (static_cast<unsigned char>(s[byte]) >> (7 - (bit & 7))) & 1;
}

// `s` must hold the bit.
void SetBitAt(std::string& s, uint64_t bit, int on) {
  const auto mask = static_cast<unsigned char>(0x80u >> (bit & 7));
  auto& byte = reinterpret_cast<unsigned char&>(s[bit >> 3]);
  byte = on ? (byte | mask) : (byte & ~mask);
}

// Grows `s` with zero bytes to hold `bit`, once the store said a value of that size may be
// written (a size it refuses is answered before anything is allocated); *grew says whether it
// had to. False after the error reply.
bool GrowTo(Ctx& ctx, std::string& s, uint64_t bit, bool* grew) {
  const uint64_t bytes = (bit >> 3) + 1;
  *grew = s.size() < bytes;
  if (!*grew) return true;
  if (Status st = ctx.store().CheckPut(ctx.argv[1], bytes); !st.ok()) {
    ReplyStatus(ctx, st);
    return false;
  }
  s.resize(bytes, '\0');
  return true;
}

void GetBit(Ctx& ctx) {
  uint64_t bit;
  if (!ArgBitOffset(ctx, ctx.argv[2], 0, &bit)) return;
  std::optional<Value> value;
  if (ReadValue(ctx, ctx.argv[1], &value)) ctx.w.Integer(value ? BitAt(value->view(), bit) : 0);
}

void SetBit(Ctx& ctx) {
  uint64_t bit;
  if (!ArgBitOffset(ctx, ctx.argv[2], 0, &bit)) return;
  int64_t on;
  if (!ParseInt64(ctx.argv[3], &on) || (on != 0 && on != 1)) {
    return ctx.w.Error("ERR bit is not an integer or out of range");
  }
  std::string value;
  bool found, grew;
  if (!ReadString(ctx, ctx.argv[1], &value, &found) || !GrowTo(ctx, value, bit, &grew)) return;
  const int old = BitAt(value, bit);
  // As Redis: a value created, grown or changed is written (and announced), else nothing.
  if (found && !grew && old == on) return ctx.w.Integer(old);
  SetBitAt(value, bit, static_cast<int>(on));
  if (PutKeepingTtl(ctx, ctx.argv[1], value, "setbit")) ctx.w.Integer(old);
}

// The bits a BITCOUNT or BITPOS range names in a value of `bytes` bytes: `start` and `end`
// count bytes, or bits (`in_bits`), as ClampRange takes them.
using BitRange = IndexRange;
std::optional<BitRange> RangeOf(int64_t start, int64_t end, bool in_bits, uint64_t bytes) {
  const std::optional<IndexRange> r =
      ClampRange(start, end, static_cast<int64_t>(in_bits ? bytes * 8 : bytes));
  if (!r || in_bits) return r;
  return BitRange{r->first * 8, r->last * 8 + 7};
}

// BYTE or BIT: whether the range counts bits. False after the error reply.
bool ArgRangeUnit(Ctx& ctx, std::string_view arg, bool* in_bits) {
  *in_bits = EqualsNoCase(arg, "bit");
  if (*in_bits || EqualsNoCase(arg, "byte")) return true;
  ctx.w.Error(kErrSyntax);
  return false;
}

uint64_t CountOnes(std::string_view s, BitRange r) {
  uint64_t n = 0;
  uint64_t bit = r.first;
  for (; bit <= r.last && (bit & 7) != 0; ++bit) n += BitAt(s, bit);  // to a byte's start
  uint64_t byte = bit >> 3;
  const uint64_t whole_end = (r.last + 1) >> 3;  // bytes [byte, whole_end) are wholly in r
  for (; byte + 8 <= whole_end; byte += 8) {
    uint64_t word;
    std::memcpy(&word, s.data() + byte, sizeof word);
    n += std::popcount(word);
  }
  for (; byte < whole_end; ++byte) n += std::popcount(static_cast<unsigned char>(s[byte]));
  for (bit = std::max(bit, whole_end * 8); bit <= r.last; ++bit) n += BitAt(s, bit);
  return n;
}

// BITCOUNT key [start end [BYTE|BIT]]: as Redis 7.0, a missing key answers 0 before the range
// is read.
void BitCount(Ctx& ctx) {
  std::optional<Value> stored;
  if (!ReadValue(ctx, ctx.argv[1], &stored)) return;
  if (!stored) return ctx.w.Integer(0);
  const std::string_view value = stored->view();
  int64_t start = 0, end = -1;
  bool in_bits = false;
  if (ctx.argc() != 2) {
    if (ctx.argc() != 4 && ctx.argc() != 5) return ctx.w.Error(kErrSyntax);
    if (!ArgInt64(ctx, ctx.argv[2], &start) || !ArgInt64(ctx, ctx.argv[3], &end)) return;
    // As Redis 7.0: an empty range of two negative indexes answers before the unit is read.
    if (start < 0 && end < 0 && start > end) return ctx.w.Integer(0);
    if (ctx.argc() == 5 && !ArgRangeUnit(ctx, ctx.argv[4], &in_bits)) return;
  }
  const std::optional<BitRange> range = RangeOf(start, end, in_bits, value.size());
  ctx.w.Integer(range ? static_cast<int64_t>(CountOnes(value, *range)) : 0);
}

// The first bit equal to `bit` in `r`, or nullopt; whole bytes and words with none skipped.
std::optional<uint64_t> FirstBit(std::string_view s, int bit, BitRange r) {
  const uint64_t none = bit ? 0 : ~uint64_t{0};  // a word with no such bit
  uint64_t i = r.first;
  while (i <= r.last) {
    if ((i & 7) == 0 && i + 63 <= r.last) {
      uint64_t word;
      std::memcpy(&word, s.data() + (i >> 3), sizeof word);
      if (word == none) {
        i += 64;
        continue;
      }
    }
    if ((i & 7) == 0 && i + 7 <= r.last && static_cast<unsigned char>(s[i >> 3]) == (none & 0xFF)) {
      i += 8;
      continue;
    }
    if (BitAt(s, i) == bit) return i;
    ++i;
  }
  return std::nullopt;
}

// BITPOS key bit [start [end [BYTE|BIT]]]: a missing key is all zeros; looking for a 0 with no
// end given, the value is taken as followed by zeros (its length in bits is the answer when the
// range holds none), and with an end given, as ending there (-1).
void BitPos(Ctx& ctx) {
  int64_t bit;
  if (!ArgInt64(ctx, ctx.argv[2], &bit)) return;
  if (bit != 0 && bit != 1) return ctx.w.Error("ERR The bit argument must be 1 or 0.");
  std::optional<Value> stored;
  if (!ReadValue(ctx, ctx.argv[1], &stored)) return;
  if (!stored) return ctx.w.Integer(bit ? -1 : 0);
  const std::string_view value = stored->view();
  if (ctx.argc() > 6) return ctx.w.Error(kErrSyntax);
  int64_t start = 0, end = -1;
  bool in_bits = false;
  const bool end_given = ctx.argc() >= 5;
  if (ctx.argc() >= 4 && !ArgInt64(ctx, ctx.argv[3], &start)) return;
  if (ctx.argc() == 6 && !ArgRangeUnit(ctx, ctx.argv[5], &in_bits)) return;
  if (end_given && !ArgInt64(ctx, ctx.argv[4], &end)) return;
  const std::optional<BitRange> range = RangeOf(start, end, in_bits, value.size());
  if (!range) return ctx.w.Integer(-1);
  if (std::optional<uint64_t> at = FirstBit(value, static_cast<int>(bit), *range)) {
    return ctx.w.Integer(static_cast<int64_t>(*at));
  }
  const bool past_the_end = bit == 0 && !end_given;
  ctx.w.Integer(past_the_end ? static_cast<int64_t>((range->last / 8 + 1) * 8) : -1);
}

enum class BitOpKind { kAnd, kOr, kXor, kNot };

std::optional<BitOpKind> BitOpOf(std::string_view name) {
  if (EqualsNoCase(name, "and")) return BitOpKind::kAnd;
  if (EqualsNoCase(name, "or")) return BitOpKind::kOr;
  if (EqualsNoCase(name, "xor")) return BitOpKind::kXor;
  if (EqualsNoCase(name, "not")) return BitOpKind::kNot;
  return std::nullopt;
}

// `op` over `sources`, each padded with zero bytes to the longest.
std::string Combine(BitOpKind op, const std::vector<std::string_view>& sources) {
  size_t longest = 0;
  for (std::string_view s : sources) longest = std::max(longest, s.size());
  std::string out(sources[0]);
  out.resize(longest, '\0');
  char* o = out.data();
  for (size_t i = 1; i < sources.size(); ++i) {
    const std::string_view s = sources[i];
    if (op == BitOpKind::kAnd) {
      for (size_t b = 0; b < s.size(); ++b) o[b] = static_cast<char>(o[b] & s[b]);
      std::fill(o + s.size(), o + longest, '\0');
    } else if (op == BitOpKind::kOr) {
      for (size_t b = 0; b < s.size(); ++b) o[b] = static_cast<char>(o[b] | s[b]);
    } else {
      for (size_t b = 0; b < s.size(); ++b) o[b] = static_cast<char>(o[b] ^ s[b]);
    }
  }
  if (op == BitOpKind::kNot) {
    for (char& c : out) c = static_cast<char>(~c);
  }
  return out;
}

// BITOP AND|OR|XOR|NOT destkey key [key ...]: missing keys are empty, shorter values padded
// with zero bytes; an empty result deletes destkey, as in Redis.
void BitOp(Ctx& ctx) {
  const std::optional<BitOpKind> op = BitOpOf(ctx.argv[1]);
  if (!op) return ctx.w.Error(kErrSyntax);
  if (op == BitOpKind::kNot && ctx.argc() != 4) {
    return ctx.w.Error("ERR BITOP NOT must be called with a single source key.");
  }
  std::vector<std::optional<Value>> stored(ctx.argc() - 3);
  std::vector<std::string_view> sources;
  for (size_t i = 0; i < stored.size(); ++i) {
    if (!ReadValue(ctx, ctx.argv[i + 3], &stored[i])) return;
    sources.push_back(stored[i] ? stored[i]->view() : std::string_view());
  }
  const std::string result = Combine(*op, sources);
  const std::string& dest = ctx.argv[2];
  if (result.empty()) {
    if (DeleteKey(ctx, dest)) ctx.w.Integer(0);
    return;
  }
  Status s = ctx.store().Put(dest, result, ctx.WriteOptions());
  if (!s.ok()) return ReplyStatus(ctx, s);
  ctx.core.events.Notify(kNotifyString, "set", dest);
  ctx.w.Integer(static_cast<int64_t>(result.size()));
}

// BITFIELD's fields: a signed (i1..i64) or unsigned (u1..u63) integer of `bits` bits, at a bit
// offset, most significant bit first; and what SET and INCRBY do with a value it cannot hold.
struct FieldType {
  bool is_signed = false;
  int bits = 0;
};
enum class Overflow { kWrap, kSat, kFail };

struct FieldOp {
  enum Kind { kGet, kSet, kIncrBy } kind;
  FieldType type;
  uint64_t offset;
  int64_t arg;  // SET's value, INCRBY's increment
  Overflow overflow;
};

// i<bits> or u<bits>, lowercase, as Redis takes them. False after the error reply.
bool ArgFieldType(Ctx& ctx, std::string_view arg, FieldType* out) {
  int64_t bits = 0;
  const bool ok = !arg.empty() && (arg[0] == 'i' || arg[0] == 'u') &&
                  ParseInt64(arg.substr(1), &bits) && bits >= 1 &&
                  bits <= (arg[0] == 'i' ? 64 : 63);
  if (!ok) {
    ctx.w.Error(
        "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported "
        "but i64 is.");
    return false;
  }
  *out = {arg[0] == 'i', static_cast<int>(bits)};
  return true;
}

int64_t ReadField(std::string_view s, FieldType t, uint64_t offset) {
  uint64_t v = 0;
  for (int i = 0; i < t.bits; ++i) v = (v << 1) | static_cast<uint64_t>(BitAt(s, offset + i));
  if (t.is_signed && t.bits < 64 && (v >> (t.bits - 1)) & 1) v |= ~uint64_t{0} << t.bits;
  return static_cast<int64_t>(v);
}

// `s` must hold the field.
void WriteField(std::string& s, FieldType t, uint64_t offset, int64_t value) {
  const auto v = static_cast<uint64_t>(value);
  for (int i = 0; i < t.bits; ++i) {
    SetBitAt(s, offset + i, static_cast<int>((v >> (t.bits - 1 - i)) & 1));
  }
}

// What a field holds for `wanted` (SET's value, or the old value plus INCRBY's increment):
// itself when it fits, else its low bits (WRAP, read back as the field's type), the nearest
// bound (SAT), or nothing (FAIL: the operation changes nothing and answers nil).
std::optional<int64_t> Fit(__int128 wanted, FieldType t, Overflow overflow) {
  const __int128 span = static_cast<__int128>(1) << t.bits;
  const __int128 max = t.is_signed ? span / 2 - 1 : span - 1;
  const __int128 min = t.is_signed ? -span / 2 : 0;
  if (wanted >= min && wanted <= max) return static_cast<int64_t>(wanted);
  if (overflow == Overflow::kFail) return std::nullopt;
  if (overflow == Overflow::kSat) return static_cast<int64_t>(wanted > max ? max : min);
  __int128 low = wanted & (span - 1);  // two's complement: the low bits of a negative one too
  if (t.is_signed && low > max) low -= span;
  return static_cast<int64_t>(low);
}

// BITFIELD's arguments, parsed as Redis parses them (each operation's type, offset and value
// in turn, the first bad one answered). False after the error reply.
bool ParseFieldOps(Ctx& ctx, std::vector<FieldOp>* ops) {
  Overflow overflow = Overflow::kWrap;
  for (size_t j = 2; j < ctx.argc();) {
    const std::string name = ToLower(ctx.argv[j]);
    const size_t left = ctx.argc() - j - 1;
    if (name == "overflow" && left >= 1) {
      const std::string how = ToLower(ctx.argv[j + 1]);
      if (how == "wrap") {
        overflow = Overflow::kWrap;
      } else if (how == "sat") {
        overflow = Overflow::kSat;
      } else if (how == "fail") {
        overflow = Overflow::kFail;
      } else {
        ctx.w.Error("ERR Invalid OVERFLOW type specified");
        return false;
      }
      j += 2;
      continue;
    }
    FieldOp op{FieldOp::kGet, {}, 0, 0, overflow};
    if (name == "set" && left >= 3) {
      op.kind = FieldOp::kSet;
    } else if (name == "incrby" && left >= 3) {
      op.kind = FieldOp::kIncrBy;
    } else if (name != "get" || left < 2) {
      ctx.w.Error(kErrSyntax);
      return false;
    }
    if (!ArgFieldType(ctx, ctx.argv[j + 1], &op.type)) return false;
    if (!ArgBitOffset(ctx, ctx.argv[j + 2], op.type.bits, &op.offset)) return false;
    if (op.kind != FieldOp::kGet && !ArgInt64(ctx, ctx.argv[j + 3], &op.arg)) return false;
    ops->push_back(op);
    j += op.kind == FieldOp::kGet ? 3 : 4;
  }
  return true;
}

// Runs `ops` on `value` in order; the replies (nil for a refused write) and how many writes
// count as changes: as Redis counts them, a write that changed the field's bits or, once the
// command created or grew the value (`grown`), any write made.
std::vector<std::optional<int64_t>> RunFieldOps(const std::vector<FieldOp>& ops, std::string& value,
                                                bool grown, size_t* changes) {
  std::vector<std::optional<int64_t>> replies;
  for (const FieldOp& op : ops) {
    const int64_t old = ReadField(value, op.type, op.offset);
    if (op.kind == FieldOp::kGet) {
      replies.emplace_back(old);
      continue;
    }
    // An unsigned field takes SET's value as the 64 bits it is (Redis's cast): -1 is too large.
    const __int128 wanted = op.kind == FieldOp::kIncrBy ? static_cast<__int128>(old) + op.arg
                            : op.type.is_signed
                                ? static_cast<__int128>(op.arg)
                                : static_cast<__int128>(static_cast<uint64_t>(op.arg));
    const std::optional<int64_t> now = Fit(wanted, op.type, op.overflow);
    if (now) {
      WriteField(value, op.type, op.offset, *now);
      if (grown || *now != old) ++*changes;
    }
    replies.push_back(!now ? std::nullopt : op.kind == FieldOp::kSet ? std::optional(old) : now);
  }
  return replies;
}

// BITFIELD key [GET type offset] [SET type offset value] [INCRBY type offset increment]
// [OVERFLOW WRAP|SAT|FAIL] ...; BITFIELD_RO (`read_only`) takes GET only. With a write among
// them the value first grows to hold every field written, as Redis does (so a missing key is
// created even when FAIL refuses every write); the `setbit` event only for changes
// (RunFieldOps).
void RunBitField(Ctx& ctx, bool read_only) {
  std::vector<FieldOp> ops;
  if (!ParseFieldOps(ctx, &ops)) return;
  uint64_t highest = 0;  // the last bit a write reaches
  bool writes = false;
  for (const FieldOp& op : ops) {
    if (op.kind == FieldOp::kGet) continue;
    writes = true;
    highest = std::max(highest, op.offset + static_cast<uint64_t>(op.type.bits) - 1);
  }
  if (writes && read_only) return ctx.w.Error("ERR BITFIELD_RO only supports the GET subcommand");
  if (!writes) {  // read where the engine keeps the value
    std::optional<Value> stored;
    if (!ReadValue(ctx, ctx.argv[1], &stored)) return;
    const std::string_view value = stored ? stored->view() : std::string_view();
    ctx.w.ArrayHeader(ops.size());
    for (const FieldOp& op : ops) ctx.w.Integer(ReadField(value, op.type, op.offset));
    return;
  }
  std::string value;
  bool found, grew;
  if (!ReadString(ctx, ctx.argv[1], &value, &found) || !GrowTo(ctx, value, highest, &grew)) {
    return;
  }
  const bool grown = !found || grew;
  size_t changes = 0;
  const std::vector<std::optional<int64_t>> replies = RunFieldOps(ops, value, grown, &changes);
  if (changes > 0 || grown) {
    if (!PutKeepingTtl(ctx, ctx.argv[1], value, changes > 0 ? "setbit" : "")) return;
  }
  ctx.w.ArrayHeader(replies.size());
  for (const std::optional<int64_t>& r : replies) r ? ctx.w.Integer(*r) : ctx.w.Null();
}

void BitField(Ctx& ctx) {
  RunBitField(ctx, false);
}

}  // namespace

bool BitFieldWrites(std::span<const std::string> call) {
  for (size_t i = 2; i < call.size(); ++i) {
    const size_t left = call.size() - i - 1;
    const std::string op = ToLower(call[i]);
    if (op == "get" && left >= 2) {
      i += 2;
    } else if (op == "overflow" && left >= 1) {
      i += 1;
    } else {
      return true;  // SET or INCRBY, or a syntax error, which Redis takes as a write too
    }
  }
  return false;
}

namespace {

void BitFieldRo(Ctx& ctx) {
  RunBitField(ctx, true);
}

constexpr CommandRow kRows[] = {
    {"getbit", 3, "readonly", WithFlags(kOneKey, "RO access"), GetBit},
    {"setbit", 4, "write exclusive", WithFlags(kOneKey, "RW access update"), SetBit},
    {"bitcount", -2, "readonly", WithFlags(kOneKey, "RO access"), BitCount},
    {"bitpos", -3, "readonly", WithFlags(kOneKey, "RO access"), BitPos},
    {"bitop", -4, "write exclusive", {2, -1, 1, {}, "OW update | RO access"}, BitOp},
    {"bitfield", -2, "write exclusive", WithFlags(kOneKey, "RW access update"), BitField},
    {"bitfield_ro", -2, "readonly", WithFlags(kOneKey, "RO access"), BitFieldRo},
};

}  // namespace

std::span<const CommandRow> BitCommands() {
  return kRows;
}

}  // namespace larder::server
