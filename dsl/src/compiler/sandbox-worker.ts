// Worker thread body for runInSandbox: sets up QuickJS as soon as it starts,
// then runs the one plan bundle it is sent and posts the result.

import { parentPort, workerData } from "node:worker_threads";
import { openSandbox, type SandboxJob } from "./sandbox.js";

const sandbox = openSandbox((workerData as { memoryBytes: number }).memoryBytes);
// A failed set-up surfaces when the job arrives (as the worker's "error" event).
sandbox.catch(() => {});
parentPort?.once("message", async (job: SandboxJob) => parentPort?.postMessage((await sandbox)(job)));
