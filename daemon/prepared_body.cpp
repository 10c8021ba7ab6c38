#include "daemon/prepared_body.h"

#include <zlib.h>

namespace iodrift::daemon {
namespace {

std::uint32_t Crc(const std::string& text) {
  return static_cast<std::uint32_t>(::crc32(::crc32(0L, Z_NULL, 0),
                                            reinterpret_cast<const Bytef*>(text.data()),
                                            static_cast<uInt>(text.size())));
}

}  // namespace

int InitRawDeflate(z_stream_s& zs, int level) {
  // windowBits -15: raw deflate, 32 KiB window; memLevel 8 is zlib's default.
  return deflateInit2(&zs, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
}

PreparedBody::PreparedBody(std::string text) : text_(std::move(text)), crc_(Crc(text_)) {}

std::shared_ptr<const std::string> PreparedBody::Deflated(int level, bool& ok) const {
  std::lock_guard lock(mu_);
  ok = true;
  if (deflated_ && level_ == level) return deflated_;
  auto out = std::make_shared<std::string>();
  if (!text_.empty()) {
    z_stream zs{};
    if (InitRawDeflate(zs, level) != Z_OK) {
      ok = false;
      return out;
    }
    out->resize(deflateBound(&zs, text_.size()) + 64);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text_.data()));
    zs.avail_in = static_cast<uInt>(text_.size());
    zs.next_out = reinterpret_cast<Bytef*>(out->data());
    zs.avail_out = static_cast<uInt>(out->size());
    const int rc = deflate(&zs, Z_SYNC_FLUSH);
    ok = rc == Z_OK && zs.avail_in == 0 && zs.avail_out > 0;
    out->resize(zs.total_out);
    deflateEnd(&zs);
    if (!ok) return std::make_shared<const std::string>();
  }
  level_ = level;
  deflated_ = std::move(out);
  return deflated_;
}

}  // namespace iodrift::daemon
