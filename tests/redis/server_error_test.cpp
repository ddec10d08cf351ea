// ClassifyError: error kinds by first word, and MOVED/ASK targets.
#include "rankd/redis/server_error.h"

#include <gtest/gtest.h>

namespace rankd::redis {
namespace {

TEST(ServerError, KindIsTheFirstWord) {
  EXPECT_EQ(ClassifyError("ERR unknown command 'FOO'").kind, ErrorKind::kErr);
  EXPECT_EQ(ClassifyError("WRONGTYPE Operation against a key").kind, ErrorKind::kWrongType);
  EXPECT_EQ(ClassifyError("CROSSSLOT Keys in request don't hash to the same slot").kind,
            ErrorKind::kCrossSlot);
  EXPECT_EQ(ClassifyError("NOAUTH Authentication required.").kind, ErrorKind::kNoAuth);
  EXPECT_EQ(ClassifyError("LOADING Redis is loading the dataset in memory").kind,
            ErrorKind::kLoading);
  EXPECT_EQ(ClassifyError("TRYAGAIN Multiple keys request during rehashing of slot").kind,
            ErrorKind::kTryAgain);
  EXPECT_EQ(ClassifyError("CLUSTERDOWN The cluster is down").kind, ErrorKind::kClusterDown);
  EXPECT_EQ(ClassifyError("NOPROTO unsupported protocol version").kind, ErrorKind::kNoProto);
  const ServerError other = ClassifyError("SOMETHINGNEW happened");
  EXPECT_EQ(other.kind, ErrorKind::kOther);
  EXPECT_EQ(other.code, "SOMETHINGNEW");
  EXPECT_EQ(other.message, "SOMETHINGNEW happened");
  EXPECT_EQ(ClassifyError("BUSY").code, "BUSY");
  EXPECT_EQ(ClassifyError("BUSY").kind, ErrorKind::kBusy);
  EXPECT_EQ(ClassifyError("").kind, ErrorKind::kOther);
  EXPECT_EQ(ClassifyError("err lowercase").kind, ErrorKind::kOther);  // codes are upper case
  EXPECT_EQ(ErrorKindName(ErrorKind::kWrongType), "WRONGTYPE");
}

TEST(ServerError, MovedAndAskCarryTheirTarget) {
  const ServerError moved = ClassifyError("MOVED 3999 127.0.0.1:6381");
  EXPECT_EQ(moved.kind, ErrorKind::kMoved);
  ASSERT_TRUE(moved.redirect.has_value());
  EXPECT_EQ(moved.redirect->slot, 3999);
  EXPECT_EQ(moved.redirect->host, "127.0.0.1");
  EXPECT_EQ(moved.redirect->port, 6381);

  const ServerError ask = ClassifyError("ASK 16383 redis-2.example:7000");
  EXPECT_EQ(ask.kind, ErrorKind::kAsk);
  ASSERT_TRUE(ask.redirect.has_value());
  EXPECT_EQ(ask.redirect->slot, 16383);
  EXPECT_EQ(ask.redirect->host, "redis-2.example");
  EXPECT_EQ(ask.redirect->port, 7000);

  const ServerError ipv6 = ClassifyError("MOVED 0 ::1:7001");
  ASSERT_TRUE(ipv6.redirect.has_value());
  EXPECT_EQ(ipv6.redirect->host, "::1");
  EXPECT_EQ(ipv6.redirect->port, 7001);

  const ServerError unknown_host = ClassifyError("MOVED 12 :7002");
  ASSERT_TRUE(unknown_host.redirect.has_value());
  EXPECT_EQ(unknown_host.redirect->host, "");
  EXPECT_EQ(unknown_host.redirect->port, 7002);
}

TEST(ServerError, MalformedRedirectionsHaveNoTarget) {
  for (const char* message : {"MOVED", "MOVED 3999", "MOVED x 1.2.3.4:5", "MOVED 16384 h:1",
                              "MOVED 1 h", "MOVED 1 h:", "MOVED 1 h:70000", "MOVED 1 h:0",
                              "ASK -1 h:1", "MOVED 1 h:1x"}) {
    const ServerError e = ClassifyError(message);
    EXPECT_FALSE(e.redirect.has_value()) << message;
  }
  EXPECT_EQ(ClassifyError("MOVED").kind, ErrorKind::kMoved);
}

}  // namespace
}  // namespace rankd::redis
