// The studio's embedded files (rankd/service/studio_assets.h): index.html first and naming every
// other file by its digest, content types by extension, lookups by name.
#include "rankd/service/studio_assets.h"

#include <gtest/gtest.h>

#include <string>

namespace rankd::service {
namespace {

TEST(StudioAssetsTest, IndexComesFirstAndNamesEveryOtherFileByItsDigest) {
  const auto assets = StudioAssets();
  ASSERT_GE(assets.size(), 3u);
  EXPECT_EQ(assets[0].name, "index.html");
  for (const StudioAsset& asset : assets) {
    EXPECT_FALSE(asset.bytes.empty()) << asset.name;
    ASSERT_EQ(asset.digest.size(), 16u) << asset.name;
    EXPECT_EQ(asset.digest.find_first_not_of("0123456789abcdef"), std::string::npos);
    if (asset.name == "index.html") continue;
    const std::string reference =
        "/studio/" + std::string(asset.name) + "?v=" + std::string(asset.digest);
    EXPECT_NE(assets[0].bytes.find(reference), std::string::npos) << reference;
  }
  EXPECT_EQ(assets[0].bytes.find("{{digest:"), std::string::npos);
}

TEST(StudioAssetsTest, FindsFilesByExactNameOnly) {
  const StudioAsset* js = FindStudioAsset("studio.js");
  ASSERT_NE(js, nullptr);
  EXPECT_EQ(js->content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(FindStudioAsset("studio.css")->content_type, "text/css; charset=utf-8");
  EXPECT_EQ(FindStudioAsset("index.html")->content_type, "text/html; charset=utf-8");
  EXPECT_EQ(FindStudioAsset("Studio.js"), nullptr);
  EXPECT_EQ(FindStudioAsset("studio.js/"), nullptr);
  EXPECT_EQ(FindStudioAsset(""), nullptr);
  EXPECT_EQ(FindStudioAsset("../studio.js"), nullptr);
}

TEST(StudioAssetsTest, ContentTypesGoByExtension) {
  EXPECT_EQ(StudioContentType("a.svg"), "image/svg+xml");
  EXPECT_EQ(StudioContentType("a.png"), "image/png");
  EXPECT_EQ(StudioContentType("a.js.map"), "application/octet-stream");
  EXPECT_EQ(StudioContentType("html"), "application/octet-stream");
}

}  // namespace
}  // namespace rankd::service
