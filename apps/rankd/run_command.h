// `rankd run`: ranking requests from stdin, one JSON object per line, answered on stdout one
// line each, in order (docs/engine.md, "rankd run").
//
// Runs on main's thread: one event loop, the CPU pool for large CPU nodes.
#pragma once

namespace rankd::cli {

int RunRun(int argc, char** argv);

}  // namespace rankd::cli
