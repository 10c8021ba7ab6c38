// PreparedBody: a part of an HTTP response body that is made once and sent many times (the probe
// families of /metrics, daemon/probe_metrics.h). Besides its text it keeps the same text as raw
// deflate blocks, made at the first gzip response that needs them and kept: a gzip response
// appends those bytes after compressing the rest of its body (sync-flushed, so the blocks join at
// a byte boundary), and the CRC-32 of the whole is combined from the parts (crc32_combine). The
// bytes a client decompresses are exactly head + text; the compressed bytes differ from
// compressing the whole at once only in where the deflate blocks end.
//
// Thread-safety: immutable text; Deflated() may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

struct z_stream_s;

namespace iodrift::daemon {

// deflateInit2 for a raw deflate stream (RFC 1951; the caller writes the gzip framing) at zlib
// `level`, with zlib's default 32 KiB window and memLevel 8 (268 KB of state per stream; each HTTP
// thread keeps one). An 8 KiB window with memLevel 6 (71 KB) made deflating a /metrics body
// ~1.9x slower: the small window slides its hash tables many times per body (docs/benchmarks.md).
// Returns zlib's code (Z_OK on success).
int InitRawDeflate(z_stream_s& zs, int level);

class PreparedBody {
 public:
  explicit PreparedBody(std::string text);

  const std::string& text() const { return text_; }
  std::uint32_t crc32() const { return crc_; }

  // The text as raw deflate (RFC 1951) blocks at zlib `level`, sync-flushed (byte-aligned, no
  // final block); empty for an empty text or on zlib failure (`ok` false then).
  std::shared_ptr<const std::string> Deflated(int level, bool& ok) const;

 private:
  const std::string text_;
  const std::uint32_t crc_;
  mutable std::mutex mu_;
  mutable int level_ = -1;
  mutable std::shared_ptr<const std::string> deflated_;
};

using PreparedParts = std::vector<std::shared_ptr<const PreparedBody>>;

}  // namespace iodrift::daemon
