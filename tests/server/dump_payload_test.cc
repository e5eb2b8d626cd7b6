// DUMP payloads (commands/dump_payload.h): Redis's CRC-64, round trips, payloads captured from
// Redis 7.0.15's DUMP (decoded, and re-encoded byte for byte where Redis does not compress), and
// the refusal of corrupt, truncated, hostile and non-string payloads.
#include "commands/dump_payload.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace larder::server {
namespace {

constexpr uint64_t kNoLimit = std::numeric_limits<uint64_t>::max();

// The bytes written as hex digits; spaces are ignored.
std::string Hex(std::string_view hex) {
  std::string out;
  int high = -1;
  for (char c : hex) {
    if (c == ' ') continue;
    int digit = c <= '9' ? c - '0' : c - 'a' + 10;
    if (high < 0) {
      high = digit;
    } else {
      out.push_back(static_cast<char>(high * 16 + digit));
      high = -1;
    }
  }
  return out;
}

// `body` (type byte and string) with a valid footer for RDB version `version`.
std::string WithFooter(std::string body, uint16_t version = 10) {
  body.push_back(static_cast<char>(version & 0xff));
  body.push_back(static_cast<char>(version >> 8));
  uint64_t crc = Crc64Jones(0, body);
  for (int i = 0; i < 8; ++i, crc >>= 8) body.push_back(static_cast<char>(crc & 0xff));
  return body;
}

// The decoded value, or the error text prefixed with "error: ".
std::string Decode(std::string_view payload, uint64_t max_value_bytes = kNoLimit) {
  std::string value = "untouched";
  std::optional<std::string> err = DecodeDumpPayload(payload, max_value_bytes, &value);
  if (err) {
    EXPECT_EQ(value, "untouched") << "the value must be left alone on error";
    return "error: " + *err;
  }
  return value;
}

const std::string kBadData = "error: " + std::string(kErrBadDataFormat);
const std::string kBadChecksum = "error: " + std::string(kErrDumpPayloadChecksum);

// Deterministic test data: the 31-bit LCG x = x * 1103515245 + 12345, seeded with 1.
std::string LcgLetters(size_t n) {  // 'a'..'d', so LZF finds matches
  std::string s;
  uint32_t x = 1;
  for (size_t i = 0; i < n; ++i) {
    x = (x * 1103515245u + 12345u) & 0x7fffffffu;
    s.push_back(static_cast<char>('a' + (x >> 16) % 4));
  }
  return s;
}

std::string AllByteValues() {
  std::string s;
  for (int b = 0; b < 256; ++b) s.push_back(static_cast<char>(b));
  return s;
}

// ---- CRC-64 ----

uint64_t Crc64BitByBit(std::string_view bytes) {
  uint64_t crc = 0;
  for (unsigned char c : bytes) {
    crc ^= c;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1) ? (crc >> 1) ^ 0x95ac9329ac4bc9b5 : crc >> 1;
  }
  return crc;
}

TEST(Crc64Jones, MatchesTheCheckValue) {
  EXPECT_EQ(Crc64Jones(0, "123456789"), 0xe9c6d914c4b8d9caull);
  EXPECT_EQ(Crc64Jones(0, ""), 0u);
}

TEST(Crc64Jones, ContinuesAndMatchesTheBitwiseDefinitionAtEveryLengthAndAlignment) {
  std::string data = LcgLetters(300) + AllByteValues();
  for (size_t start = 0; start < 8; ++start) {
    for (size_t len = 0; start + len <= data.size(); len += 7) {
      std::string_view s = std::string_view(data).substr(start, len);
      ASSERT_EQ(Crc64Jones(0, s), Crc64BitByBit(s)) << start << " " << len;
      ASSERT_EQ(Crc64Jones(Crc64Jones(0, s.substr(0, len / 3)), s.substr(len / 3)),
                Crc64BitByBit(s));
    }
  }
}

// ---- round trips ----

TEST(DumpPayload, RoundTripsEveryKindOfValue) {
  std::vector<std::string> values = {"",
                                     "a",
                                     std::string(20, 'x'),
                                     std::string(21, 'x'),
                                     std::string(63, 'y'),
                                     std::string(64, 'y'),
                                     std::string(16383, 'z'),
                                     std::string(16384, 'z'),
                                     std::string(64 * 1024, '\0'),
                                     LcgLetters(64 * 1024),
                                     AllByteValues(),
                                     std::string("\0\r\n\xff", 4)};
  for (const char* n : {"0",
                        "-1",
                        "127",
                        "-128",
                        "128",
                        "32767",
                        "-32768",
                        "32768",
                        "2147483647",
                        "-2147483648",
                        "2147483648",
                        "-2147483649",
                        "12345678901",
                        "9223372036854775807",
                        "007",
                        "+1",
                        "-0",
                        " 1",
                        "1 ",
                        "1.5",
                        "-"}) {
    values.push_back(n);
  }
  for (const std::string& v : values) {
    std::string payload = EncodeDumpPayload(v);
    EXPECT_EQ(Decode(payload), v) << v.size();
  }
}

TEST(DumpPayload, UsesRedisLengthFormsAndNeverCompresses) {
  auto header = [](size_t len) {  // the type byte and the length, after which the bytes follow
    std::string p = EncodeDumpPayload(std::string(len, 'q'));
    EXPECT_EQ(p.size() - len, p.find('q') + 10) << len;
    return p.substr(0, p.find('q'));
  };
  EXPECT_EQ(header(63), Hex("00 3f"));
  EXPECT_EQ(header(64), Hex("00 4040"));
  EXPECT_EQ(header(16383), Hex("00 7fff"));
  EXPECT_EQ(header(16384), Hex("00 80 00004000"));
  EXPECT_EQ(header(70000), Hex("00 80 00011170"));
}

// ---- payloads captured from Redis 7.0.15: SET k <value>; DUMP k ----

struct RedisDump {
  std::string value;
  std::string payload;
  bool encodes_identically;  // false where Redis LZF-compressed the value
};

// "abcdefghij" ten times, which Redis LZF-compressed to 18 bytes.
RedisDump RedisDumpOf100Bytes() {
  std::string value;
  for (int i = 0; i < 10; ++i) value += "abcdefghij";
  return {value, Hex("00 c3 12 4064 0a6162636465666768696a61e04e0901696a 0a00 d485292a1f2eff66"),
          false};
}

std::vector<RedisDump> RedisDumps() {
  return {
      {"hello", Hex("00 05 68656c6c6f 0a00 6372df766534200a"), true},
      {"", Hex("00 00 0a00 5d9b5c400f7fa2da"), true},
      {"123", Hex("00 c0 7b 0a00 48e253e1007a67b9"), true},
      {"-5", Hex("00 c0 fb 0a00 49c4c6f4d7263f68"), true},
      {"0", Hex("00 c0 00 0a00 9840a778f8500308"), true},
      {"-1", Hex("00 c0 ff 0a00 0c937e2485089dc5"), true},
      {"127", Hex("00 c0 7f 0a00 0db5eb315254c514"), true},
      {"-128", Hex("00 c0 80 0a00 9966326d2f0c5bd9"), true},
      {"128", Hex("00 c1 8000 0a00 eb7ab3b510cf4b65"), true},
      {"32767", Hex("00 c1 ff7f 0a00 495a37da17f4d52b"), true},
      {"-32768", Hex("00 c1 0080 0a00 b540064753bb1ace"), true},
      {"32768", Hex("00 c2 00800000 0a00 45d82eedd5bda910"), true},
      {"70000", Hex("00 c2 70110100 0a00 01a408fe953095a5"), true},
      {"2147483647", Hex("00 c2 ffffff7f 0a00 2c74e59ee02eada1"), true},
      {"-2147483648", Hex("00 c2 00000080 0a00 c74f873e33558187"), true},
      {"2147483648", Hex("00 0a 32313437343833363438 0a00 e7b129a34c1d76ee"), true},
      {"-2147483649", Hex("00 0b 2d32313437343833363439 0a00 c261377908f2028c"), true},
      {"12345678901", Hex("00 0b 3132333435363738393031 0a00 304e52d727176510"), true},
      {"9223372036854775807",
       Hex("00 13 39323233333732303336383534373735383037 0a00 3a657e9481e85f22"), true},
      {"007", Hex("00 03 303037 0a00 7258e27b4c69bad9"), true},
      {"+1", Hex("00 02 2b31 0a00 c286f0d7439aee6f"), true},
      {"-0", Hex("00 02 2d30 0a00 d5411fd9d6d050cc"), true},
      {" 1", Hex("00 02 2031 0a00 3fe5791ae5defb1b"), true},
      {std::string(20, 'x'),
       Hex("00 14 7878787878787878787878787878787878787878 0a00 5b3c81eca58cc56b"), true},
      {std::string(21, 'x'), Hex("00 c3 06 15 017878e00a00 0a00 941a83676017192f"), false},
      {std::string(64, 'x'), Hex("00 c3 09 4040 017878e033000178 78 0a00 7671d576c5795442"), false},
      RedisDumpOf100Bytes(),
      {AllByteValues(),
       Hex("00 4100"
           "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
           "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
           "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
           "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
           "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
           "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
           "c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
           "e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"
           "0a00 a2fe30a40f146abf"),
       true},
  };
}

// LcgLetters(1000), which Redis LZF-compressed to 622 bytes.
std::string RedisDumpOfLcgLetters1000() {
  return Hex(
      "00c3426e43e8086363626464646364612007036161626420010263636360120162632010400b036362626120"
      "0a400802646363200b2005201e201020080264616220240263636120022009202c201f026462612001016261"
      "2043201f40146003600c20562029202e402d202e2016205c20342061200c60062059203d0062200020082036"
      "40222030200c20270064402f400a20b640242021400b201e4043602e202d006440d220082014202520422064"
      "202f20162013201b2068206320b86070203d400e40452010202920552024202e207a2086204e40194050207b"
      "20ae20422057202b20c020aa400c20276014201d209a201b2042605f202320444048202c2019204b200f2105"
      "202b20032023600f2065202740582021206320182031400d202b20642039200440558009200c604540844045"
      "4030203740922018200320d320642009201b20f040b82013203720be6001201b200e2035201120b240274041"
      "201020e6600d205d203b6035403f204620a4202e40262087603e2044203120652045203020042008201d2042"
      "204b4037200140e2201720646034200520c520db6000206b60204047204a406b201a6009203e20442036204f"
      "20014040205a20074061200a400420632004204320044022206d2020204e40072041800a2064206960132028"
      "2017402b404b2000201b2038406040dd205a20402000210520054028401f4072202620a92009400d2008202c"
      "2032200e200620544036200c4113201e20042030200f404c800a400b4005208e201e4030400f205520402055"
      "203f20184004201b20102054206560032006201340d6214a203a200020e920572018408820e52089203a2050"
      "400720192000200d201e20120a0080dee3aefd09bfee");
}

TEST(DumpPayload, DecodesRedisDumps) {
  for (const RedisDump& d : RedisDumps()) EXPECT_EQ(Decode(d.payload), d.value);
  EXPECT_EQ(Decode(RedisDumpOfLcgLetters1000()), LcgLetters(1000));
}

TEST(DumpPayload, EncodesLikeRedisWhereRedisDoesNotCompress) {
  for (const RedisDump& d : RedisDumps()) {
    if (!d.encodes_identically) continue;
    EXPECT_EQ(EncodeDumpPayload(d.value), d.payload) << d.value;
  }
}

TEST(DumpPayload, AcceptsRdbVersionsUpToRedis72s) {
  // Redis 7.2 writes RDB version 11 with the same string encodings.
  EXPECT_EQ(Decode(WithFooter(Hex("00 05 68656c6c6f"), 11)), "hello");
  EXPECT_EQ(Decode(WithFooter(Hex("00 c3 06 15 017878e00a00"), 11)), std::string(21, 'x'));
  EXPECT_EQ(Decode(WithFooter(Hex("00 05 68656c6c6f"), 9)), "hello");
  EXPECT_EQ(Decode(WithFooter(Hex("00 05 68656c6c6f"), 12)), kBadChecksum);
  EXPECT_EQ(Decode(WithFooter(Hex("00 05 68656c6c6f"), 0x0a00)), kBadChecksum);
}

TEST(DumpPayload, AcceptsLongerLengthFormsThanNeededAsRedisDoes) {
  EXPECT_EQ(Decode(WithFooter(Hex("00 4005 68656c6c6f"))), "hello");
  EXPECT_EQ(Decode(WithFooter(Hex("00 80 00000005 68656c6c6f"))), "hello");
  EXPECT_EQ(Decode(WithFooter(Hex("00 81 0000000000000005 68656c6c6f"))), "hello");
  EXPECT_EQ(Decode(WithFooter(Hex("00 c2 05000000"))), "5");
}

TEST(DumpPayload, DecodesLzfAtItsGreatestExpansion) {
  // One literal 'z', then back references of the longest kind (3 bytes for 264 bytes, offset 1):
  // what LZF makes of a long run, whose ratio approaches the decoder's 88:1 bound.
  std::string lzf = Hex("00 7a");  // a literal run of one byte: z
  for (int i = 0; i < 1000; ++i) lzf += Hex("e0 ff 00");
  std::string value(1 + 264 * 1000, 'z');
  std::string lengths = Hex("80 00000bba 80 00040741");  // 3002 compressed, 264001 bytes
  EXPECT_EQ(Decode(WithFooter(Hex("00 c3") + lengths + lzf)), value);
  EXPECT_EQ(Decode(WithFooter(Hex("00 c3 80 00000bba 80 00040742") + lzf)), kBadData);
}

// ---- corrupt, truncated and hostile payloads ----

std::vector<std::string> ValidPayloads() {
  std::vector<std::string> out = {RedisDumpOfLcgLetters1000(), EncodeDumpPayload(LcgLetters(300))};
  for (const RedisDump& d : RedisDumps()) out.push_back(d.payload);
  return out;
}

TEST(DumpPayload, RefusesEverySingleBitFlip) {
  for (const std::string& valid : ValidPayloads()) {
    for (size_t bit = 0; bit < valid.size() * 8; ++bit) {
      std::string p = valid;
      p[bit / 8] = static_cast<char>(p[bit / 8] ^ (1 << (bit % 8)));
      ASSERT_EQ(Decode(p).rfind("error: ERR ", 0), 0u) << valid.size() << " bit " << bit;
    }
  }
}

TEST(DumpPayload, RefusesEveryTruncation) {
  for (const std::string& valid : ValidPayloads()) {
    for (size_t len = 0; len < valid.size(); ++len) {
      std::string got = Decode(valid.substr(0, len));
      ASSERT_EQ(got.rfind("error: ERR ", 0), 0u) << valid.size() << " cut to " << len;
      if (len < 10) {
        ASSERT_EQ(got, kBadChecksum);
      }
    }
  }
}

TEST(DumpPayload, SurvivesEveryBitFlipInsideAValidChecksum) {
  // The CRC is recomputed, so the string decoder itself meets each corrupted body: it must
  // either decode something or refuse, never read out of bounds or crash.
  for (const std::string& valid : {RedisDumpOfLcgLetters1000(), RedisDumpOf100Bytes().payload}) {
    std::string body = valid.substr(0, valid.size() - 10);
    for (size_t bit = 8; bit < body.size() * 8; ++bit) {
      std::string b = body;
      b[bit / 8] = static_cast<char>(b[bit / 8] ^ (1 << (bit % 8)));
      std::string got = Decode(WithFooter(b));
      if (got.rfind("error: ", 0) == 0) {
        ASSERT_EQ(got, kBadData) << bit;
      }
    }
  }
}

TEST(DumpPayload, RefusesMalformedStringsWithAValidChecksum) {
  for (const char* body : {
           "",                             // no type byte
           "00",                           // no string
           "00 05 68656c6c",               // raw string cut short (Redis reads into the footer)
           "00 05 68656c6c6f 21",          // a byte after the string (Redis ignores it)
           "00 40",                        // 14-bit length cut short
           "00 80 000000",                 // 32-bit length cut short
           "00 81 00000000000000",         // 64-bit length cut short
           "00 82 00000005 68656c6c6f",    // no such length form
           "00 bf 05",                     // nor this one
           "00 c0",                        // int8 missing
           "00 c1 01",                     // int16 cut short
           "00 c2 010000",                 // int32 cut short
           "00 c4 05",                     // no such encoding
           "00 ff",                        // nor this one
           "00 c3 06 16 017878e00a00",     // LZF: uncompressed length too long
           "00 c3 06 14 017878e00a00",     // LZF: uncompressed length too short
           "00 c3 07 15 017878e00a00",     // LZF: compressed bytes cut short
           "00 c3 06 15 017878e00a",       // likewise
           "00 c3 06 15 017878e00a00 00",  // LZF: a byte after it
           "00 c3 00 00",                  // LZF of nothing (Redis accepts it as "")
           "00 c3 01 00 00",               // LZF claiming an empty result (Redis accepts it)
           "00 c3 c0 15 017878e00a00",     // LZF: an encoded length where a length must be
           "00 c3 02 03 2000",             // LZF: a back reference before any output
       }) {
    EXPECT_EQ(Decode(WithFooter(Hex(body))), kBadData) << body;
  }
}

TEST(DumpPayload, RefusesHugeLengthsWithoutAllocating) {
  // With no size limit, only the checks against the payload stand between these and an
  // allocation of 2^63 bytes (which would throw and end the test).
  EXPECT_EQ(Decode(WithFooter(Hex("00 81 8000000000000000 68656c6c6f"))), kBadData);
  EXPECT_EQ(Decode(WithFooter(Hex("00 80 ffffffff 68656c6c6f"))), kBadData);
  EXPECT_EQ(Decode(WithFooter(Hex("00 c3 06 81 8000000000000000 017878e00a00"))), kBadData);
  EXPECT_EQ(Decode(WithFooter(Hex("00 c3 81 8000000000000000 15 017878e00a00"))), kBadData);
  // 6 compressed bytes can hold at most 6 * 88 bytes of output.
  EXPECT_EQ(Decode(WithFooter(Hex("00 c3 06 80 00100000 017878e00a00"))), kBadData);
}

TEST(DumpPayload, RefusesValuesLongerThanTheLimit) {
  RedisDump lzf = RedisDumpOf100Bytes();
  EXPECT_EQ(Decode(lzf.payload, 100), lzf.value);
  EXPECT_EQ(Decode(lzf.payload, 99), kBadData);
  EXPECT_EQ(Decode(EncodeDumpPayload("hello"), 5), "hello");
  EXPECT_EQ(Decode(EncodeDumpPayload("hello"), 4), kBadData);
  EXPECT_EQ(Decode(EncodeDumpPayload("-2147483648"), 11), "-2147483648");
  EXPECT_EQ(Decode(EncodeDumpPayload("-2147483648"), 10), kBadData);
}

TEST(DumpPayload, RefusesWrongChecksumsAndShortPayloads) {
  std::string p = EncodeDumpPayload("hello");
  p.back() = static_cast<char>(p.back() ^ 0x80);
  EXPECT_EQ(Decode(p), kBadChecksum);
  EXPECT_EQ(Decode(""), kBadChecksum);
  EXPECT_EQ(Decode("123456789"), kBadChecksum);
  EXPECT_EQ(Decode(Hex("00 05 68656c6c6f 0a00 0000000000000000")), kBadChecksum);
  EXPECT_EQ(Decode(WithFooter("")), kBadData);  // a footer alone: Redis says the same
}

// ---- values Larder does not store ----

TEST(DumpPayload, NamesNonStringValues) {
  // Captured from Redis 7.0.15: RPUSH l a b / HSET h f v / SADD s a / SADD is 1 / ZADD z 1 a /
  // XADD x 1-1 f v, then DUMP.
  struct {
    std::string payload;
    const char* expected;
  } cases[] = {
      {Hex("1201020d0d0000000200816102816202ff0a0068eb0a891341bbb1"), "list (RDB type 18)"},
      {Hex("100d0d0000000200816602817602ff0a0020f13d442354089d"), "hash (RDB type 16)"},
      {Hex("020101610a006296e97e44d21a6d"), "set (RDB type 2)"},
      {Hex("0b0a020000000100000001000a00056f61290c490534"), "set (RDB type 11)"},
      {Hex("110c0c00000002008161020101ff0a00a805ceb8d7a93302"), "zset (RDB type 17)"},
      {Hex("130110000000000000000100000000000000011d1d0000000a00010100010101816602000102010001"
           "00018176020401ff0101010101000001000a00ff55ab626ac035db"),
       "stream (RDB type 19)"},
      {WithFooter(Hex("07 05 68656c6c6f")), "module (RDB type 7)"},
      {WithFooter(Hex("15 05 68656c6c6f"), 11), "stream (RDB type 21)"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(Decode(c.payload), "error: ERR DUMP payload holds a Redis " +
                                     std::string(c.expected) + "; Larder stores strings only");
  }
  // Not an RDB object type at all (Redis: "Bad data format").
  for (const char* type : {"08", "16", "c8", "ff"}) {
    EXPECT_EQ(Decode(WithFooter(Hex(std::string(type) + "05 68656c6c6f"))), kBadData) << type;
  }
}

}  // namespace
}  // namespace larder::server
