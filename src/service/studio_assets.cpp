#include "rankd/service/studio_assets.h"

#include <array>
#include <vector>

#include "studio_embedded.h"

namespace rankd::service {
namespace {

struct ContentType {
  std::string_view extension;
  std::string_view type;
};
constexpr std::array kContentTypes = {
    ContentType{".html", "text/html; charset=utf-8"},
    ContentType{".js", "text/javascript; charset=utf-8"},
    ContentType{".css", "text/css; charset=utf-8"},
    ContentType{".svg", "image/svg+xml"},
    ContentType{".png", "image/png"},
};

std::vector<StudioAsset> MakeAssets() {
  std::vector<StudioAsset> assets;
  for (const StudioEmbeddedFile& file : StudioEmbeddedFiles()) {
    assets.push_back({file.name, StudioContentType(file.name), file.bytes, file.digest});
  }
  return assets;
}

}  // namespace

std::string_view StudioContentType(std::string_view name) noexcept {
  for (const ContentType& type : kContentTypes) {
    if (name.ends_with(type.extension)) return type.type;
  }
  return "application/octet-stream";
}

std::span<const StudioAsset> StudioAssets() noexcept {
  static const std::vector<StudioAsset> assets = MakeAssets();
  return assets;
}

const StudioAsset* FindStudioAsset(std::string_view name) noexcept {
  for (const StudioAsset& asset : StudioAssets()) {
    if (asset.name == name) return &asset;
  }
  return nullptr;
}

}  // namespace rankd::service
