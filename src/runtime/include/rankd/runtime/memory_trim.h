// RequestMemoryTrim: gives memory the allocator holds on to back to the system.
//
// glibc's malloc keeps freed memory for reuse: the chunks of a burst (a server's grown buffers,
// closed connections) stay in the process's RSS long after the burst ended. A component that has
// just freed a lot calls RequestMemoryTrim(); malloc_trim(0) then runs on the CPU pool (it walks
// every arena, which can take milliseconds: never on an event loop). Requests made while one is
// queued are folded into it; one made while a trim runs gets one more trim after it. Callers
// decide how much freeing is worth a trim (the HTTP server: every 8 MiB).
//
// Thread affinity: any thread. Ownership: none (process-wide state).
#pragma once

#include <cstdint>

namespace rankd::rt {

// Asks for a trim soon (see above). Never blocks.
void RequestMemoryTrim() noexcept;

// Trims that have run so far (diagnostics and tests).
std::uint64_t MemoryTrimsRun() noexcept;

}  // namespace rankd::rt
