// The plan authoring API: what `*.plan.ts` files import from "@rankd/dsl".

export { E, Key, Pred, NumExpr, StrExpr, BoolExpr, Expr } from "./expr.js";
export type { AssignableTo, ExprOf, KeyRefs, ModelOptions, NumLike, StrLike, BoolLike } from "./expr.js";
export {
  Candidates,
  DEFAULT_BUDGETS,
  Fragment,
  PlanContext,
  PlanDefinition,
  defineFragment,
  definePlan,
} from "./plan.js";
export type { Count, DecayOptions, DiversifyOptions, FanoutOptions, InsertOptions, NodeOptions, PlanSpec } from "./plan.js";
export type {
  HashSchema,
  KeyName,
  ListSchema,
  ModelName,
  NumericKey,
  ParamDecls,
  ParamName,
  SchemaKey,
  SetSchema,
  WritableFloatKey,
  WritableKey,
} from "./registry-types.js";
export { PlanError } from "./loc.js";
