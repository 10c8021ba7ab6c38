// A data target changing under a run (target.h CheckDataOnDisk, CheckTargetUnchanged): every
// kind that reads a file fails with a reason when the file shrinks mid-run, never reports a
// clean figure of reads past the end; a file grown, replaced or rewritten during the run is
// caught afterwards; data not yet written back is refused as transient, not as sparse.
//
// The mid-run shrink is deterministic: a fanotify FAN_ACCESS_PERM mark on the file holds the
// probe's Nth read() until the file has been truncated (root only; skipped otherwise).
#include <fcntl.h>
#include <poll.h>
#include <sys/fanotify.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include <gtest/gtest.h>

#include "collectors/probes/runner.h"
#include "collectors/probes/target.h"
#include "tests/lib/ci_guarantee.h"
#include "tests/probes/probe_test_util.h"

namespace iodrift::probes {
namespace {

using testing::TempDir;

// Truncates `path` to `to_bytes` while the `nth` read() of it waits for permission, then lets
// every read through. Destruction ends the watch.
class ShrinkOnNthRead {
 public:
  ShrinkOnNthRead(const std::string& path, int nth, off_t to_bytes) : path_(path) {
    fan_ = fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC, O_RDONLY | O_LARGEFILE);
    if (fan_ < 0) {
      why_ = std::string("fanotify_init: ") + std::strerror(errno);
      return;
    }
    if (fanotify_mark(fan_, FAN_MARK_ADD, FAN_ACCESS_PERM, AT_FDCWD, path.c_str()) != 0) {
      why_ = std::string("fanotify_mark FAN_ACCESS_PERM: ") + std::strerror(errno);
      return;
    }
    thread_ = std::thread([this, nth, to_bytes] { Serve(nth, to_bytes); });
  }
  ~ShrinkOnNthRead() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (fan_ >= 0) close(fan_);
  }
  const std::string& why_not() const { return why_; }
  bool shrunk() const { return shrunk_; }

 private:
  void Serve(int nth, off_t to_bytes) {
    int seen = 0;
    while (!stop_) {
      pollfd p{fan_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      alignas(fanotify_event_metadata) char buf[4096];
      const ssize_t n = read(fan_, buf, sizeof buf);
      if (n <= 0) continue;
      auto* ev = reinterpret_cast<fanotify_event_metadata*>(buf);
      for (ssize_t len = n; FAN_EVENT_OK(ev, len); ev = FAN_EVENT_NEXT(ev, len)) {
        if ((ev->mask & FAN_ACCESS_PERM) && ++seen == nth) {
          shrunk_ = truncate(path_.c_str(), to_bytes) == 0;
        }
        if (ev->mask & FAN_ACCESS_PERM) {
          fanotify_response response{ev->fd, FAN_ALLOW};
          (void)!write(fan_, &response, sizeof response);
        }
        if (ev->fd >= 0) close(ev->fd);
      }
    }
  }

  std::string path_;
  int fan_ = -1;
  std::string why_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> shrunk_{false};
  std::thread thread_;
};

TEST(TargetChange, EveryKindThatReadsAFileFailsWhenItShrinksMidRun) {
  if (geteuid() != 0) IODRIFT_SKIP_GUARANTEED("fanotify permission events need root");
  for (ProbeKind kind :
       {ProbeKind::kRandom, ProbeKind::kBuffered, ProbeKind::kDirect, ProbeKind::kCached}) {
    for (bool readers : {false, true}) {
      if (kind == ProbeKind::kCached && readers) continue;  // no readers curve
      SCOPED_TRACE(std::string(ProbeKindName(kind)) + (readers ? " readers [1, 2]" : ""));
      TempDir dir;
      const std::string file = (dir.path() / "f").string();
      ASSERT_TRUE(testing::WriteRandomFile(file, 16 << 20));
      auto spec = testing::MakeSpec("shrinks", kind, file);
      spec.requests = 200;
      if (readers) spec.readers = {1, 2};
      // The 2nd read: the run is under way (the random kind's warm-up read is done).
      ShrinkOnNthRead shrink(file, 2, 8192);
      if (!shrink.why_not().empty()) GTEST_SKIP() << shrink.why_not();
      const ProbeResult r = RunProbe(spec, testing::MakeEnv(dir.path()));
      ASSERT_TRUE(shrink.shrunk()) << "the run never made a 2nd read";
      EXPECT_EQ(r.outcome, Outcome::kError) << "a clean figure of a file that shrank mid-run";
      EXPECT_NE(r.error.find("shrank during the run"), std::string::npos) << r.error;
    }
  }
}

TEST(TargetChange, AGrownReplacedOrRewrittenFileIsCaughtAfterTheRun) {
  TempDir dir;
  const std::string file = (dir.path() / "f").string();
  ASSERT_TRUE(testing::WriteRandomFile(file, 1 << 20));
  RunControl control;
  auto prepare = [&] { return PrepareDataTarget(file, 1 << 20, control); };
  {  // unchanged: nothing to say
    auto dt = prepare();
    ASSERT_TRUE(dt) << dt.error().message;
    auto fd = OpenDataTarget(*dt);
    ASSERT_TRUE(fd);
    ProbeResult r;
    EXPECT_TRUE(CheckTargetUnchanged(*dt, fd->get(), r));
    EXPECT_TRUE(r.suspect.empty());
  }
  {  // grown
    auto dt = prepare();
    auto fd = OpenDataTarget(*dt);
    ASSERT_TRUE(dt && fd);
    ASSERT_EQ(truncate(file.c_str(), 2 << 20), 0);
    ProbeResult r;
    EXPECT_FALSE(CheckTargetUnchanged(*dt, fd->get(), r));
    EXPECT_EQ(r.outcome, Outcome::kError);
    EXPECT_NE(r.error.find("it grew from 1048576 to 2097152 bytes"), std::string::npos) << r.error;
    ASSERT_TRUE(testing::WriteRandomFile(file, 1 << 20));
  }
  {  // replaced by a rename over it
    auto dt = prepare();
    ASSERT_TRUE(dt) << dt.error().message;
    auto fd = OpenDataTarget(*dt);
    ASSERT_TRUE(fd);
    const std::string other = (dir.path() / "g").string();
    ASSERT_TRUE(testing::WriteRandomFile(other, 1 << 20));
    ASSERT_EQ(rename(other.c_str(), file.c_str()), 0);
    ProbeResult r;
    EXPECT_FALSE(CheckTargetUnchanged(*dt, fd->get(), r));
    EXPECT_NE(r.error.find("now names another file (replaced)"), std::string::npos) << r.error;
  }
  {  // rewritten in place, same size: a suspect, the run stands
    auto dt = prepare();
    ASSERT_TRUE(dt) << dt.error().message;
    auto fd = OpenDataTarget(*dt);
    ASSERT_TRUE(fd);
    const int w = open(file.c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(w, 0);
    ASSERT_EQ(pwrite(w, "x", 1, 4096), 1);
    struct timespec later[2] = {{0, UTIME_OMIT}, {time(nullptr) + 10, 0}};
    ASSERT_EQ(futimens(w, later), 0);  // the mtime moves even on a coarse clock
    close(w);
    ProbeResult r;
    EXPECT_TRUE(CheckTargetUnchanged(*dt, fd->get(), r));
    EXPECT_EQ(r.suspect, std::vector<std::string>{"target_modified"});
  }
}

TEST(TargetChange, DataNotYetWrittenBackIsRefusedAsTransientNotAsSparse) {
  TempDir dir;
  const std::string file = (dir.path() / "fresh").string();
  {  // written, never synced: dirty pages (ext4 delalloc, or unwritten extents mid-writeback)
    const int w = open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ASSERT_GE(w, 0);
    std::string buf(1 << 20, '\0');
    for (int i = 0; i < 8; ++i) {
      FillPseudoRandom(buf.data(), buf.size(), static_cast<std::uint64_t>(i) + 1);
      ASSERT_EQ(write(w, buf.data(), buf.size()), static_cast<ssize_t>(buf.size()));
    }
    // Start writeback of half of it: some pages under writeback, the rest still dirty.
    sync_file_range(w, 0, 4 << 20, SYNC_FILE_RANGE_WRITE);
    close(w);
  }
  const int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const std::optional<std::uint64_t> pending = PendingWritebackBytes(fd, 0, 8 << 20);
  if (!pending) GTEST_SKIP() << "cachestat(2) unavailable: the kernel does not say what is dirty";
  if (*pending == 0) {
    close(fd);
    GTEST_SKIP() << "written back before it could be checked (nothing dirty left)";
  }
  close(fd);
  RunControl control;
  // Dirty data whose blocks are reserved reads like any other and is accepted; an extent still
  // unwritten while writeback runs (ext4 converts it at I/O completion) is refused, but as
  // transient, never with the sparse file's advice.
  auto now = PrepareDataTarget(file, 8 << 20, control);
  if (!now) {
    const std::string& why = now.error().message;
    EXPECT_EQ(now.error().code, EAGAIN) << why;
    EXPECT_NE(why.find("not on the disk yet"), std::string::npos) << why;
    EXPECT_NE(why.find("the next run measures it"), std::string::npos) << why;
    EXPECT_EQ(why.find("write real data"), std::string::npos)
        << "the wrong advice for a file that is fully written: " << why;
  }

  // Once on the disk it is accepted; a truly sparse file is still refused as sparse.
  const int again = open(file.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_EQ(fsync(again), 0);
  close(again);
  EXPECT_TRUE(PrepareDataTarget(file, 8 << 20, control));
  const std::string sparse = (dir.path() / "sparse").string();
  const int s = open(sparse.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(s, 0);
  ASSERT_EQ(ftruncate(s, 4 << 20), 0);
  ASSERT_EQ(pwrite(s, "data", 4, 0), 4);
  ASSERT_EQ(fsync(s), 0);
  close(s);
  auto refused = PrepareDataTarget(sparse, 4 << 20, control);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, EINVAL);
  EXPECT_NE(refused.error().message.find("is sparse"), std::string::npos)
      << refused.error().message;
}

}  // namespace
}  // namespace iodrift::probes
