// `rankd replay --captures FILE --plans DIR --registry DIR [--plan NAME]`: re-executes captured
// requests offline against a plan store, answering their Redis commands from the capture, and
// reports for each whether the response is the captured one byte for byte and the ranking diff
// (docs/experiments.md, "Capture and replay").
//
// Runs on main's thread with its own event loop; reads the capture file line by line.
#pragma once

namespace rankd::cli {

int RunReplay(int argc, char** argv);

}  // namespace rankd::cli
