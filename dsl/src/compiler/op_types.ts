// The shape of an op's entry in the op table (spec/ops.toml, generated into
// dsl/src/generated/ops.ts). The header of spec/ops.toml defines each field;
// these are their TypeScript types. Types only: the generated table and the
// studio import them without importing the compiler.

/** The static cost of one node: the most rows it can produce and Redis commands it can issue per request. */
export interface NodeCost {
  rows: number;
  redis_commands: number;
}

/**
 * One param of an op. Types: int (min..max; with fromParam, the value may
 * instead be {"param": NAME}, a declared int request param whose registry
 * bounds lie within min..max), float (a number from min to max, both
 * finite), int_list and key_list (min_items..max_items; key_list's keys are
 * distinct), enum (values), and names: schema (a key schema), key (a key read
 * at the node's input: it must be available there), out_key (a key the node
 * writes), expr and pred (an entry of the plan's exprs or preds).
 */
export type ParamSpec = { readonly required: boolean } & (
  | { readonly type: "int"; readonly min: number; readonly max: number; readonly fromParam?: true }
  | { readonly type: "float"; readonly min: number; readonly max: number }
  | { readonly type: "int_list"; readonly min_items: number; readonly max_items: number }
  | { readonly type: "key_list"; readonly min_items: number; readonly max_items: number }
  | { readonly type: "enum"; readonly values: readonly string[] }
  | { readonly type: "schema" | "key" | "out_key" | "expr" | "pred" }
);

/** A key schema an op reads: a fixed one, or the one named by a param. */
export type SchemaRef = { readonly name: string } | { readonly param: string };

/** The keys on an op's output rows, besides `id`. */
export interface OutputKeys {
  /** Every key of the input rows (with several inputs, of all of them). */
  readonly keepInputKeys: boolean;
  /** Params whose values (a key or a list of keys) name keys the op adds. */
  readonly addParams: readonly string[];
  /** The keys the op's hash schema (`reads.hash`) yields. */
  readonly addHashYields: boolean;
}

/** How a text of an op's params writes each kind of value (explain and the studio differ). */
export interface ParamText {
  /** An int param: a number, or {"param": NAME}. */
  int(v: unknown): string;
  /** A float param: a number. */
  float(v: unknown): string;
  /** A list param's items. */
  list(v: unknown): string;
  /** A list param's length. */
  len(v: unknown): string;
  /** A name: a key schema, a key, an enum value. */
  name(v: unknown): string;
  /** An id of the plan's exprs / preds. */
  expr(v: unknown): string;
  pred(v: unknown): string;
}

type Params = Readonly<Record<string, unknown>>;

/** One op's generated entry (spec/ops.toml). */
export interface OpTableEntry {
  readonly inputs: { readonly min: number; readonly max: number };
  readonly params: Readonly<Record<string, ParamSpec>>;
  readonly reads: { readonly list?: SchemaRef; readonly hash?: SchemaRef; readonly set?: SchemaRef };
  readonly output: OutputKeys;
  cost(inputRows: readonly number[], params: Params): NodeCost;
  /** Its params' text after the op's name in `rankc --explain`. */
  explainText(params: Params, r: ParamText): string;
  readonly execution: "redis_source" | "cpu" | "heavy_cpu" | "wait";
  readonly degrade: "no_rows" | "pass_input" | "keep_finished_inputs";
  readonly reads_viewer_id?: true;
  readonly reads_input_ids_only?: true;
  readonly reads_every_key?: true;
  readonly orders_by_key?: true;
  readonly makes_candidates?: true;
  readonly removal?: "predicate" | "position" | "rank_by_key" | "earlier_duplicate" | "seen" | "not_inserted";
  /** The DSL method that writes it, as the authoring guide shows it. */
  readonly dsl: string;
}
