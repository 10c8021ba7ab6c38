#include "collectors/analysis/baseline_store.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <tuple>
#include <utility>

#include <spdlog/spdlog.h>

#include "collectors/analysis/boot_record.h"
#include "collectors/analysis/verdict.h"
#include "collectors/common/file_util.h"
#include "collectors/common/text.h"

namespace iodrift::analysis {

using namespace probes;  // NOLINT: reads what the probes measured
namespace {

constexpr const char* kMagic = "iodrift-baselines";

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

bool HasSuspect(const ProbeResult& r, std::string_view reason) {
  return std::find(r.suspect.begin(), r.suspect.end(), reason) != r.suspect.end();
}

std::string Number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string Opt(const std::optional<double>& v) { return v ? Number(*v) : "-"; }

// The RECORD fields (with a leading space), or nothing when none is known.
std::string RecordFields(const BootRecord& r) {
  if (r.empty()) return "";
  std::string out = " " + PercentEncode(r.worst_verdict);
  for (const auto& at : r.at) out += " " + Opt(at);
  return out + " " + Opt(r.last_ratio) + " " + Opt(r.last_uptime);
}

bool ParseOpt(std::string_view s, std::optional<double>& out) {
  if (s == "-") {
    out.reset();
    return true;
  }
  out = text::ParseDouble(s);
  return out.has_value();
}

constexpr std::size_t kLineFields = 8;
constexpr std::size_t kRecordFields = 7;

// The RECORD fields at f[kLineFields...], if any.
bool ParseRecord(const std::vector<std::string_view>& f, BootRecord& r) {
  r = BootRecord{};
  if (f.size() == kLineFields) return true;
  if (f.size() != kLineFields + kRecordFields) return false;
  std::size_t i = kLineFields;
  if (f[i] != "-") {
    auto cause = ParseCauseName(f[i]);
    if (!cause) return false;
    r.worst_verdict = std::string(CauseName(*cause));
  }
  for (auto& at : r.at) {
    if (!ParseOpt(f[++i], at)) return false;
  }
  return ParseOpt(f[i + 1], r.last_ratio) && ParseOpt(f[i + 2], r.last_uptime);
}

std::string KeyFields(const BaselineKey& k) {
  return PercentEncode(k.name) + " " + std::string(ProbeKindName(k.kind)) + " " +
         PercentEncode(k.target) + " " + std::to_string(k.size) +
         (k.readers != 1 ? "r" + std::to_string(k.readers) : "");
}

std::string Features(const DriftFeatures& f) {
  std::string out;
  for (std::size_t i = 0; i < f.size(); ++i) {
    if (!std::isfinite(f[i])) continue;
    out += " " + std::string(DriftFeatureName(i)) + "=" + Number(f[i]);
  }
  return out;
}

// Parse helpers: each returns false on anything unexpected.
bool ParseKey(const std::vector<std::string_view>& f, std::size_t at, BaselineKey& key) {
  if (f.size() < at + 4) return false;
  auto name = PercentDecode(f[at]);
  auto kind = ParseProbeKind(f[at + 1]);
  auto target = PercentDecode(f[at + 2]);
  std::string_view size_field = f[at + 3];
  std::optional<std::uint64_t> readers = 1;
  if (const auto r = size_field.find('r'); r != std::string_view::npos) {
    readers = text::ParseU64(size_field.substr(r + 1));
    size_field = size_field.substr(0, r);
    if (!readers || *readers < 1 || *readers > kMaxReaders) return false;
  }
  auto size = text::ParseU64(size_field);
  if (!name || name->empty() || !kind || !target || !size) return false;
  key = BaselineKey{*name, *kind, *target, *size, static_cast<std::uint32_t>(*readers)};
  return true;
}

bool ParseFeatures(const std::vector<std::string_view>& f, std::size_t at, DriftFeatures& out) {
  out = UnknownFeatures();
  for (std::size_t i = at; i < f.size(); ++i) {
    const auto eq = f[i].find('=');
    if (eq == std::string_view::npos) return false;
    auto index = ParseDriftFeatureName(f[i].substr(0, eq));
    auto value = text::ParseDouble(f[i].substr(eq + 1));
    // An unknown feature name is a file from another build: refuse rather than guess.
    if (!index || !value) return false;
    out[*index] = *value;
  }
  return true;
}

bool IsPlain(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '~' || c == '/' || c == ':' || c == '@' || c == '+' || c == '-';
}

double WallSecondsNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

BaselineKey KeyOf(const ProbeResult& result) {
  return BaselineKey{result.name, result.kind, result.target, result.spec_size.value_or(0),
                     result.readers.empty() ? 1u : result.readers.front().readers};
}

bool CountsForBaseline(const ProbeResult& result) {
  return DriftFigure(result).has_value() && result.suspect.empty();
}

bool CountsForWorst(const ProbeResult& result) {
  return DriftFigure(result).has_value() && !HasSuspect(result, "cache_not_dropped") &&
         !HasSuspect(result, "io_pressure");
}

BaselineUpdate UpdateBaseline(ProbeBaseline& pb, const ProbeResult& result,
                              std::size_t runs_needed) {
  BaselineUpdate update;
  const BaselineKey key = KeyOf(result);
  if (pb.key.name.empty()) {
    pb.key = key;
  } else if (pb.key.name != key.name || pb.key.kind != key.kind || pb.key.target != key.target ||
             (result.spec_size && pb.key.size != key.size) ||
             ((result.success() || !result.readers.empty()) && pb.key.readers != key.readers) ||
             result.extra.count("target_replaced") != 0) {  // another file at the same path
    pb = ProbeBaseline{};
    pb.key = key;
    update.restarted = true;
    update.changed = true;
  }
  const auto figure = DriftFigure(result);
  if (!figure) return update;
  if (!pb.baseline && CountsForBaseline(result)) {
    pb.samples.push_back(*figure);
    pb.sample_features.push_back(ExtractDriftFeatures(result));
    update.changed = true;
    if (pb.samples.size() >= std::max<std::size_t>(runs_needed, 1)) {
      pb.baseline = Median(pb.samples);
      for (std::size_t f = 0; f < kDriftFeatureCount; ++f) {
        std::vector<double> values;
        for (const auto& features : pb.sample_features) {
          if (std::isfinite(features[f])) values.push_back(features[f]);
        }
        pb.baseline_features[f] = values.empty() ? UnknownFeatures()[f] : Median(values);
      }
      pb.samples.clear();
      pb.sample_features.clear();
      update.ratio = *figure / *pb.baseline;
      if (CountsForWorst(result)) NoteBootRun(pb.record, *update.ratio, result.uptime_seconds);
      return update;  // the run that forms the baseline does not set the worst ratio
    }
  }
  if (pb.baseline && *pb.baseline > 0) {
    update.ratio = *figure / *pb.baseline;
    if (CountsForWorst(result) && (!pb.worst_ratio || *update.ratio < *pb.worst_ratio)) {
      pb.worst_ratio = update.ratio;
      pb.uptime_at_worst = result.uptime_seconds;
      pb.record.worst_verdict.clear();
      update.changed = true;
      update.worst = true;
    }
    if (CountsForWorst(result) && NoteBootRun(pb.record, *update.ratio, result.uptime_seconds)) {
      update.changed = true;
    }
  }
  return update;
}

BaselineState ForBoot(BaselineState loaded, const std::string& boot_id,
                      std::uint64_t boot_time_seconds) {
  if (loaded.boot_id == boot_id) {
    if (loaded.boot_time_seconds == 0) loaded.boot_time_seconds = boot_time_seconds;
    return loaded;
  }
  BaselineState fresh;
  fresh.boot_id = boot_id;
  fresh.boot_time_seconds = boot_time_seconds;
  fresh.history = std::move(loaded.history);
  if (!loaded.boot_id.empty()) {
    PastBoot past;
    past.boot_id = loaded.boot_id;
    past.boot_time_seconds = loaded.boot_time_seconds;
    for (const auto& [name, pb] : loaded.probes) {
      past.probes.push_back(
          PastProbe{pb.key, pb.baseline, pb.worst_ratio, pb.uptime_at_worst, pb.record});
    }
    fresh.history.push_back(std::move(past));
  }
  if (fresh.history.size() > kMaxBootHistory) {
    fresh.history.erase(fresh.history.begin(),
                        fresh.history.end() - static_cast<std::ptrdiff_t>(kMaxBootHistory));
  }
  TrimBootRecords(fresh);
  return fresh;
}

std::string PercentEncode(std::string_view s) {
  if (s.empty()) return "-";
  if (s == "-") return "%2D";
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (IsPlain(c)) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::optional<std::string> PercentDecode(std::string_view s) {
  if (s == "-") return std::string();
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      if (i + 2 >= s.size()) return std::nullopt;
      const int hi = hex(s[i + 1]);
      const int lo = hex(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (IsPlain(static_cast<unsigned char>(s[i]))) {
      out.push_back(s[i]);
    } else {
      return std::nullopt;
    }
  }
  return out;
}

namespace {

void AppendProbeLines(const ProbeBaseline& pb, std::vector<std::string>& lines) {
  lines.push_back("probe " + KeyFields(pb.key) + " " + Opt(pb.baseline) + " " +
                  Opt(pb.worst_ratio) + " " + Opt(pb.uptime_at_worst) + RecordFields(pb.record));
  if (pb.baseline) {
    lines.push_back("bfeat " + PercentEncode(pb.key.name) + Features(pb.baseline_features));
  }
  for (std::size_t i = 0; i < pb.samples.size(); ++i) {
    const DriftFeatures f =
        i < pb.sample_features.size() ? pb.sample_features[i] : UnknownFeatures();
    lines.push_back("sample " + PercentEncode(pb.key.name) + " " + Number(pb.samples[i]) +
                    Features(f));
  }
}

void AppendPastLines(const PastBoot& past, std::vector<std::string>& lines) {
  lines.push_back("past " + PercentEncode(past.boot_id) + " " +
                  std::to_string(past.boot_time_seconds));
  for (const auto& p : past.probes) {
    lines.push_back("pastprobe " + KeyFields(p.key) + " " + Opt(p.baseline) + " " +
                    Opt(p.worst_ratio) + " " + Opt(p.uptime_at_worst) + RecordFields(p.record));
  }
}

// Bytes and lines that `append` adds to the file.
template <class Append>
std::pair<std::size_t, std::size_t> Measure(Append append) {
  std::vector<std::string> lines;
  append(lines);
  std::size_t bytes = 0;
  for (const auto& line : lines) bytes += line.size() + 1;
  return {bytes, lines.size()};
}

}  // namespace

std::string SerializeBaselineState(const BaselineState& state) {
  std::vector<std::string> lines;
  lines.push_back(std::string(kMagic) + " " + std::to_string(kBaselineFileVersion));
  lines.push_back("boot " + PercentEncode(state.boot_id) + " " +
                  std::to_string(state.boot_time_seconds));
  for (const auto& [name, pb] : state.probes) AppendProbeLines(pb, lines);
  for (const auto& past : state.history) AppendPastLines(past, lines);
  std::string out;
  for (const auto& line : lines) out += line + "\n";
  out += "end " + std::to_string(lines.size()) + "\n";
  return out;
}

Compaction FitBaselineState(BaselineState& state, std::size_t max_bytes) {
  Compaction dropped;
  std::size_t bytes = SerializeBaselineState(state).size();
  if (bytes <= max_bytes) return dropped;
  // Every removal below also shortens the end line's count; never counted, so the result errs
  // on the small side.
  // 1. Past boots, oldest first.
  std::size_t keep_from = 0;
  while (bytes > max_bytes && keep_from < state.history.size()) {
    bytes -= Measure([&](auto& l) { AppendPastLines(state.history[keep_from], l); }).first;
    ++keep_from;
  }
  state.history.erase(state.history.begin(),
                      state.history.begin() + static_cast<std::ptrdiff_t>(keep_from));
  dropped.past_boots = keep_from;
  // 2. Runs counted towards baselines still forming (those baselines start over).
  for (auto it = state.probes.begin(); bytes > max_bytes && it != state.probes.end(); ++it) {
    ProbeBaseline& pb = it->second;
    if (pb.samples.empty()) continue;
    const std::size_t before = Measure([&](auto& l) { AppendProbeLines(pb, l); }).first;
    dropped.samples += pb.samples.size();
    pb.samples.clear();
    pb.sample_features.clear();
    bytes -= before - Measure([&](auto& l) { AppendProbeLines(pb, l); }).first;
  }
  // 3. Whole probes, last name first.
  while (bytes > max_bytes && !state.probes.empty()) {
    auto last = std::prev(state.probes.end());
    bytes -= Measure([&](auto& l) { AppendProbeLines(last->second, l); }).first;
    state.probes.erase(last);
    ++dropped.probes;
  }
  return dropped;
}

Expected<BaselineState> ParseBaselineState(std::string_view input) {
  auto bad = [](std::size_t line, const std::string& what) {
    return Fail(EINVAL, "line " + std::to_string(line) + ": " + what);
  };
  const auto lines = text::Lines(input);
  BaselineState state;
  bool have_boot = false;
  bool ended = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::size_t no = i + 1;
    const std::string_view line = lines[i];
    if (ended) {
      if (!line.empty() || i + 1 != lines.size()) return bad(no, "text after the end line");
      continue;
    }
    const auto f = text::Fields(line);
    if (f.empty()) return bad(no, "empty line");
    if (i == 0) {
      if (f.size() != 2 || f[0] != kMagic) return bad(no, "not an iodrift baselines file");
      if (f[1] != std::to_string(kBaselineFileVersion)) {
        return bad(no, "version " + std::string(f[1]) + ", this build reads version " +
                           std::to_string(kBaselineFileVersion));
      }
      continue;
    }
    const std::string_view type = f[0];
    if (type == "end") {
      auto n = f.size() == 2 ? text::ParseU64(f[1]) : std::nullopt;
      if (!n || *n != i) return bad(no, "end line does not match the number of lines");
      ended = true;
      continue;
    }
    if (type == "boot") {
      if (have_boot || f.size() != 3) return bad(no, "bad boot line");
      auto id = PercentDecode(f[1]);
      auto time = text::ParseU64(f[2]);
      if (!id || !time) return bad(no, "bad boot line");
      state.boot_id = *id;
      state.boot_time_seconds = *time;
      have_boot = true;
      continue;
    }
    if (!have_boot) return bad(no, "expected the boot line");
    if (type == "probe") {
      ProbeBaseline pb;
      if (f.size() < kLineFields || !ParseKey(f, 1, pb.key) || !ParseOpt(f[5], pb.baseline) ||
          !ParseOpt(f[6], pb.worst_ratio) || !ParseOpt(f[7], pb.uptime_at_worst) ||
          !ParseRecord(f, pb.record)) {
        return bad(no, "bad probe line");
      }
      if (state.probes.count(pb.key.name)) return bad(no, "probe repeated");
      state.probes[pb.key.name] = std::move(pb);
    } else if (type == "bfeat" || type == "sample") {
      const std::size_t first_feature = type == "bfeat" ? 2 : 3;
      auto name = f.size() >= first_feature ? PercentDecode(f[1]) : std::nullopt;
      auto it = name ? state.probes.find(*name) : state.probes.end();
      if (it == state.probes.end()) return bad(no, "features of an unknown probe");
      DriftFeatures features;
      if (!ParseFeatures(f, first_feature, features)) return bad(no, "bad features");
      if (type == "bfeat") {
        it->second.baseline_features = features;
      } else {
        auto figure = text::ParseDouble(f[2]);
        if (!figure) return bad(no, "bad sample");
        it->second.samples.push_back(*figure);
        it->second.sample_features.push_back(features);
      }
    } else if (type == "past") {
      PastBoot past;
      auto id = f.size() == 3 ? PercentDecode(f[1]) : std::nullopt;
      auto time = f.size() == 3 ? text::ParseU64(f[2]) : std::nullopt;
      if (!id || !time) return bad(no, "bad past line");
      past.boot_id = *id;
      past.boot_time_seconds = *time;
      state.history.push_back(std::move(past));
    } else if (type == "pastprobe") {
      PastProbe p;
      if (state.history.empty()) return bad(no, "pastprobe before any past line");
      if (f.size() < kLineFields || !ParseKey(f, 1, p.key) || !ParseOpt(f[5], p.baseline) ||
          !ParseOpt(f[6], p.worst_ratio) || !ParseOpt(f[7], p.uptime_at_worst) ||
          !ParseRecord(f, p.record)) {
        return bad(no, "bad pastprobe line");
      }
      state.history.back().probes.push_back(std::move(p));
    } else {
      return bad(no, "unknown line type '" + std::string(type) + "'");
    }
  }
  if (!ended || input.back() != '\n') {
    return bad(lines.size(), "no complete end line (the file is truncated)");
  }
  return state;
}

Expected<void> WriteFileAtomically(const std::filesystem::path& dir, const std::string& name,
                                   std::string_view contents) {
  // Never write what LoadBaselines would refuse to read (and then set aside).
  if (contents.size() > kMaxBaselineFileBytes) {
    return Fail(EFBIG, "not writing " + (dir / name).string() + ": " +
                           std::to_string(contents.size()) + " bytes, over the limit of " +
                           std::to_string(kMaxBaselineFileBytes) + " it is read back with");
  }
  auto dfd = OpenDirectory(AT_FDCWD, dir.string(), false);
  if (!dfd) return tl::unexpected(dfd.error());
  // Never replace a file this process could not read: it may hold the only copy of the history.
  const std::string shown = (dir / name).string();
  struct stat st {};
  if (fstatat(dfd->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    auto readable = ReadRegularFile(dfd->get(), name, kMaxBaselineFileBytes, shown);
    if (!readable) {
      return Fail(readable.error().code, "not replacing " + shown + ", which could not be read (" +
                                             readable.error().message +
                                             "); move it away or fix its owner/mode");
    }
  }
  return ::iodrift::WriteFileAtomically(dfd->get(), name, contents, 0644, dir.string());
}

namespace {

// A set-aside copy of dir/name: name.<what>-s<seq>-<epoch> (what: corrupt, unreadable), or one
// named by an older build, name.<what>-<epoch>[.n] (seq 0: older than every numbered copy).
struct SetAsideCopy {
  std::uint64_t seq = 0;           // 1, 2, 3 … in the order the copies were made; 0 for old names
  std::uint64_t epoch = 0, n = 0;  // old names only: their order among themselves
  std::string file;
};

std::optional<SetAsideCopy> ParseSetAsideName(std::string_view rest, std::string file) {
  SetAsideCopy copy;
  copy.file = std::move(file);
  if (!rest.empty() && rest.front() == 's') {
    const auto dash = rest.find('-');
    auto seq = text::ParseU64(rest.substr(1, dash == std::string_view::npos ? dash : dash - 1));
    if (!seq || *seq == 0 || dash == std::string_view::npos ||
        !text::ParseU64(rest.substr(dash + 1))) {
      return std::nullopt;
    }
    copy.seq = *seq;
    return copy;
  }
  std::optional<std::uint64_t> n = 0;
  if (const auto dot = rest.find('.'); dot != std::string_view::npos) {
    n = text::ParseU64(rest.substr(dot + 1));
    rest = rest.substr(0, dot);
  }
  auto epoch = text::ParseU64(rest);
  if (!epoch || !n) return std::nullopt;
  copy.epoch = *epoch;
  copy.n = *n;
  return copy;
}

// The set-aside copies of dir/name, newest first: by sequence number, never by the wall-clock
// time in a name (a clock set back or forward would otherwise prune the newest copy).
std::vector<SetAsideCopy> ListSetAside(const std::filesystem::path& dir, const std::string& name) {
  std::vector<SetAsideCopy> found;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string file = it->path().filename().string();
    for (std::string_view what : {".corrupt-", ".unreadable-"}) {
      const std::string prefix = name + std::string(what);
      if (file.rfind(prefix, 0) != 0) continue;
      if (auto copy = ParseSetAsideName(std::string_view(file).substr(prefix.size()), file)) {
        found.push_back(std::move(*copy));
      }
    }
  }
  std::sort(found.begin(), found.end(), [](const SetAsideCopy& a, const SetAsideCopy& b) {
    return std::tie(a.seq, a.epoch, a.n, a.file) > std::tie(b.seq, b.epoch, b.n, b.file);
  });
  return found;
}

// Renames dir/name to dir/name.<what>-s<seq>-<epoch>, seq above every copy's (never replacing
// a file; the epoch is for people only), then removes the copies beyond the newest
// kMaxSetAsideFiles, never the one just made (unlinkat: a symlink itself, never its target; a
// directory set aside stays). Returns the new path, or an error.
Expected<std::string> SetAside(int dfd, const std::filesystem::path& dir, const std::string& name,
                               const std::string& what) {
  const auto stamp = static_cast<std::uint64_t>(std::max(0.0, WallSecondsNow()));
  const auto before = ListSetAside(dir, name);
  const std::uint64_t first = before.empty() ? 1 : before.front().seq + 1;
  for (std::uint64_t seq = first; seq < first + 1000; ++seq) {
    const std::string aside =
        name + "." + what + "-s" + std::to_string(seq) + "-" + std::to_string(stamp);
    if (renameat2(dfd, name.c_str(), dfd, aside.c_str(), RENAME_NOREPLACE) == 0) {
      fsync(dfd);
      std::size_t kept = 1;  // the copy just made
      for (const auto& copy : ListSetAside(dir, name)) {
        if (copy.file == aside || kept++ < kMaxSetAsideFiles) continue;
        if (unlinkat(dfd, copy.file.c_str(), 0) == 0) {
          spdlog::info("baselines: removed the old set-aside copy {} (keeping the newest {})",
                       (dir / copy.file).string(), kMaxSetAsideFiles);
        }
      }
      return (dir / aside).string();
    }
    if (errno != EEXIST) return Fail(errno, SystemErrorMessage("rename " + name, errno));
  }
  return Fail(EEXIST, "rename " + name + ": 1000 set-aside files already");
}

}  // namespace

bool IsFaultOfTheFile(int code) {
  // Not a regular file (EINVAL), a symlink (ELOOP), over the bound (EFBIG), another owner's or
  // mode (EACCES, EPERM): the file itself is wrong, and stays wrong.
  return code == EINVAL || code == ELOOP || code == EFBIG || code == EACCES || code == EPERM;
}

bool IsTransientError(int code) {
  return code == EMFILE || code == ENFILE || code == EINTR || code == ENOMEM || code == EAGAIN ||
         code == EWOULDBLOCK || code == ENOBUFS;
}

LoadedBaselines LoadBaselines(const std::filesystem::path& dir, const std::string& boot_id,
                              std::uint64_t boot_time_seconds, int attempts) {
  LoadedBaselines out;
  const std::filesystem::path path = dir / kBaselineFileName;
  BaselineState loaded;
  // A transient error (out of fds or memory, interrupted) says nothing about the file: retried
  // with a short back-off, then reported as deferred — never set aside, never replaced.
  auto defer = [&](const Error& error) {
    out.deferred = error;
    out.state = ForBoot(BaselineState{}, boot_id, boot_time_seconds);
    return out;
  };
  Expected<UniqueFd> dfd = tl::unexpected(Error{EAGAIN, "not opened"});
  Expected<std::string> text = tl::unexpected(Error{EAGAIN, "not read"});
  for (int attempt = 1;; ++attempt) {
    dfd = OpenDirectory(AT_FDCWD, dir.string(), false);
    if (dfd) {
      text = ReadRegularFile(dfd->get(), kBaselineFileName, kMaxBaselineFileBytes, path.string());
    }
    const int code = !dfd ? dfd.error().code : !text ? text.error().code : 0;
    if (!IsTransientError(code) || attempt >= attempts) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20 << std::min(attempt, 5)));
  }
  if (!dfd) {
    // ENOENT/ENOTDIR: no state dir (yet); the save that follows says so once.
    if (dfd.error().code == ENOENT || dfd.error().code == ENOTDIR) {
      out.state = ForBoot(std::move(loaded), boot_id, boot_time_seconds);
      return out;
    }
    return defer(dfd.error());
  }
  // A temporary file left by a write that a crash cut short; the real file is intact. unlinkat
  // removes a planted symlink itself, never its target.
  unlinkat(dfd->get(), (std::string(kBaselineFileName) + ".tmp").c_str(), 0);
  std::optional<std::string> problem, kind;
  if (!text) {
    if (text.error().code != ENOENT && !IsFaultOfTheFile(text.error().code)) {
      return defer(text.error());
    }
    if (text.error().code != ENOENT) {
      // A FIFO, device, symlink, directory, a file we may not read or one over the bound: never
      // replaced, never read further. Set aside so the history in it survives.
      problem = text.error().message;
      kind = "unreadable";
    }
  } else if (auto parsed = ParseBaselineState(*text); !parsed) {
    problem = parsed.error().message;
    kind = "corrupt";
  } else {
    loaded = std::move(*parsed);
  }
  if (problem) {
    auto aside = SetAside(dfd->get(), dir, kBaselineFileName, *kind);
    if (!aside) {
      spdlog::warn(
          "baselines: {} is {} ({}) and cannot be set aside: {}; it is kept and baselines are "
          "not saved until it is moved away",
          path.string(), *kind, *problem, aside.error().message);
    } else {
      spdlog::warn("baselines: {} is {} ({}); set aside as {}; starting fresh", path.string(),
                   *kind, *problem, *aside);
      out.set_aside = true;
      out.corrupt_path = *aside;
    }
  }
  out.state = ForBoot(std::move(loaded), boot_id, boot_time_seconds);
  return out;
}

Expected<void> SaveBaselines(const std::filesystem::path& dir, const BaselineState& state) {
  BaselineState fitted = state;
  FitBaselineState(fitted);
  return WriteFileAtomically(dir, kBaselineFileName, SerializeBaselineState(fitted));
}

}  // namespace iodrift::analysis
