// `rankd datagen`: writes a synthetic dataset (rankd/datagen/dataset.h) to a Redis server, with
// pipelining, a progress bar on a terminal (progress lines otherwise), and keys/s at the end.
//
// Runs on main's thread: one event loop, one Redis connection.
#pragma once

namespace rankd::cli {

int RunDatagen(int argc, char** argv);

}  // namespace rankd::cli
