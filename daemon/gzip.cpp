#include "daemon/gzip.h"

#include <zlib.h>

#include <cstdint>
#include <string_view>

namespace iodrift::daemon {

namespace {

// One deflate stream per HTTP thread, reset (deflateReset) instead of set up and torn down on
// every response: deflateInit2 allocates and clears 268 KB of window and hash tables
// (InitRawDeflate).
class ThreadDeflater {
 public:
  ThreadDeflater() = default;
  ~ThreadDeflater() {
    if (ready_) deflateEnd(&zs_);
  }
  ThreadDeflater(const ThreadDeflater&) = delete;
  ThreadDeflater& operator=(const ThreadDeflater&) = delete;

  // The stream, ready for a new raw deflate stream at `level` (the caller writes the gzip
  // framing); nullptr on zlib failure.
  z_stream* Get(int level) {
    if (ready_ && level != level_) {
      deflateEnd(&zs_);
      ready_ = false;
    }
    if (!ready_) {
      zs_ = z_stream{};
      if (InitRawDeflate(zs_, level) != Z_OK) {
        return nullptr;
      }
      ready_ = true;
      level_ = level;
    } else if (deflateReset(&zs_) != Z_OK) {
      deflateEnd(&zs_);
      ready_ = false;
      return nullptr;
    }
    return &zs_;
  }

 private:
  z_stream zs_{};
  bool ready_ = false;
  int level_ = 0;
};

void AppendLittleEndian32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

std::string GzipCompress(const std::string& data, int level, const PreparedParts& tail) {
  thread_local ThreadDeflater deflater;
  z_stream* zs = deflater.Get(level);
  if (zs == nullptr) return {};
  // RFC 1952 member header: magic, deflate, no flags, no mtime, no extra flags, OS unix.
  static constexpr char kHeader[] = {'\x1f', '\x8b', 8, 0, 0, 0, 0, 0, 0, 3};
  std::string out(kHeader, sizeof kHeader);
  std::vector<std::shared_ptr<const std::string>> blocks;
  std::size_t tail_bytes = 0;
  for (const auto& part : tail) {
    bool ok = false;
    blocks.push_back(part->Deflated(level, ok));
    if (!ok) return {};
    tail_bytes += blocks.back()->size();
  }
  out.resize(sizeof kHeader + deflateBound(zs, data.size()) + 64 + tail_bytes + 8);
  zs->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs->avail_in = static_cast<uInt>(data.size());
  zs->next_out = reinterpret_cast<Bytef*>(out.data() + sizeof kHeader);
  zs->avail_out = static_cast<uInt>(out.size() - sizeof kHeader - tail_bytes - 8);
  // With a tail the head's blocks end byte-aligned and not final (sync flush); the tail's
  // blocks follow, then an empty final block (fixed Huffman: 03 00).
  const int rc = deflate(zs, tail.empty() ? Z_FINISH : Z_SYNC_FLUSH);
  const bool ok =
      tail.empty() ? rc == Z_STREAM_END : rc == Z_OK && zs->avail_in == 0 && zs->avail_out > 0;
  out.resize(sizeof kHeader + zs->total_out);
  zs->next_in = nullptr;  // no pointer into `data` stays behind
  zs->next_out = nullptr;
  if (!ok) return {};
  uLong crc = ::crc32(::crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(data.data()),
                      static_cast<uInt>(data.size()));
  std::uint64_t length = data.size();
  for (std::size_t i = 0; i < tail.size(); ++i) {
    out += *blocks[i];
    crc = crc32_combine(crc, tail[i]->crc32(), static_cast<z_off_t>(tail[i]->text().size()));
    length += tail[i]->text().size();
  }
  if (!tail.empty()) out += std::string_view("\x03\x00", 2);
  AppendLittleEndian32(out, static_cast<std::uint32_t>(crc));
  AppendLittleEndian32(out, static_cast<std::uint32_t>(length));  // ISIZE: length mod 2^32
  return out;
}

}  // namespace iodrift::daemon
