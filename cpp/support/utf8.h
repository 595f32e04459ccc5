// UTF-8 helpers for a byte-level engine.
//
// Grammars speak in Unicode code points ([a-zа-я]), the Earley parser speaks in bytes. A code-point
// range is turned into a small set of byte-range sequences (each sequence = one byte range per
// position), so that a character class becomes a tiny byte automaton. The split follows the usual
// construction: cut the range where the encoded length changes, then where the continuation bytes
// stop covering their full 0x80..0xBF span, recursively.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace xg {

constexpr uint32_t kMaxCodepoint = 0x10FFFF;

// A set of code points as sorted, disjoint [lo, hi] ranges (the alphabet of the automata library).
using CodepointRanges = std::vector<std::pair<uint32_t, uint32_t>>;

// Appends the UTF-8 encoding of cp (which must be a valid scalar value) to out.
void AppendUtf8(uint32_t cp, std::string* out);

// Decodes one code point from s[*pos...]; advances *pos. Returns false on invalid UTF-8
// (overlong, surrogate, truncated, > U+10FFFF), leaving *pos unchanged.
bool DecodeUtf8(const std::string& s, size_t* pos, uint32_t* cp);

struct ByteRange {
  uint8_t lo, hi;
};
using Utf8Sequence = std::vector<ByteRange>;

// Byte-range sequences whose union is exactly the UTF-8 encodings of code points in [lo, hi],
// surrogates (D800-DFFF) excluded.
std::vector<Utf8Sequence> Utf8Sequences(uint32_t lo, uint32_t hi);

// Merges overlapping/adjacent [lo, hi] code-point ranges; optionally complements over
// [0, kMaxCodepoint]. Surrogates are dropped either way (they have no UTF-8 encoding).
CodepointRanges NormalizeRanges(CodepointRanges r, bool negate);
// Whether the class (complemented when `negate`) holds no character, i.e.
// NormalizeRanges(r, negate).empty(), without building the normalised ranges in the common cases: a
// class with a range outside the surrogates, or a complement that leaves out kMaxCodepoint.
bool CharClassIsEmpty(const CodepointRanges& r, bool negate);

// Printable escape of a byte string for error messages and the printer ("a\n\x80").
std::string EscapeBytes(const std::string& s, char quote = '"');

}  // namespace xg
