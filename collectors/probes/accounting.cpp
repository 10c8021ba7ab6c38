#include "collectors/probes/accounting.h"

#include <fcntl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/taskstats.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <mutex>

#include "collectors/common/text.h"
#include "collectors/probes/target.h"
#include "collectors/proc/pressure.h"
#include "collectors/proc/task_io.h"

namespace iodrift::probes {
namespace {

tl::unexpected<Error> Malformed(const std::string& what) {
  return Fail(EINVAL, "taskstats reply: " + what);
}

// Netlink attributes in [data, data + len): calls f(type, payload) for each; false when one is
// malformed.
template <typename F>
bool ForEachAttr(std::string_view data, F&& f) {
  while (data.size() >= NLA_HDRLEN) {
    nlattr a;
    std::memcpy(&a, data.data(), sizeof a);
    if (a.nla_len < NLA_HDRLEN || a.nla_len > data.size()) return false;
    f(static_cast<std::uint16_t>(a.nla_type & NLA_TYPE_MASK),
      data.substr(NLA_HDRLEN, a.nla_len - NLA_HDRLEN));
    const std::size_t step = NLA_ALIGN(a.nla_len);
    if (step >= data.size()) break;
    data = data.substr(step);
  }
  return true;
}

// The generic netlink payload (attributes) of the first message of `datagram`, or its error.
Expected<std::string_view> GenlPayload(std::string_view datagram) {
  if (datagram.size() < NLMSG_HDRLEN) return Malformed("shorter than a netlink header");
  nlmsghdr h;
  std::memcpy(&h, datagram.data(), sizeof h);
  if (h.nlmsg_len < NLMSG_HDRLEN || h.nlmsg_len > datagram.size())
    return Malformed("netlink length " + std::to_string(h.nlmsg_len) + " of a " +
                     std::to_string(datagram.size()) + "-byte datagram");
  const std::string_view body = datagram.substr(NLMSG_HDRLEN, h.nlmsg_len - NLMSG_HDRLEN);
  if (h.nlmsg_type == NLMSG_ERROR) {
    if (body.size() < sizeof(int)) return Malformed("truncated NLMSG_ERROR");
    int err = 0;
    std::memcpy(&err, body.data(), sizeof err);
    if (err == 0) return Malformed("an acknowledgement, not an answer");
    return Fail(-err, std::string("taskstats: ") + std::strerror(-err) +
                          (err == -EPERM ? " (TASKSTATS_CMD_GET needs CAP_NET_ADMIN)" : ""));
  }
  if (body.size() < GENL_HDRLEN) return Malformed("shorter than a generic netlink header");
  return body.substr(GENL_HDRLEN);
}

std::optional<std::uint64_t> U64At(std::string_view payload, std::size_t offset) {
  if (payload.size() < offset + sizeof(std::uint64_t)) return std::nullopt;
  std::uint64_t v = 0;
  std::memcpy(&v, payload.data() + offset, sizeof v);
  return v;
}

// Reads a small pseudo-file through an open fd from offset 0.
std::optional<std::string> PreadAll(int fd) {
  if (fd < 0) return std::nullopt;
  char buf[1024];
  const ssize_t n = ::pread(fd, buf, sizeof buf, 0);
  if (n <= 0) return std::nullopt;
  return std::string(buf, static_cast<std::size_t>(n));
}

std::optional<std::string> ReadLive(const std::filesystem::path& path) {
  auto text = ReadRegularFile(AT_FDCWD, path.string(), 1 << 20, path.string());
  if (!text) return std::nullopt;
  return std::move(*text);
}

UniqueFd OpenThreadFile(const char* name) {
  return UniqueFd(::open((std::string("/proc/thread-self/") + name).c_str(), O_RDONLY | O_CLOEXEC));
}

pid_t CurrentTid() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

std::optional<double> NsToSeconds(const std::optional<std::uint64_t>& b,
                                  const std::optional<std::uint64_t>& e) {
  if (!b || !e || *e < *b) return std::nullopt;
  return static_cast<double>(*e - *b) / 1e9;
}

template <typename T>
std::optional<double> Delta(const std::optional<T>& b, const std::optional<T>& e) {
  if (!b || !e || *e < *b) return std::nullopt;
  return static_cast<double>(*e - *b);
}

}  // namespace

// --- Parsers ---------------------------------------------------------------------------------

Expected<DelayTotals> ParseTaskstatsReply(std::string_view datagram, pid_t tid) {
  auto payload = GenlPayload(datagram);
  if (!payload) return tl::unexpected(payload.error());
  std::optional<std::string_view> stats;
  std::optional<std::uint32_t> pid;
  bool nested_ok = true;
  const bool ok = ForEachAttr(*payload, [&](std::uint16_t type, std::string_view value) {
    if (type != TASKSTATS_TYPE_AGGR_PID) return;
    nested_ok = ForEachAttr(value, [&](std::uint16_t inner, std::string_view v) {
      if (inner == TASKSTATS_TYPE_PID && v.size() >= sizeof(std::uint32_t)) {
        std::uint32_t p = 0;
        std::memcpy(&p, v.data(), sizeof p);
        pid = p;
      } else if (inner == TASKSTATS_TYPE_STATS) {
        stats = v;
      }
    });
  });
  if (!ok || !nested_ok) return Malformed("bad attribute lengths");
  if (!stats) return Malformed("no TASKSTATS_TYPE_STATS in TASKSTATS_TYPE_AGGR_PID");
  if (!pid || static_cast<pid_t>(*pid) != tid)
    return Malformed("answer for pid " + (pid ? std::to_string(*pid) : std::string("?")) +
                     ", asked " + std::to_string(tid));
  if (stats->size() < sizeof(std::uint16_t)) return Malformed("empty struct taskstats");
  std::uint16_t version = 0;
  std::memcpy(&version, stats->data(), sizeof version);
  DelayTotals d;
  d.blkio_ns = U64At(*stats, offsetof(taskstats, blkio_delay_total));
  d.swapin_ns = U64At(*stats, offsetof(taskstats, swapin_delay_total));
  if (!d.blkio_ns || !d.swapin_ns) return Malformed("struct taskstats too short");
  if (version >= 6) d.reclaim_ns = U64At(*stats, offsetof(taskstats, freepages_delay_total));
  if (version >= 7) d.thrashing_ns = U64At(*stats, offsetof(taskstats, thrashing_delay_total));
  if (version >= 9) d.compaction_ns = U64At(*stats, offsetof(taskstats, compact_delay_total));
  // Version 14 appended irq_count and irq_delay_total after wpcopy_delay_total (version 13).
  if (version >= 14)
    d.irq_ns = U64At(*stats, offsetof(taskstats, wpcopy_delay_total) + 2 * sizeof(std::uint64_t));
  return d;
}

Expected<std::uint16_t> ParseGenlFamilyReply(std::string_view datagram) {
  auto payload = GenlPayload(datagram);
  if (!payload) return tl::unexpected(payload.error());
  std::optional<std::uint16_t> id;
  const bool ok = ForEachAttr(*payload, [&](std::uint16_t type, std::string_view v) {
    if (type == CTRL_ATTR_FAMILY_ID && v.size() >= sizeof(std::uint16_t)) {
      std::uint16_t x = 0;
      std::memcpy(&x, v.data(), sizeof x);
      id = x;
    }
  });
  if (!ok || !id) return Malformed("no CTRL_ATTR_FAMILY_ID in the TASKSTATS family answer");
  return *id;
}

std::optional<std::uint64_t> ParseStatBlkioTicks(std::string_view stat) {
  const auto paren = stat.rfind(')');
  if (paren == std::string_view::npos) return std::nullopt;
  // After ") ": field 3 (state) onwards; field 42 is the 40th of them.
  const auto fields = text::Fields(text::Trim(stat.substr(paren + 1)));
  if (fields.size() < 40) return std::nullopt;
  return text::ParseU64(fields[39]);
}

std::map<std::string, DiskCounters> ParseDiskCounters(std::string_view text) {
  std::map<std::string, DiskCounters> out;
  for (std::string_view line : text::Lines(text)) {
    const auto w = text::Fields(line);
    // major minor name reads merged sectors ms writes merged sectors ms in_flight io_ticks ...
    if (w.size() < 13) continue;
    auto read = text::ParseU64(w[5]);
    auto written = text::ParseU64(w[9]);
    auto ticks = text::ParseU64(w[12]);
    if (!read || !written || !ticks) continue;
    out[std::string(w[2])] = DiskCounters{*ticks, *read + *written};
  }
  return out;
}

std::optional<std::uint64_t> ParseFlatKeyed(std::string_view text, std::string_view key) {
  for (std::string_view line : text::Lines(text)) {
    const auto w = text::Fields(line);
    if (w.size() >= 2 && w[0] == key) return text::ParseU64(w[1]);
  }
  return std::nullopt;
}

std::optional<double> ParseCpuStatThrottled(std::string_view text) {
  if (auto us = ParseFlatKeyed(text, "throttled_usec")) return static_cast<double>(*us) / 1e6;
  if (auto ns = ParseFlatKeyed(text, "throttled_time")) return static_cast<double>(*ns) / 1e9;
  return std::nullopt;
}

CgroupDirs ResolveCgroupDirs(std::string_view proc_cgroup, std::string_view mountinfo) {
  // /proc/self/cgroup: "0::/path" (v2), "4:memory:/path", "1:cpu,cpuacct:/path" (v1).
  std::string v2_path, cpu_path, memory_path;
  for (std::string_view line : text::Lines(proc_cgroup)) {
    const auto c1 = line.find(':');
    const auto c2 = c1 == std::string_view::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) continue;
    const std::string_view controllers = line.substr(c1 + 1, c2 - c1 - 1);
    const std::string path(line.substr(c2 + 1));
    if (line.substr(0, c1) == "0" && controllers.empty()) v2_path = path;
    std::string list(controllers);
    std::replace(list.begin(), list.end(), ',', ' ');
    for (std::string_view c : text::Fields(list)) {
      if (c == "cpu") cpu_path = path;
      if (c == "memory") memory_path = path;
    }
  }
  CgroupDirs dirs;
  for (const MountEntry& m : ParseMountinfo(mountinfo)) {
    auto under = [&](const std::string& path) {
      // The cgroup path is relative to the hierarchy's root; the mount shows `root` of it.
      std::string rel = path;
      if (m.root != "/" && rel.rfind(m.root, 0) == 0) rel = rel.substr(m.root.size());
      const std::filesystem::path below = std::filesystem::path(rel).relative_path();
      const std::filesystem::path mountpoint(m.mount_point);
      return below.empty() ? mountpoint : mountpoint / below;
    };
    if (m.fstype == "cgroup2" && !v2_path.empty() && dirs.v2.empty()) dirs.v2 = under(v2_path);
    if (m.fstype != "cgroup") continue;
    std::string super = m.super_options;
    std::replace(super.begin(), super.end(), ',', ' ');
    for (std::string_view opt : text::Fields(super)) {
      if (opt == "cpu" && !cpu_path.empty() && dirs.v1_cpu.empty()) dirs.v1_cpu = under(cpu_path);
      if (opt == "memory" && !memory_path.empty() && dirs.v1_memory.empty())
        dirs.v1_memory = under(memory_path);
    }
  }
  return dirs;
}

CgroupDirs OwnCgroupDirs() {
  static std::mutex mu;
  static std::string last_cgroup;
  static CgroupDirs last_dirs;
  auto cgroup = ReadLive("/proc/self/cgroup");
  if (!cgroup) return {};
  std::lock_guard lock(mu);
  if (*cgroup == last_cgroup) return last_dirs;
  auto mountinfo = ReadLive("/proc/self/mountinfo");
  if (!mountinfo) return {};
  last_cgroup = *cgroup;
  last_dirs = ResolveCgroupDirs(*cgroup, *mountinfo);
  return last_dirs;
}

// --- Delay accounting source -------------------------------------------------------------------

const char* DelaySourceName(DelaySource source) {
  switch (source) {
    case DelaySource::kOff:
      return "off";
    case DelaySource::kStatBlkio:
      return "stat_blkio";
    case DelaySource::kTaskstats:
      return "taskstats";
  }
  return "off";
}

DelaySource DelaySourceNow() {
  auto on = ReadLive("/proc/sys/kernel/task_delayacct");
  if (!on || text::Trim(*on) != "1") return DelaySource::kOff;
  static std::once_flag once;
  static bool taskstats_works = false;
  std::call_once(once, [] {
    auto client = TaskstatsClient::Open();
    taskstats_works = client && client->Query(CurrentTid()).has_value();
  });
  return taskstats_works ? DelaySource::kTaskstats : DelaySource::kStatBlkio;
}

namespace {

// Appends a netlink attribute to `msg` (kept 4-byte aligned).
void PutAttr(std::string& msg, std::uint16_t type, const void* data, std::size_t len) {
  nlattr a{};
  a.nla_len = static_cast<std::uint16_t>(NLA_HDRLEN + len);
  a.nla_type = type;
  msg.append(reinterpret_cast<const char*>(&a), sizeof a);
  msg.append(static_cast<const char*>(data), len);
  msg.append(NLA_ALIGN(len) - len, '\0');
}

Expected<std::string> Transact(int fd, std::uint16_t type, std::uint8_t cmd, std::uint32_t seq,
                               std::uint16_t attr, const void* data, std::size_t len) {
  std::string msg(NLMSG_HDRLEN + GENL_HDRLEN, '\0');
  PutAttr(msg, attr, data, len);
  nlmsghdr h{};
  h.nlmsg_len = static_cast<std::uint32_t>(msg.size());
  h.nlmsg_type = type;
  h.nlmsg_flags = NLM_F_REQUEST;
  h.nlmsg_seq = seq;
  genlmsghdr g{};
  g.cmd = cmd;
  g.version = 1;
  std::memcpy(msg.data(), &h, sizeof h);
  std::memcpy(msg.data() + NLMSG_HDRLEN, &g, sizeof g);
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  ssize_t sent;
  do {
    sent = ::sendto(fd, msg.data(), msg.size(), 0, reinterpret_cast<sockaddr*>(&kernel),
                    sizeof kernel);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) return Fail(errno, std::string("taskstats send: ") + std::strerror(errno));
  std::string reply(4096, '\0');
  ssize_t got;
  do {
    got = ::recv(fd, reply.data(), reply.size(), 0);
  } while (got < 0 && errno == EINTR);
  if (got < 0) return Fail(errno, std::string("taskstats recv: ") + std::strerror(errno));
  reply.resize(static_cast<std::size_t>(got));
  return reply;
}

}  // namespace

Expected<TaskstatsClient> TaskstatsClient::Open() {
  TaskstatsClient c;
  c.fd_ = UniqueFd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC));
  if (!c.fd_.valid()) return Fail(errno, std::string("netlink socket: ") + std::strerror(errno));
  timeval tv{1, 0};  // the kernel answers at once; never hang a probe on it
  ::setsockopt(c.fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  static const char kName[] = TASKSTATS_GENL_NAME;
  auto reply = Transact(c.fd_.get(), GENL_ID_CTRL, CTRL_CMD_GETFAMILY, ++c.seq_,
                        CTRL_ATTR_FAMILY_NAME, kName, sizeof kName);
  if (!reply) return tl::unexpected(reply.error());
  auto id = ParseGenlFamilyReply(*reply);
  if (!id) return tl::unexpected(id.error());
  c.family_ = *id;
  return c;
}

Expected<std::string> TaskstatsClient::QueryRaw(pid_t tid) {
  const std::uint32_t pid = static_cast<std::uint32_t>(tid);
  return Transact(fd_.get(), family_, TASKSTATS_CMD_GET, ++seq_, TASKSTATS_CMD_ATTR_PID, &pid,
                  sizeof pid);
}

Expected<DelayTotals> TaskstatsClient::Query(pid_t tid) {
  auto reply = QueryRaw(tid);
  if (!reply) return tl::unexpected(reply.error());
  return ParseTaskstatsReply(*reply, tid);
}

// --- Samples -----------------------------------------------------------------------------------

ThreadUsage UsageBetween(const ThreadSample& b, const ThreadSample& e, double timed_seconds) {
  ThreadUsage u;
  u.timed_seconds = timed_seconds;
  u.accounted = true;
  u.accounted_seconds = std::max(0.0, e.mono - b.mono);
  u.user_seconds = std::max(0.0, e.cpu.user_seconds - b.cpu.user_seconds);
  u.system_seconds = std::max(0.0, e.cpu.system_seconds - b.cpu.system_seconds);
  if (b.sched && e.sched && e.sched->on_cpu_ns >= b.sched->on_cpu_ns &&
      e.sched->runqueue_ns >= b.sched->runqueue_ns) {
    u.on_cpu_seconds = static_cast<double>(e.sched->on_cpu_ns - b.sched->on_cpu_ns) / 1e9;
    u.runqueue_seconds = static_cast<double>(e.sched->runqueue_ns - b.sched->runqueue_ns) / 1e9;
  }
  // Each reader samples itself, never inside a wait: the time it waited between its two samples
  // cannot exceed the span between them. A delay total that grew by more is not a measurement
  // (seen on a VM: block I/O wait 80x the run's wall time, run after run) and is unknown.
  const double most = u.accounted_seconds * (1 + kDelaySlackShare) + kDelaySlackSeconds;
  auto delay = [most](const std::optional<std::uint64_t>& from,
                      const std::optional<std::uint64_t>& to) -> std::optional<double> {
    const auto s = NsToSeconds(from, to);
    if (s && *s > most) return std::nullopt;
    return s;
  };
  u.blkio_seconds = delay(b.delays.blkio_ns, e.delays.blkio_ns);
  u.swapin_seconds = delay(b.delays.swapin_ns, e.delays.swapin_ns);
  u.reclaim_seconds = delay(b.delays.reclaim_ns, e.delays.reclaim_ns);
  u.thrashing_seconds = delay(b.delays.thrashing_ns, e.delays.thrashing_ns);
  u.compaction_seconds = delay(b.delays.compaction_ns, e.delays.compaction_ns);
  u.irq_seconds = delay(b.delays.irq_ns, e.delays.irq_ns);
  if (b.read_bytes && e.read_bytes && *e.read_bytes >= *b.read_bytes)
    u.read_bytes = *e.read_bytes - *b.read_bytes;
  return u;
}

TimePartsInput StepInput(const std::vector<ThreadUsage>& readers, const SystemSample& b,
                         const SystemSample& e) {
  TimePartsInput in;
  double accounted = 0;
  bool any = false;
  // Sum of an optional per-thread figure: known only when every accounted reader's is.
  struct OptSum {
    std::optional<double> v = 0.0;
    void Add(const std::optional<double>& x) {
      if (v && x) {
        *v += *x;
      } else {
        v.reset();
      }
    }
  };
  OptSum on_cpu, runqueue, blkio, swapin, reclaim, thrashing, compaction, irq, read_bytes;
  for (const ThreadUsage& u : readers) {
    in.wall_seconds += u.timed_seconds;
    if (!u.accounted) continue;
    any = true;
    accounted += u.accounted_seconds;
    in.rusage_user_seconds += u.user_seconds;
    in.rusage_system_seconds += u.system_seconds;
    on_cpu.Add(u.on_cpu_seconds);
    runqueue.Add(u.runqueue_seconds);
    blkio.Add(u.blkio_seconds);
    swapin.Add(u.swapin_seconds);
    reclaim.Add(u.reclaim_seconds);
    thrashing.Add(u.thrashing_seconds);
    compaction.Add(u.compaction_seconds);
    irq.Add(u.irq_seconds);
    read_bytes.Add(u.read_bytes ? std::optional<double>(static_cast<double>(*u.read_bytes))
                                : std::nullopt);
  }
  in.accounted_seconds = accounted;
  if (any) {
    in.on_cpu_seconds = on_cpu.v;
    in.runqueue_wait_seconds = runqueue.v;
    in.blkio_delay_seconds = blkio.v;
    in.swapin_delay_seconds = swapin.v;
    in.reclaim_delay_seconds = reclaim.v;
    in.thrashing_delay_seconds = thrashing.v;
    in.compaction_delay_seconds = compaction.v;
    in.irq_delay_seconds = irq.v;
    in.own_read_bytes = read_bytes.v;
  }
  if (b.disk && e.disk) {
    if (e.disk->io_ticks_ms >= b.disk->io_ticks_ms)
      in.device_busy_seconds = static_cast<double>(e.disk->io_ticks_ms - b.disk->io_ticks_ms) / 1e3;
    if (e.disk->sectors >= b.disk->sectors)
      in.device_bytes = static_cast<double>(e.disk->sectors - b.disk->sectors) * 512.0;
  }
  auto us = [](const std::optional<double>& v) -> std::optional<double> {
    if (!v) return std::nullopt;
    return *v / 1e6;
  };
  in.psi_io_some_seconds = us(Delta(b.psi_io_some_us, e.psi_io_some_us));
  in.psi_memory_some_seconds = us(Delta(b.psi_memory_some_us, e.psi_memory_some_us));
  in.cpu_throttled_seconds = Delta(b.cpu_throttled_seconds, e.cpu_throttled_seconds);
  in.cgroup_memory_stall_seconds = us(Delta(b.cgroup_memory_some_us, e.cgroup_memory_some_us));
  in.cgroup_io_stall_seconds = us(Delta(b.cgroup_io_some_us, e.cgroup_io_some_us));
  in.memory_high_events = Delta(b.memory_high_events, e.memory_high_events);
  if (auto kib = Delta(b.page_reported_kib, e.page_reported_kib))
    in.page_reported_bytes = *kib * 1024;
  return in;
}

// --- The step ----------------------------------------------------------------------------------

struct StepAccounting::Reader {
  std::optional<TaskstatsClient> taskstats;
  UniqueFd schedstat, io, stat;
  ThreadSample begin;
  pid_t tid = 0;

  ThreadSample Sample(DelaySource source, bool begin_side) {
    ThreadSample s;
    if (begin_side) s.mono = MonotonicSeconds();  // the span encloses every counter read
    if (source == DelaySource::kTaskstats && taskstats) {
      if (auto d = taskstats->Query(tid)) s.delays = *d;
    } else if (source == DelaySource::kStatBlkio) {
      if (auto text = PreadAll(stat.get())) {
        static const long kTicks = ::sysconf(_SC_CLK_TCK);
        if (auto ticks = ParseStatBlkioTicks(*text); ticks && kTicks > 0)
          s.delays.blkio_ns = *ticks * (1000000000ull / static_cast<std::uint64_t>(kTicks));
      }
    }
    if (auto text = PreadAll(schedstat.get())) s.sched = ParseSchedStat(*text);
    s.cpu = CurrentThreadCpu();
    if (auto text = PreadAll(io.get())) {
      if (auto parsed = proc::ParseTaskIo(*text)) s.read_bytes = parsed->read_bytes;
    }
    if (!begin_side) s.mono = MonotonicSeconds();
    return s;
  }
};

struct StepAccounting::SystemFiles {
  UniqueFd diskstats, psi_io, psi_memory, cpu_stat, memory_pressure, io_pressure, memory_events,
      v1_cpu_stat, reported_kib;
};

namespace {

UniqueFd OpenPath(const std::filesystem::path& path) {
  if (path.empty()) return UniqueFd();
  return UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
}

// A pseudo-file through an fd kept open for the step, from offset 0.
std::optional<std::string> PreadFile(const UniqueFd& fd) {
  if (!fd.valid()) return std::nullopt;
  std::string out(4096, '\0');
  std::size_t have = 0;
  for (;;) {
    const ssize_t n =
        ::pread(fd.get(), out.data() + have, out.size() - have, static_cast<off_t>(have));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    have += static_cast<std::size_t>(n);
    if (have == out.size()) {
      if (out.size() >= kMaxProcFileBytes) return std::nullopt;
      out.resize(out.size() * 2);
    }
  }
  out.resize(have);
  return out;
}

}  // namespace

StepAccounting::StepAccounting(ProcRoot root, std::filesystem::path sys_root, std::string device,
                               std::uint32_t readers)
    : root_(std::move(root)),
      sys_root_(std::move(sys_root)),
      device_(std::move(device)),
      source_(DelaySourceNow()),
      usage_(readers),
      files_(std::make_unique<SystemFiles>()) {
  state_.reserve(readers);
  for (std::uint32_t i = 0; i < readers; ++i) {
    auto r = std::make_unique<Reader>();
    if (source_ == DelaySource::kTaskstats) {
      if (auto c = TaskstatsClient::Open()) r->taskstats = std::move(*c);
    }
    state_.push_back(std::move(r));
  }
  SystemFiles& f = *files_;
  if (!device_.empty()) f.diskstats = OpenPath(root_.Path("diskstats"));
  f.psi_io = OpenPath(root_.Path("pressure/io"));
  f.psi_memory = OpenPath(root_.Path("pressure/memory"));
  const CgroupDirs cgroup = OwnCgroupDirs();
  if (!cgroup.v2.empty()) {
    f.cpu_stat = OpenPath(cgroup.v2 / "cpu.stat");
    f.memory_pressure = OpenPath(cgroup.v2 / "memory.pressure");
    f.io_pressure = OpenPath(cgroup.v2 / "io.pressure");
    f.memory_events = OpenPath(cgroup.v2 / "memory.events");
  }
  if (!cgroup.v1_cpu.empty()) f.v1_cpu_stat = OpenPath(cgroup.v1_cpu / "cpu.stat");
  f.reported_kib = OpenPath(sys_root_ / "module/page_reporting/parameters/reported_kib");
}

StepAccounting::~StepAccounting() = default;

SystemSample StepAccounting::SampleSystem() const {
  const SystemFiles& f = *files_;
  SystemSample s;
  if (auto text = PreadFile(f.diskstats)) {
    auto disks = ParseDiskCounters(*text);
    if (auto it = disks.find(device_); it != disks.end()) s.disk = it->second;
  }
  auto some = [](const std::optional<std::string>& text) -> std::optional<std::uint64_t> {
    if (!text) return std::nullopt;
    const proc::Pressure p = proc::ParsePressure(*text);
    if (!p.some) return std::nullopt;
    return p.some->total_us;
  };
  s.psi_io_some_us = some(PreadFile(f.psi_io));
  s.psi_memory_some_us = some(PreadFile(f.psi_memory));
  s.cgroup_memory_some_us = some(PreadFile(f.memory_pressure));
  s.cgroup_io_some_us = some(PreadFile(f.io_pressure));
  if (auto t = PreadFile(f.cpu_stat)) s.cpu_throttled_seconds = ParseCpuStatThrottled(*t);
  if (!s.cpu_throttled_seconds) {
    if (auto t = PreadFile(f.v1_cpu_stat)) s.cpu_throttled_seconds = ParseCpuStatThrottled(*t);
  }
  if (auto t = PreadFile(f.memory_events)) s.memory_high_events = ParseFlatKeyed(*t, "high");
  if (auto t = PreadFile(f.reported_kib)) s.page_reported_kib = text::ParseU64(text::Trim(*t));
  return s;
}

void StepAccounting::BeginStep() { begin_ = SampleSystem(); }

void StepAccounting::BeginReader(std::uint32_t i) {
  if (i >= state_.size()) return;
  Reader& r = *state_[i];
  r.tid = CurrentTid();
  r.schedstat = OpenThreadFile("schedstat");
  r.io = OpenThreadFile("io");
  if (source_ == DelaySource::kStatBlkio) r.stat = OpenThreadFile("stat");
  r.begin = r.Sample(source_, true);
}

void StepAccounting::EndReader(std::uint32_t i, double timed_seconds) {
  if (i >= state_.size()) return;
  Reader& r = *state_[i];
  const ThreadSample end = r.Sample(source_, false);
  usage_[i] = UsageBetween(r.begin, end, timed_seconds);
  r.schedstat = UniqueFd();
  r.io = UniqueFd();
  r.stat = UniqueFd();
}

void StepAccounting::EndStep() { end_ = SampleSystem(); }

ScopedTimedRead::ScopedTimedRead(const ProbeEnv& env, ProbeResult& result)
    : result_(&result), accounting_(env.proc_root, env.sys_root, result.target_info.device, 1) {
  accounting_.BeginStep();
  accounting_.BeginReader(0);
  start_ = MonotonicSeconds();
}

void ScopedTimedRead::Stop() {
  if (stopped_) return;
  stopped_ = true;
  const double end = MonotonicSeconds();
  accounting_.EndReader(0, end - start_);
  accounting_.EndStep();
  result_->time_seconds = accounting_.Parts();
}

TimeParts StepAccounting::Parts() const {
  return ComputeTimeParts(StepInput(usage_, begin_, end_));
}

}  // namespace iodrift::probes
