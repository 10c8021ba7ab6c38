#include "daemon/http_server.h"

#include <zlib.h>

#include <gtest/gtest.h>

namespace iodrift::daemon {
namespace {

TEST(SplitHostPort, AcceptsV4V6AndEmptyHost) {
  EXPECT_EQ(*SplitHostPort("127.0.0.1:9723"), std::make_pair(std::string("127.0.0.1"), uint16_t{9723}));
  EXPECT_EQ(*SplitHostPort("[::1]:0"), std::make_pair(std::string("::1"), uint16_t{0}));
  EXPECT_EQ(SplitHostPort(":80")->first, "0.0.0.0");
}

TEST(SplitHostPort, RejectsMissingOrBadPorts) {
  EXPECT_FALSE(SplitHostPort("localhost"));
  EXPECT_FALSE(SplitHostPort("localhost:http"));
  EXPECT_FALSE(SplitHostPort("127.0.0.1:65536"));
  EXPECT_FALSE(SplitHostPort("[::1]9723"));
}

TEST(GzipCompress, RoundTripsThroughZlib) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "iodrift_meminfo_MemFree_bytes 12345\n";
  std::string gz = GzipCompress(text, 1);
  ASSERT_FALSE(gz.empty());
  EXPECT_LT(gz.size(), text.size() / 10);
  EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>(gz[1]), 0x8b);
  z_stream zs{};
  ASSERT_EQ(inflateInit2(&zs, 15 + 16), Z_OK);
  std::string out(text.size() + 16, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(gz.data());
  zs.avail_in = static_cast<uInt>(gz.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(inflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  inflateEnd(&zs);
  EXPECT_EQ(out, text);
}

TEST(HttpServer, ServesRoutesOnAFreePortAndNamesTheAddressOnBindFailure) {
  HttpServer server;
  server.Route("/x", [] { return HttpResponse{200, "text/plain", "hello"}; });
  ASSERT_TRUE(server.Start({.listen = "127.0.0.1:0"}));
  EXPECT_NE(server.port(), 0);
  HttpServer second;
  auto busy = second.Start({.listen = "127.0.0.1:" + std::to_string(server.port())});
  ASSERT_FALSE(busy);
  EXPECT_EQ(busy.error().message,
            "listen 127.0.0.1:" + std::to_string(server.port()) + ": address already in use");
  server.Stop();
}

}  // namespace
}  // namespace iodrift::daemon
