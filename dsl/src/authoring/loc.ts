// Call-site capture for authoring errors. The sandbox's stack traces name
// positions in the bundled plan; the compiler maps them back to the plan's
// TypeScript source with the bundle's source map.

/** Stack frames deeper than this are never the plan author's own code. */
const MAX_FRAMES = 24;

const FRAME = /:(\d+):(\d+)\)?\s*$/;

/** The (line, column) of each frame of the current stack, innermost first. */
export function captureFrames(): Array<[number, number]> {
  const stack = new Error().stack ?? "";
  return parseFrames(stack);
}

/**
 * The key, in a plan's location table (LocTable), of the first E.model call
 * naming `model`; never a node id, which starts with a letter.
 */
export function modelSite(model: string): string {
  return `$model:${model}`;
}

export function parseFrames(stack: string): Array<[number, number]> {
  const frames: Array<[number, number]> = [];
  for (const line of stack.split("\n")) {
    const m = FRAME.exec(line);
    if (m) frames.push([Number(m[1]), Number(m[2])]);
    if (frames.length >= MAX_FRAMES) break;
  }
  return frames;
}

/**
 * An authoring mistake found while a plan builds (for example a duplicate node
 * id). The compiler reports it at the plan line that made the call.
 */
export class PlanError extends Error {
  /** `frames`, when given, replace the stack: the error is reported where they point. */
  constructor(message: string, frames?: Array<[number, number]>) {
    super(message);
    this.name = "PlanError";
    if (frames) {
      Object.defineProperty(this, "stack", { value: frames.map(([l, c]) => `    at plan (plan:${l}:${c})`).join("\n") + "\n" });
    }
  }
}
