// ModelSet: a plan store's tree models by name (bound_model.h defines each). Its own header so
// that what passes a set along (the store, compiled programs) need not see the scorer.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

namespace rankd::engine {

struct BoundModel;

using ModelSet = std::map<std::string, std::shared_ptr<const BoundModel>, std::less<>>;

}  // namespace rankd::engine
