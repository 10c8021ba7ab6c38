// The http section: connection limits, the TLS certificate and key (both or neither; their PEM
// markers checked at load) and the basic-auth users (bcrypt hashes only).
#include <fcntl.h>
#include <sys/stat.h>

#include "collectors/common/file_util.h"
#include "config/loader.h"

namespace iodrift::config::detail {
namespace {

// The contents of the regular file `path` (at most kMaxConfigBytes; a symlink is followed: a
// certificate is often a link into a renewal directory), or a message saying why not ("cannot
// read /x: permission denied"). Never blocks on a FIFO and never reads a device.
tl::expected<std::string, std::string> ReadSmallRegularFile(const std::string& path) {
  const int raw = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (raw < 0) return tl::unexpected("cannot read " + Shown(path) + ": " + LowercaseErrno(errno));
  UniqueFd fd(raw);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return tl::unexpected(Shown(path) + " is not a regular file");
  }
  auto text = ReadAll(fd.get(), kMaxConfigBytes, path);
  if (!text && text.error().code == EFBIG) {
    return tl::unexpected(Shown(path) + " is larger than 1 MiB");
  }
  if (!text)
    return tl::unexpected("cannot read " + Shown(path) + ": " + LowercaseErrno(text.error().code));
  return std::move(*text);
}

}  // namespace

// The http section while it is read: the options, and the TLS entries for the pair check.
struct Loader::HttpSection {
  HttpOptions& out;
  std::optional<Entry> cert;
  std::optional<Entry> key;
};

void Loader::LoadHttp(const Entry& section, HttpOptions& out) {
  if (!ExpectMap(section, "a map (`max_connections: 64`, ...)")) return;
  static constexpr KeyRule<HttpSection> kKeys[] = {
      {"max_connections",
       [](Loader& l, const Entry& e, HttpSection& h) {
         if (auto v = l.ReadCount(e, 1, 10000)) {
           h.out.max_connections = static_cast<std::uint32_t>(*v);
         }
       }},
      {"connection_timeout",
       [](Loader& l, const Entry& e, HttpSection& h) {
         if (auto v = l.ReadDuration(e)) h.out.connection_timeout = *v;
       }},
      {"tls_cert_file",
       [](Loader& l, const Entry& e, HttpSection& h) {
         h.cert = e;
         if (auto v = l.ReadPemFile(e, PemKind::kCertificate)) h.out.tls_cert_file = *v;
       }},
      {"tls_key_file",
       [](Loader& l, const Entry& e, HttpSection& h) {
         h.key = e;
         if (auto v = l.ReadPemFile(e, PemKind::kPrivateKey)) h.out.tls_key_file = *v;
       }},
      {"basic_auth_users",
       [](Loader& l, const Entry& e, HttpSection& h) {
         l.LoadBasicAuthUsers(e, &h.out.basic_auth_users);
       }},
  };
  HttpSection http{out, std::nullopt, std::nullopt};
  ForEachEntry<HttpSection>(section.value, section.path, kKeys, http);
  // Both or neither: a certificate without its key (or the reverse) cannot serve TLS, and
  // silently serving plain HTTP instead would be worse.
  if (http.cert && !http.key) {
    Report(PositionOf(http.cert->key), section.path + ".tls_key_file",
           "missing (tls_cert_file needs tls_key_file, the certificate's private key)");
  } else if (http.key && !http.cert) {
    Report(PositionOf(http.key->key), section.path + ".tls_cert_file",
           "missing (tls_key_file needs tls_cert_file, the certificate)");
  }
}

// An absolute path to a readable regular file holding a PEM certificate or private key. Only
// the PEM markers are checked here; the daemon parses the contents at start.
std::optional<std::string> Loader::ReadPemFile(const Entry& entry, PemKind kind) {
  auto path = ReadAbsolutePath(entry);
  if (!path) return std::nullopt;
  auto text = ReadSmallRegularFile(*path);
  if (!text) {
    ReportValue(entry, text.error());
    return std::nullopt;
  }
  if (kind == PemKind::kCertificate) {
    if (text->find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
      ReportValue(entry, "not a PEM certificate (no `-----BEGIN CERTIFICATE-----` line) in " +
                             Shown(*path));
      return std::nullopt;
    }
  } else {
    const std::size_t begin = text->find("-----BEGIN ");
    const std::size_t end = text->find(" PRIVATE KEY-----", begin == std::string::npos ? 0 : begin);
    if (begin == std::string::npos || end == std::string::npos) {
      ReportValue(entry, "not a PEM private key (no `-----BEGIN ... PRIVATE KEY-----` line) in " +
                             Shown(*path));
      return std::nullopt;
    }
    if (text->find("-----BEGIN ENCRYPTED PRIVATE KEY-----") != std::string::npos ||
        text->find("Proc-Type: 4,ENCRYPTED") != std::string::npos) {
      ReportValue(entry, "the private key in " + Shown(*path) +
                             " is encrypted; iodriftd needs it unencrypted (readable by root "
                             "only)");
      return std::nullopt;
    }
  }
  return path;
}

// `basic_auth_users: {USER: BCRYPT_HASH, ...}`; null or empty = authentication off.
void Loader::LoadBasicAuthUsers(const Entry& section, std::map<std::string, std::string>* out) {
  if (section.value.IsNull()) return;
  if (!section.value.IsMap()) {
    ReportValue(section, "expected a map of user: bcrypt hash, got " + DescribeNode(section.value));
    return;
  }
  std::map<std::string, int, std::less<>> seen;
  for (auto it = section.value.begin(); it != section.value.end(); ++it) {
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    if (!key.IsScalar()) {
      Report(key, section.path, "user names must be plain names, got " + DescribeNode(key));
      continue;
    }
    const std::string user = key.Scalar();
    const std::string path = section.path + "." + user;
    const bool bad_name =
        user.empty() || user.size() > 256 || std::any_of(user.begin(), user.end(), [](char c) {
          return c == ':' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
        });
    if (bad_name) {
      Report(key, section.path,
             "user name " + Shown(user) +
                 " must be 1-256 characters without `:` or control characters");
      continue;
    }
    auto [first, inserted] = seen.emplace(user, PositionOf(key).line);
    if (!inserted) {
      Report(key, path,
             "duplicate user (first defined at line " + std::to_string(first->second) + ")");
      continue;
    }
    const Entry entry{path, user, key, value};
    auto hash = ReadScalar(entry, "a bcrypt hash like $2y$10$...");
    if (!hash) continue;
    // The value is not shown: a plaintext password put here by mistake must not reach logs.
    if (auto problem = CheckBcryptHash(*hash)) {
      ReportValue(entry, *problem);
      continue;
    }
    (*out)[user] = *hash;
  }
}

}  // namespace iodrift::config::detail
