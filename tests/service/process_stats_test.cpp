// ParseProcStat, ParseBootTime and ReadProcessStats
// (src/service/include/rankd/service/process_stats.h): /proc's formats, lines that are not in
// them, and this test process's own figures.
#include "rankd/service/process_stats.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <string>

namespace rankd::service {
namespace {

// A /proc/<pid>/stat line (proc(5)): `comm` in parentheses, then fields 3 to 52.
std::string StatLine(const std::string& comm) {
  return "4242 (" + comm +
         ") S 1 4242 4242 0 -1 4194560 1700 0 3 0 250 75 0 0 20 0 9 0 123456 987654321 2048 "
         "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
}

TEST(ParseProcStatTest, ReadsTheFieldsAfterTheCommandName) {
  const std::optional<ProcStatFields> f = ParseProcStat(StatLine("rankd"));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->utime_ticks, 250u);
  EXPECT_EQ(f->stime_ticks, 75u);
  EXPECT_EQ(f->start_ticks, 123456u);
  EXPECT_EQ(f->vsize_bytes, 987654321u);
  EXPECT_EQ(f->rss_pages, 2048u);
}

TEST(ParseProcStatTest, ACommandNameWithSpacesAndParenthesesDoesNotShiftTheFields) {
  const std::optional<ProcStatFields> f = ParseProcStat(StatLine("rank d) (x 1 2"));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->utime_ticks, 250u);
  EXPECT_EQ(f->rss_pages, 2048u);
}

TEST(ParseProcStatTest, LinesNotInTheFormatAreRefused) {
  EXPECT_FALSE(ParseProcStat(""));
  EXPECT_FALSE(ParseProcStat("4242 rankd S 1 2 3"));               // no parenthesized name
  EXPECT_FALSE(ParseProcStat(") 4242 (rankd S 1"));                // ')' before '('
  EXPECT_FALSE(ParseProcStat("4242 (rankd) S 1 4242 4242 0 -1"));  // cut short
  std::string line = StatLine("rankd");
  line.replace(line.find(" 250 "), 5, " 2x0 ");  // utime not a number
  EXPECT_FALSE(ParseProcStat(line));
  line = StatLine("rankd");
  line.replace(line.find(" 2048 "), 6, " -2048 ");  // rss negative
  EXPECT_FALSE(ParseProcStat(line));
}

TEST(ParseBootTimeTest, ReadsTheBtimeLine) {
  EXPECT_EQ(ParseBootTime("cpu  1 2 3\nintr 5\nbtime 1764120000\nprocesses 9\n"), 1764120000);
  EXPECT_EQ(ParseBootTime("btime 7"), 7);
  EXPECT_FALSE(ParseBootTime("cpu  1 2 3\nprocesses 9\n"));
  EXPECT_FALSE(ParseBootTime("btime soon\n"));
  EXPECT_FALSE(ParseBootTime("xbtime 7\n"));
}

TEST(ReadProcessStatsTest, ThisProcessHasEveryFigureWithinSaneBounds) {
  const ProcessStats s = ReadProcessStats();
  ASSERT_TRUE(s.cpu_seconds && s.resident_bytes && s.virtual_bytes && s.open_fds && s.max_fds &&
              s.start_time_seconds);
  EXPECT_GE(*s.cpu_seconds, 0);
  EXPECT_GT(*s.resident_bytes, 0);
  EXPECT_GE(*s.virtual_bytes, *s.resident_bytes);
  EXPECT_GE(*s.open_fds, 3);  // stdin, stdout, stderr
  EXPECT_LE(*s.open_fds, *s.max_fds);
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_LE(*s.start_time_seconds, now + 1);  // a tick's rounding
  EXPECT_GT(*s.start_time_seconds, now - 24 * 3600.0);
}

TEST(ReadProcessStatsTest, OpenDescriptorsCountTheOnesOpened) {
  const double before = ReadProcessStats().open_fds.value();
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const double after = ReadProcessStats().open_fds.value();
  close(fds[0]);
  close(fds[1]);
  EXPECT_EQ(after - before, 2);
}

}  // namespace
}  // namespace rankd::service
