// The problem codes the engine reports when it loads a registry or a plan store: the plan rules'
// codes, which rankc reports too (docs/plan-format.md, "Problem codes"; dsl/src/compiler/issues.ts),
// and the codes of reading files, JSON, the registry and the store index and surfaces.toml
// (docs/plan-format.md, "Problems of files, the registry and the store index"). Each is defined
// once, in spec/problems.toml; the constants are generated from it (problem_codes.gen.h).
//
// Plain constants; no thread affinity.
#pragma once

#include "problems/problem_codes.gen.h"
