// `rankd assign`: the variant of a surface each viewer is assigned, computed offline with the
// engine's assignment (docs/experiments.md, "rankd assign"), so a pipeline can join logs and
// outcomes to variants without asking a server.
//
// Runs on main's thread; reads the plan store and stdin, writes stdout.
#pragma once

namespace rankd::cli {

int RunAssign(int argc, char** argv);

}  // namespace rankd::cli
