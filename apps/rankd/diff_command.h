// `rankd diff A.json B.json`: the ranking diff of two /rank responses to the same request
// (docs/experiments.md, "The ranking diff"), as text or JSON on stdout.
//
// Runs on main's thread; reads the two files whole.
#pragma once

namespace rankd::cli {

int RunDiff(int argc, char** argv);

}  // namespace rankd::cli
