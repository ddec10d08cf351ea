// The error code table (rankd/engine/error_code.h): one entry per code in enum order, unique wire
// names that read back to their code, and the statuses docs/operations.md tells operators.
#include "rankd/engine/problems/error_code.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

namespace rankd::engine {
namespace {

TEST(ErrorCodeTest, EachCodeHasOneEntryAndAUniqueWireName) {
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < AllErrorCodes().size(); ++i) {
    const ErrorCodeInfo& info = AllErrorCodes()[i];
    EXPECT_EQ(static_cast<std::size_t>(info.code), i);
    EXPECT_TRUE(names.insert(info.wire_name).second) << info.wire_name;
    EXPECT_EQ(WireName(info.code), info.wire_name);
    EXPECT_EQ(HttpStatus(info.code), info.http_status);
    EXPECT_EQ(ErrorCodeNamed(info.wire_name), info.code);
    EXPECT_GE(info.http_status, 400);
    EXPECT_LT(info.http_status, 600);
  }
  EXPECT_EQ(ErrorCodeNamed("upstream"), std::nullopt);
  EXPECT_EQ(ErrorCodeNamed(""), std::nullopt);
}

TEST(ErrorCodeTest, TheOperationsGuideListsEveryCodeWithItsStatus) {
  std::ifstream doc(std::string(RANKD_SOURCE_DIR) + "/docs/operations.md");
  ASSERT_TRUE(doc) << "docs/operations.md";
  // Rows of the "Errors" table: | `code`[, `code`][ (note)] | status |[ when |]
  const std::regex row(R"(^\| (`[a-z_]+`(?:, `[a-z_]+`)*)[^|]*\| (\d{3}) \|(?: [^|]+ \|)?$)");
  const std::regex code("`([a-z_]+)`");
  std::map<std::string, int> documented;
  std::string line;
  while (std::getline(doc, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) continue;
    const std::string codes = m[1].str();
    for (auto it = std::sregex_iterator(codes.begin(), codes.end(), code);
         it != std::sregex_iterator(); ++it) {
      documented[(*it)[1].str()] = std::stoi(m[2].str());
    }
  }
  for (const ErrorCodeInfo& info : AllErrorCodes()) {
    const auto it = documented.find(std::string(info.wire_name));
    ASSERT_NE(it, documented.end()) << info.wire_name << " is not in docs/operations.md";
    EXPECT_EQ(it->second, info.http_status) << info.wire_name;
  }
  EXPECT_EQ(documented.size(), AllErrorCodes().size());
}

}  // namespace
}  // namespace rankd::engine
