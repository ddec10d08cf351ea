// The studio page's files (docs/studio.md): bundled from studio/ by esbuild when rankd builds
// and embedded in the binary, so `rankd serve` serves the page with nothing installed beside it.
// Each file has its bytes, its content type (by extension) and a digest of its bytes (the first
// 16 hex digits of their SHA-256): index.html names the other files with it
// (`/studio/studio.js?v=<digest>`), so a browser may keep a file fetched by its digest for good
// and must revalidate index.html, whose ETag is its own digest.
//
// Plain functions over constant data; any thread.
#pragma once

#include <span>
#include <string_view>

namespace rankd::service {

struct StudioAsset {
  std::string_view name;  // as served under /studio/: "index.html", "studio.js", "studio.css"
  std::string_view content_type;
  std::string_view bytes;
  std::string_view digest;  // 16 lowercase hex digits
};

// Every embedded file, index.html first.
std::span<const StudioAsset> StudioAssets() noexcept;
// The file named `name`; null when there is none.
const StudioAsset* FindStudioAsset(std::string_view name) noexcept;
// The content type of a file by its extension (text/html, text/javascript, text/css, each with
// charset=utf-8; application/octet-stream for others).
std::string_view StudioContentType(std::string_view name) noexcept;

}  // namespace rankd::service
