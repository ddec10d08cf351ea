// Reads a JSON fixture of test/fixtures (the tests run from dist/test).

import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export function loadFixture<T>(name: string): T {
  const path = fileURLToPath(new URL(`../../test/fixtures/${name}`, import.meta.url));
  return JSON.parse(readFileSync(path, "utf8")) as T;
}
