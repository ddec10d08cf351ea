// Worker thread body for runInSandbox: runs one plan bundle and posts the result.

import { parentPort, workerData } from "node:worker_threads";
import { runInSandboxHere, type SandboxLimits } from "./sandbox.js";

const { code, filename, outputGlobal, limits } = workerData as { code: string; filename: string; outputGlobal: string; limits: SandboxLimits };
parentPort?.postMessage(await runInSandboxHere(code, filename, outputGlobal, limits));
