// `rankd version`: rankd's version, how this binary was built (build type, compiler, the git
// commit it was configured from) and the io backends that work on this machine.
#pragma once

namespace rankd::cli {

// Takes no arguments but --help (see subcommand.h).
int RunVersion(int argc, char** argv);

}  // namespace rankd::cli
