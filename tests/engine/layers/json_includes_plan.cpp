// Must not compile: json, near the bottom of the engine's layers, including a header of plan, a
// layer above it (tests/engine/layers/CMakeLists.txt).
#include "json/parser.h"
#include "plan/plan_checker.h"
