// Unit tests for collectors/proc/task_io: inline strings, the service user's real capture
// (tests/fixtures/proc/service-user-6.18) and the calling thread's live file.
#include "collectors/proc/task_io.h"

#include <cerrno>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "collectors/common/proc_root.h"

namespace iodrift::proc {
namespace {

TEST(ParseTaskIo, ReadsTheServiceUsersCapture) {
  const auto path = std::filesystem::path(IODRIFT_TEST_FIXTURES) / "proc" / "service-user-6.18" /
                    "thread-self" / "io";
  Expected<std::string> text = ReadWholeFile(path);
  ASSERT_TRUE(text.has_value()) << text.error().message;
  Expected<TaskIo> io = ParseTaskIo(*text);
  ASSERT_TRUE(io.has_value()) << io.error().message;
  EXPECT_EQ(io->rchar, 67131549u);
  EXPECT_EQ(io->wchar, 20u);
  EXPECT_EQ(io->syscr, 101u);
  EXPECT_EQ(io->syscw, 1u);
  EXPECT_EQ(io->read_bytes, 67121152u);  // the 64 MiB file came from the device
  EXPECT_EQ(io->write_bytes, 4096u);
  EXPECT_EQ(io->cancelled_write_bytes, 0u);
}

TEST(ParseTaskIo, IgnoresUnknownLinesAndLeavesMissingFieldsEmpty) {
  Expected<TaskIo> io = ParseTaskIo("future_field: 7\nread_bytes:   4096  \nno colon here\n");
  ASSERT_TRUE(io.has_value()) << io.error().message;
  EXPECT_EQ(io->read_bytes, 4096u);
  EXPECT_EQ(io->rchar, std::nullopt);
  EXPECT_EQ(io->cancelled_write_bytes, std::nullopt);
  Expected<TaskIo> empty = ParseTaskIo("");
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(empty->read_bytes, std::nullopt);
}

TEST(ParseTaskIo, RejectsAKnownFieldThatIsNotANumber) {
  Expected<TaskIo> io = ParseTaskIo("rchar: 1\nread_bytes: -5\n");
  ASSERT_FALSE(io.has_value());
  EXPECT_EQ(io.error().code, EINVAL);
  EXPECT_NE(io.error().message.find("read_bytes"), std::string::npos) << io.error().message;
  EXPECT_NE(io.error().message.find("-5"), std::string::npos) << io.error().message;
}

TEST(ReadThreadIo, ReadsTheCallingThreadsOwnCounters) {
  Expected<TaskIo> io = ReadThreadIo();
  if (!io && io.error().code == ENOENT) GTEST_SKIP() << "kernel without CONFIG_TASK_IO_ACCOUNTING";
  ASSERT_TRUE(io.has_value()) << io.error().message;
  EXPECT_TRUE(io->read_bytes.has_value());
  ASSERT_TRUE(io->rchar.has_value());
  // This thread's rchar grows by what its own reads return (the first read of the file counts).
  Expected<TaskIo> again = ReadThreadIo();
  ASSERT_TRUE(again.has_value());
  ASSERT_TRUE(again->rchar.has_value());
  EXPECT_GT(*again->rchar, *io->rchar);
}

}  // namespace
}  // namespace iodrift::proc
