// CommandWriter and AppendCommand: byte-exact commands, binary-safe arguments, numbers
// formatted in place, pipelines, and round trips through the parser.
#include "rankd/redis/encoder.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "resp_test_util.h"

namespace rankd::redis {
namespace {

using namespace std::string_literals;

TEST(Encoder, CommandIsAnArrayOfBulkStrings) {
  std::string out;
  AppendCommand(out, "SET", "key", "value");
  EXPECT_EQ(out, "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n");
}

TEST(Encoder, EmptyArgumentAndNoArguments) {
  std::string out;
  AppendCommand(out, "GET", "");
  EXPECT_EQ(out, "*2\r\n$3\r\nGET\r\n$0\r\n\r\n");
  out.clear();
  { CommandWriter writer(out, 0); }
  EXPECT_EQ(out, "*0\r\n");
}

TEST(Encoder, ArgumentsThatGrowTheBufferAreWrittenWhole) {
  // Each argument longer than the buffer's room, from an empty (small-string) buffer up: the
  // bytes written are exactly the command's, whatever the buffer's capacity became.
  for (std::size_t size : {1u, 15u, 16u, 17u, 31u, 100u, 5000u}) {
    std::string out;
    const std::string arg(size, 'x');
    AppendCommand(out, arg, arg + "y");
    const std::string n = std::to_string(size), n1 = std::to_string(size + 1);
    EXPECT_EQ(out, "*2\r\n$" + n + "\r\n" + arg + "\r\n$" + n1 + "\r\n" + arg + "y\r\n") << size;
  }
}

TEST(Encoder, IntegersAreFormattedInPlace) {
  std::string out;
  AppendCommand(out, "LRANGE", "k", 0, -1);
  EXPECT_EQ(out, "*4\r\n$6\r\nLRANGE\r\n$1\r\nk\r\n$1\r\n0\r\n$2\r\n-1\r\n");
  out.clear();
  AppendCommand(out, std::numeric_limits<std::int64_t>::min(),
                std::numeric_limits<std::uint64_t>::max(), std::int16_t{-7}, 42u);
  EXPECT_EQ(out,
            "*4\r\n$20\r\n-9223372036854775808\r\n$20\r\n18446744073709551615\r\n$2\r\n-7\r\n"
            "$2\r\n42\r\n");
}

TEST(Encoder, DoublesUseTheShortestRoundTripText) {
  std::string out;
  AppendCommand(out, "ZADD", "z", 1.5, "m", 0.1, "n", -std::numeric_limits<double>::infinity(),
                "o", std::numeric_limits<double>::infinity(), "p");
  EXPECT_EQ(out,
            "*10\r\n$4\r\nZADD\r\n$1\r\nz\r\n$3\r\n1.5\r\n$1\r\nm\r\n$3\r\n0.1\r\n$1\r\nn\r\n"
            "$4\r\n-inf\r\n$1\r\no\r\n$3\r\ninf\r\n$1\r\np\r\n");
}

TEST(Encoder, ByteSpansAndStringsAreBinarySafe) {
  const std::string key = "a\r\nb\0c"s;
  const std::vector<std::byte> value = {std::byte{0}, std::byte{'\r'}, std::byte{'\n'},
                                        std::byte{0xff}};
  std::string out;
  CommandWriter(out, 3).Arg("SET").Arg(key).Arg(std::span<const std::byte>(value));
  EXPECT_EQ(out, "*3\r\n$3\r\nSET\r\n$6\r\na\r\nb\0c\r\n$4\r\n\0\r\n\xff\r\n"s);
}

TEST(Encoder, CommandsAppendToOneBufferAsAPipeline) {
  std::string out = "prefix";
  AppendCommand(out, "PING");
  CommandWriter mget(out, 4);
  mget.Arg("MGET");
  for (int id : {1, 22, 333}) mget.Arg(id);
  EXPECT_EQ(out,
            "prefix*1\r\n$4\r\nPING\r\n*4\r\n$4\r\nMGET\r\n$1\r\n1\r\n$2\r\n22\r\n$3\r\n333\r\n");
}

TEST(Encoder, EveryByteValueRoundTripsThroughTheParser) {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  const std::vector<std::string> args = {"SET", all, std::string("\r\n", 2),
                                         std::string("\0", 1), "", std::string(100000, '\n')};
  std::string out;
  CommandWriter writer(out, args.size());
  for (const std::string& a : args) writer.Arg(a);
  // A command is itself a valid reply: an array of bulk strings.
  const Reply parsed = testing::ParseOne(out);
  ASSERT_EQ(parsed.type, Type::kArray) << parsed.DebugString().substr(0, 200);
  ASSERT_EQ(parsed.elements.size(), args.size());
  for (std::size_t i = 0; i < args.size(); ++i) EXPECT_EQ(parsed.elements[i], Reply::Bulk(args[i]));
}

}  // namespace
}  // namespace rankd::redis
