// gzip responses of the HTTP server (http_server.h): one deflate stream per HTTP thread, reset
// for each response, and probe text whose deflate blocks were made once (prepared_body.h)
// appended with its CRC-32 combined.
//
// Thread-safety: GzipCompress may be called from any thread (its stream is the thread's own).
#pragma once

#include <string>

#include "daemon/prepared_body.h"

namespace iodrift::daemon {

// gzip-compresses `data` followed by the texts of `tail` (RFC 1952 framing) at `level`; the
// tail's deflate blocks are the parts' own (PreparedBody::Deflated). Empty on zlib failure.
std::string GzipCompress(const std::string& data, int level, const PreparedParts& tail = {});

}  // namespace iodrift::daemon
