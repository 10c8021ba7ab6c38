// Per-boot probe baselines that survive daemon restarts: the pure rules (what counts, when a
// baseline forms, what a new boot does), the state file's text format, and the crash-safe file
// I/O — in that order, so the first two are tested on values and strings alone.
//
// Baseline. Per probe, the median of the DriftFigure (drift.h: bytes/s for throughput kinds,
// ops/s for random and metadata) of its first `runs_needed` (default kDefaultBaselineRuns)
// successful runs after boot that carry no suspect reason. The baseline belongs to a key
// (probe name, kind, target, configured size): a result with another key restarts it, so a
// baseline never compares two different measurements. Once the baseline exists, every successful
// run whose figure is valid (suspect reasons cache_not_dropped and io_pressure make it invalid;
// the memory ones are the drift being measured and count) updates the worst ratio of the boot.
//
// State file `<state_dir>/baselines`, version 1, one record per line, fields separated by one
// space, strings percent-encoded (every byte outside [A-Za-z0-9._~/:@+-] as %XX), numbers in
// "%.17g", "-" for none:
//   iodrift-baselines 1
//   boot BOOT_ID BOOT_TIME
//   probe NAME KIND TARGET SIZE BASELINE WORST_RATIO UPTIME_AT_WORST [RECORD]
//   bfeat NAME FEATURE=VALUE...              (features at baseline time; after its probe line)
//   sample NAME FIGURE FEATURE=VALUE...      (runs counted so far while the baseline forms)
//   past BOOT_ID BOOT_TIME                   (one previous boot, oldest first, at most 50)
//   pastprobe NAME KIND TARGET SIZE BASELINE WORST_RATIO UPTIME_AT_WORST [RECORD]
//                                            (after its past line)
//   end N                                    (N = number of lines before this one)
// RECORD (boot_record.h; written when any of it is known, absent in files of older builds,
// which load as records with nothing known): seven fields
//   WORST_VERDICT RATIO_1H RATIO_1D RATIO_7D RATIO_30D LAST_RATIO LAST_UPTIME
// WORST_VERDICT a cause name (verdict.h) or "-". Only the newest kMaxBootRecords - 1 past
// boots of a probe carry it; a RECORD field that does not parse (an unknown cause, a bad
// number, a line of another length) makes the file corrupt like any other.
// A file that does not parse exactly (unknown line, wrong version, missing `end`, count
// mismatch) is corrupt: it is logged, renamed to `baselines.corrupt-s<seq>-<epoch>` and replaced
// (seq one above every set-aside copy's: copies are ordered by it, never by the wall-clock epoch
// in a name, which is for people only). A file
// that cannot be read (not a regular file, a symlink, another owner's, over kMaxBaselineFileBytes)
// is renamed to `baselines.unreadable-s<seq>-<epoch>`; one that cannot be renamed either is never
// replaced (WriteFileAtomically refuses). An error that says nothing about the file (out of fds
// or memory, EINTR, EAGAIN, EIO) is retried and then reported, never taken for corruption: the
// file stays where it is and is not saved over until it loads (ProbeStates retries). Of the
// set-aside copies the newest kMaxSetAsideFiles are kept, older ones removed. The daemon never
// writes a file over kMaxBaselineFileBytes (FitBaselineState before each save; WriteFileAtomically
// refuses larger contents).
//
// Thread-safety: plain values and free functions; the file functions must not run concurrently
// on the same state dir (ProbeStates, probe_states.h, serialises them).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/analysis/drift.h"
#include "collectors/common/error.h"
#include "collectors/probes/probe.h"

namespace iodrift::analysis {

// Runs that form a baseline. 5 keeps one slow outlier (and even two) out of the median; with
// the default intervals (5–10 min) a baseline exists within the first hour after boot.
inline constexpr std::size_t kDefaultBaselineRuns = 5;
inline constexpr std::size_t kMaxBootHistory = 50;
inline constexpr int kBaselineFileVersion = 1;
inline constexpr const char* kBaselineFileName = "baselines";
inline constexpr std::size_t kMaxBaselineFileBytes = 16u << 20;
// Set-aside copies (baselines.corrupt-*, baselines.unreadable-*) kept; older ones are removed.
inline constexpr std::size_t kMaxSetAsideFiles = 3;

struct BaselineKey {
  std::string name;
  ProbeKind kind = ProbeKind::kCached;
  std::string target;
  std::uint64_t size = 0;  // ProbeResult::spec_size
  // Reader count of the figure (the first step of a `readers:` run, else 1): a baseline never
  // mixes reader counts. Written as "<size>r<readers>" in the file when not 1.
  std::uint32_t readers = 1;

  bool operator==(const BaselineKey&) const = default;
};

// The boot record's fields of one probe in one boot (the rules: boot_record.h).
struct BootRecord {
  std::array<std::optional<double>, 4> at;  // ratio at kBootMarks (1 h, 1 d, 7 d, 30 d)
  std::optional<double> last_ratio;         // the latest counted ratio of the boot
  std::optional<double> last_uptime;        // uptime (s) at the start of that run
  std::string worst_verdict;                // cause name at the worst run; "" when unknown
  bool empty() const;
  bool operator==(const BootRecord&) const = default;
};

// The key of `result` (spec_size nullopt reads as 0).
BaselineKey KeyOf(const ProbeResult& result);

// One probe in the current boot.
struct ProbeBaseline {
  BaselineKey key;
  std::vector<double> samples;                 // figures counted so far, until the baseline forms
  std::vector<DriftFeatures> sample_features;  // parallel to samples
  std::optional<double> baseline;
  DriftFeatures baseline_features = UnknownFeatures();  // per feature median over those runs
  std::optional<double> worst_ratio;
  std::optional<double> uptime_at_worst;  // uptime (s) at the start of the worst run
  BootRecord record;
};

struct PastProbe {
  BaselineKey key;
  std::optional<double> baseline;
  std::optional<double> worst_ratio;
  std::optional<double> uptime_at_worst;
  BootRecord record;
};

struct PastBoot {
  std::string boot_id;
  std::uint64_t boot_time_seconds = 0;
  std::vector<PastProbe> probes;
};

struct BaselineState {
  std::string boot_id;
  std::uint64_t boot_time_seconds = 0;
  std::map<std::string, ProbeBaseline> probes;  // by probe name
  std::vector<PastBoot> history;                // oldest first, at most kMaxBootHistory
};

// --- Pure rules -----------------------------------------------------------------------------

// Whether a successful result may form a baseline: a DriftFigure and no suspect reason.
bool CountsForBaseline(const ProbeResult& result);
// Whether it may set the worst ratio: a DriftFigure and neither cache_not_dropped nor
// io_pressure.
bool CountsForWorst(const ProbeResult& result);

// What UpdateBaseline changed.
struct BaselineUpdate {
  bool changed = false;         // anything persisted changed (a sample, the baseline, the worst)
  bool restarted = false;       // the key differed: the previous baseline was dropped
  bool worst = false;           // this run set the worst ratio (its verdict is due)
  std::optional<double> ratio;  // figure / baseline of this result, when both exist
};

// Applies one result to `pb` (a default ProbeBaseline for a probe never seen), its boot record
// included (NoteBootRun: every run with a ratio that CountsForWorst, the one that forms the
// baseline too; a new worst clears the record's worst_verdict for the caller to set). A different
// key restarts `pb` first — unless result.spec_size is nullopt and only the size would differ, or
// the run failed without a readers step and only the reader count would differ.
BaselineUpdate UpdateBaseline(ProbeBaseline& pb, const ProbeResult& result,
                              std::size_t runs_needed = kDefaultBaselineRuns);

// The state for boot `boot_id`: `loaded` unchanged when it belongs to that boot; otherwise the
// loaded boot's summary (with its boot records) appended to its history (trimmed to
// kMaxBootHistory, boot records to kMaxBootRecords per probe: TrimBootRecords; a loaded state
// with an empty boot id adds nothing) and no probes.
BaselineState ForBoot(BaselineState loaded, const std::string& boot_id,
                      std::uint64_t boot_time_seconds);

// --- The text format --------------------------------------------------------------------------

std::string PercentEncode(std::string_view s);
std::optional<std::string> PercentDecode(std::string_view s);

std::string SerializeBaselineState(const BaselineState& state);

// What FitBaselineState removed.
struct Compaction {
  std::size_t past_boots = 0;  // oldest past boots
  std::size_t samples = 0;     // runs of baselines still forming (those start over)
  std::size_t probes = 0;      // whole probes (only when the two above were not enough)
  bool any() const { return past_boots + samples + probes > 0; }
};
// Shrinks `state` until SerializeBaselineState(state) is at most `max_bytes`: the oldest past
// boots first, then the samples of baselines still forming, then whole probes (last name first).
// A state that fits is left alone. The file is never written larger than LoadBaselines reads.
Compaction FitBaselineState(BaselineState& state, std::size_t max_bytes = kMaxBaselineFileBytes);
// Fails with EINVAL and "line N: what" on anything but an exact version-1 file.
Expected<BaselineState> ParseBaselineState(std::string_view text);

// --- Files ------------------------------------------------------------------------------------

// Writes `contents` to dir/name crash-safely through a directory fd (file_util.h
// WriteFileAtomically: dir/name.tmp created O_EXCL|O_NOFOLLOW 0644, write, fsync, renameat over
// dir/name, fsync dir). Refuses (the file untouched) when `contents` is over
// kMaxBaselineFileBytes or dir/name exists but is not a regular file of at most
// kMaxBaselineFileBytes this process can read. On failure the old file is intact
// and the temporary file removed when possible. Blocks for the fsyncs.
Expected<void> WriteFileAtomically(const std::filesystem::path& dir, const std::string& name,
                                   std::string_view contents);

struct LoadedBaselines {
  BaselineState state;     // ForBoot() already applied
  bool set_aside = false;  // a corrupt file was renamed to corrupt_path
  std::string corrupt_path;
  // The state dir or file could not be opened or read for a reason that says nothing about the
  // file (IsFaultOfTheFile false: out of fds, memory, an I/O error): it is left in place, not
  // loaded, and must not be saved over until a later load succeeds. `state` is fresh.
  std::optional<Error> deferred;
};

// Open/read errors that describe the file itself (not a regular file, a symlink, over the
// bound, another owner's or mode): such a file is set aside. Any other error defers the load.
bool IsFaultOfTheFile(int code);
// EMFILE, ENFILE, EINTR, ENOMEM, EAGAIN, ENOBUFS: retried before a load is deferred.
bool IsTransientError(int code);

// Reads dir/baselines for boot `boot_id` (O_NOFOLLOW|O_NONBLOCK, regular files only: never
// blocks on a FIFO). A missing file gives a fresh state; a corrupt one is logged (warn), renamed
// to baselines.corrupt-s<seq>-<epoch>, an unreadable one (IsFaultOfTheFile) to
// baselines.unreadable-s<seq>-<epoch> (of these set-aside copies only the newest
// kMaxSetAsideFiles by seq are kept, always the one just made) and gives a fresh state;
// a leftover baselines.tmp (a write cut short by a crash) is removed. A transient error
// (IsTransientError) is tried `attempts` times in all (20, 40, 80 … ms apart); one that persists,
// and any other error, gives `deferred`: nothing set aside, nothing removed. Never fails.
LoadedBaselines LoadBaselines(const std::filesystem::path& dir, const std::string& boot_id,
                              std::uint64_t boot_time_seconds, int attempts = 5);

// FitBaselineState (on a copy) + SerializeBaselineState + WriteFileAtomically to dir/baselines.
Expected<void> SaveBaselines(const std::filesystem::path& dir, const BaselineState& state);

}  // namespace iodrift::analysis
