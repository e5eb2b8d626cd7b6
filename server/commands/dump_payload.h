// Redis's DUMP payload for a string value: what DUMP replies and RESTORE takes, in Redis 7's
// format, so that a payload moves between Larder and Redis in either direction.
//
//   <type: 1 byte, 0 = RDB_TYPE_STRING> <the string, RDB-encoded>
//   <RDB version: 2 bytes, little-endian> <CRC-64 of every byte before it: 8 bytes, little-endian>
//
// The string's RDB encoding is one of
//   - an integer: 0xC0 + int8, 0xC1 + int16, 0xC2 + int32 (little-endian, two's complement),
//     standing for the integer's canonical decimal text;
//   - a length (00xxxxxx: 6 bits; 01xxxxxx + 1 byte: 14 bits; 0x80 + 4 bytes; 0x81 + 8 bytes,
//     big-endian) followed by that many raw bytes;
//   - LZF: 0xC3, the compressed length, the uncompressed length, then the compressed bytes.
//
// Larder never compresses: its values are multi-MiB tensors, and Redis accepts uncompressed
// strings of any length. Redis 7 LZF-compresses a string longer than 20 bytes whenever LZF
// shrinks it by at least 4 bytes, so EncodeDumpPayload's output is byte-identical to Redis 7.0's
// DUMP for values of at most 20 bytes (and for longer ones LZF cannot shrink, such as random
// bytes); other payloads differ in bytes but RESTORE to the same value in both.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace larder::server {

// The RDB version EncodeDumpPayload writes: Redis 7.0's, which Redis 7.0 and later accept
// (RESTORE refuses a version newer than its own).
inline constexpr uint16_t kDumpRdbVersionWritten = 10;
// The newest RDB version DecodeDumpPayload reads: Redis 7.2's.
inline constexpr uint16_t kDumpRdbVersionReadMax = 11;

// Redis's error texts for RESTORE (without '-' and CRLF).
inline constexpr std::string_view kErrDumpPayloadChecksum =
    "ERR DUMP payload version or checksum are wrong";
inline constexpr std::string_view kErrBadDataFormat = "ERR Bad data format";

// Redis's CRC-64 (the "Jones" polynomial 0xad93d23594c935a9, reflected, initial value 0, no
// final xor): continues `crc` over `bytes`. Crc64Jones(0, "123456789") == 0xe9c6d914c4b8d9ca,
// and Crc64Jones(Crc64Jones(0, a), b) == Crc64Jones(0, a + b).
uint64_t Crc64Jones(uint64_t crc, std::string_view bytes);

// The DUMP payload of the string `value`, RDB version kDumpRdbVersionWritten. A value that is
// the canonical decimal of an int32 ("-5", "70000"; not "007", "+1", "-0" or "2147483648") is
// integer-encoded, as Redis does; any other value is stored raw, never compressed.
std::string EncodeDumpPayload(std::string_view value);

// Decodes the DUMP payload of a string written by Redis 7.0-7.2 or by EncodeDumpPayload. On
// success sets *value and returns nullopt; otherwise returns the error reply text and leaves
// *value untouched:
//   - kErrDumpPayloadChecksum: shorter than the 10-byte footer, an RDB version newer than
//     kDumpRdbVersionReadMax, or a CRC-64 that does not match;
//   - "ERR DUMP payload holds a Redis <kind> (RDB type N); Larder stores strings only": a list,
//     set, zset, hash, stream or module value (<kind> is what Redis's TYPE replies, "module"
//     for any module type);
//   - kErrBadDataFormat: an unknown type byte, a malformed or truncated string encoding, bytes
//     between the string and the footer, a failed LZF decompression, or a value longer than
//     max_value_bytes.
// Every length is checked against the payload before anything is allocated; at most
// max_value_bytes are allocated for an LZF string. Redis 7 itself is laxer: it ignores bytes
// after the string and lets a string run into the footer.
std::optional<std::string> DecodeDumpPayload(std::string_view payload, uint64_t max_value_bytes,
                                             std::string* value);

}  // namespace larder::server
