// libFuzzer target for the YAML config loader (config/config.h): any bytes must load or produce
// problems without a crash, hang or sanitizer report, and the result must keep the header's
// promises: at most 100 problems plus one summary line, each with a message; a loaded config has
// unique probe names and absolute paths, and loading its own text twice gives the same result.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const iodrift::config::LoadResult result = iodrift::config::LoadFromString(text, "fuzz.yaml");
  if (!result) {
    if (result.error().empty() || result.error().size() > 101) std::abort();
    for (const iodrift::config::Problem& problem : result.error()) {
      if (problem.message.empty() || problem.file != "fuzz.yaml") std::abort();
      if (problem.line < 0 || problem.column < 0) std::abort();
      (void)problem.ToString();
    }
    return 0;
  }
  const iodrift::config::Config& config = *result;
  std::set<std::string> names;
  for (const iodrift::probes::ProbeSpec& probe : config.probes) {
    if (probe.name.empty() || !names.insert(probe.name).second) std::abort();
    if (!probe.target.empty() && probe.target.front() != '/') std::abort();
    if (probe.timeout <= probe.time_budget) std::abort();
  }
  if (!config.state_dir.empty() && config.state_dir.front() != '/') std::abort();
  if (config.http.max_connections < 1 || config.http.max_connections > 10000) std::abort();
  if (config.http.tls_cert_file.empty() != config.http.tls_key_file.empty()) std::abort();
  for (const auto& [user, hash] : config.http.basic_auth_users) {
    if (user.empty() || user.find(':') != std::string::npos) std::abort();
    if (iodrift::config::CheckBcryptHash(hash)) std::abort();
  }
  // Deterministic: the same text loads to the same config.
  const iodrift::config::LoadResult again = iodrift::config::LoadFromString(text, "fuzz.yaml");
  if (!again || !(*again == config)) std::abort();
  return 0;
}
