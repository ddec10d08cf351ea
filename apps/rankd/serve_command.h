// `rankd serve`: the ranking service over HTTP (docs/operations.md).
//
// Runs the shards of one ShardSet (the HTTP server and the ranking service share their loops);
// main's thread loads the plan store, then waits for signals: SIGHUP reloads the store,
// SIGTERM or SIGINT drains the server and stops.
#pragma once

namespace rankd::cli {

int RunServe(int argc, char** argv);

}  // namespace rankd::cli
