// A minimal source map v3 reader: maps a (line, column) of the bundled plan
// back to the TypeScript file and position the plan author wrote.

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const B64_VALUE = new Map([...B64].map((c, i) => [c, i]));

export interface SourceMapJson {
  version: number;
  sources: string[];
  mappings: string;
}

/** One mapping segment: generated column (0-based) to source index, line and column (0-based). */
type Segment = [number, number, number, number];

export interface OriginalPosition {
  source: string;
  /** 1-based. */
  line: number;
  /** 1-based. */
  col: number;
}

export class SourceMap {
  private readonly lines: Segment[][] = [];
  readonly sources: string[];

  constructor(map: SourceMapJson) {
    this.sources = map.sources;
    let src = 0;
    let srcLine = 0;
    let srcCol = 0;
    for (const lineText of map.mappings.split(";")) {
      let genCol = 0;
      const segs: Segment[] = [];
      for (const segText of lineText.split(",")) {
        if (!segText) continue;
        const v = decodeVlq(segText);
        genCol += v[0] ?? 0;
        if (v.length >= 4) {
          src += v[1] ?? 0;
          srcLine += v[2] ?? 0;
          srcCol += v[3] ?? 0;
          segs.push([genCol, src, srcLine, srcCol]);
        }
      }
      this.lines.push(segs);
    }
  }

  /** The original position of a 1-based generated line and column, if mapped. */
  original(line: number, col: number): OriginalPosition | undefined {
    const segs = this.lines[line - 1];
    if (!segs || segs.length === 0) return undefined;
    let best: Segment | undefined;
    for (const s of segs) {
      if (s[0] <= col - 1) best = s;
      else break;
    }
    best ??= segs[0] as Segment;
    const source = this.sources[best[1]];
    if (source === undefined) return undefined;
    return { source, line: best[2] + 1, col: best[3] + 1 };
  }
}

function decodeVlq(text: string): number[] {
  const out: number[] = [];
  let value = 0;
  let shift = 0;
  for (const c of text) {
    const digit = B64_VALUE.get(c);
    if (digit === undefined) throw new Error(`invalid source map character "${c}"`);
    value += (digit & 31) << shift;
    if (digit & 32) {
      shift += 5;
    } else {
      out.push(value & 1 ? -(value >>> 1) : value >>> 1);
      value = 0;
      shift = 0;
    }
  }
  return out;
}
