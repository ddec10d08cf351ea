// The bytes of the studio's files as the build embedded them (studio_embedded.cpp, written by
// embed_studio.cmake from the esbuild bundle of studio/). Private to studio_assets.cpp.
#pragma once

#include <span>
#include <string_view>

namespace rankd::service {

struct StudioEmbeddedFile {
  std::string_view name;
  std::string_view bytes;
  std::string_view digest;
};

// index.html first, then the files it names.
std::span<const StudioEmbeddedFile> StudioEmbeddedFiles() noexcept;

}  // namespace rankd::service
