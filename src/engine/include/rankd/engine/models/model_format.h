// ModelFormat: the file formats of tree models rankd reads (docs/models.md, "Formats"). Its own
// header so that what names a format (the registry's models) need not see the scorer.
#pragma once

#include <cstdint>

namespace rankd::engine::models {

enum class ModelFormat : std::uint8_t { kLightGbmText, kXgboostJson };

}  // namespace rankd::engine::models
