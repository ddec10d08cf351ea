// The rankc build status banner (GET /studio/api/build): whether to show it, and each
// diagnostic as the compiler prints it, file:line:col: message.

import type { BuildDiagnostic, BuildStatus } from "./api_types.js";

export function diagnosticText(d: BuildDiagnostic): string {
  return `${d.file}:${d.line}:${d.column}: ${d.message}`;
}

export function bannerVisible(status: BuildStatus): boolean {
  return status.state === "failed";
}

export function bannerHeadline(status: BuildStatus): string {
  const count = status.diagnostics.length;
  const when = status.at ? ` at ${status.at}` : "";
  return `rankc build failed${when}: ${count} problem${count === 1 ? "" : "s"}; the server keeps the last good plans`;
}
