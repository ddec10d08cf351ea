// Compile diagnostics: every error names a file and, where known, a line and
// column, printed as `file:line:col: error: message` like other compilers.

import path from "node:path";

export interface SourcePos {
  file: string;
  /** 1-based. */
  line?: number;
  /** 1-based. */
  col?: number;
}

export interface Diagnostic extends SourcePos {
  message: string;
  /** An extra line of advice, printed after the message. */
  hint?: string;
  /** A warning does not fail the build (default: an error). */
  severity?: "warning";
}

/** A failed compile: one or more diagnostics. */
export class CompileError extends Error {
  readonly diagnostics: Diagnostic[];
  constructor(diagnostics: Diagnostic[]) {
    super(diagnostics.map((d) => formatDiagnostic(d)).join("\n"));
    this.name = "CompileError";
    this.diagnostics = diagnostics;
  }
}

/** `file:line:col: error: message` (or `warning:`), with the file relative to the working directory when inside it. */
export function formatDiagnostic(d: Diagnostic, cwd = process.cwd()): string {
  let file = d.file;
  if (path.isAbsolute(file)) {
    const rel = path.relative(cwd, file);
    if (!rel.startsWith("..") && !path.isAbsolute(rel)) file = rel;
  }
  let where = file;
  if (d.line !== undefined) where += `:${d.line}`;
  if (d.line !== undefined && d.col !== undefined) where += `:${d.col}`;
  return `${where}: ${d.severity ?? "error"}: ${d.message}` + (d.hint ? `\n  hint: ${d.hint}` : "");
}
