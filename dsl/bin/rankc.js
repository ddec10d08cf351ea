#!/usr/bin/env node
// Entry point of the rankd plan compiler; the code is built from dsl/src by `npm run build`.
import { existsSync } from "node:fs";
const main = new URL("../dist/src/cli/main.js", import.meta.url);
if (!existsSync(main)) {
  console.error("rankc: not built yet; run `npm run build` at the repository root");
  process.exit(70);
}
await import(main.href);
