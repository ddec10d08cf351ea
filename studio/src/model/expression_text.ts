// Writes a plan's expression and predicate trees (docs/plan-format.md, "Expressions" and
// "Predicates") as one line of infix text, for node labels and the node detail panel.

import type { ExprJson, PredJson } from "@rankd/dsl/plan-format";

/** The op of an expression or predicate tree, as the DSL writes them. */
type TreeOp = (ExprJson | PredJson)["op"];

/** A tree as read from an artifact: its members are checked as they are read. */
type Tree = Record<string, unknown>;

const INFIX: Partial<Record<TreeOp, string>> = {
  add: "+", sub: "-", mul: "*", div: "/",
  eq: "==", ne: "!=", lt: "<", le: "<=", gt: ">", ge: ">=",
  and: "and", or: "or",
};

function isTree(value: unknown): value is Tree {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function constText(tree: Tree): string {
  const value = tree["value"];
  if (typeof value === "string") return JSON.stringify(value);
  if (tree["type"] === "float" && typeof value === "number" && Number.isInteger(value)) return value.toFixed(1);
  return String(value);
}

/** The text of one expression or predicate tree; `nested` adds parentheses around infix forms. */
export function expressionText(tree: unknown, nested = false): string {
  if (!isTree(tree)) return "?";
  // An op the studio does not know (a newer format's) falls to the default form, op(args).
  const op = String(tree["op"]) as TreeOp;
  const args = Array.isArray(tree["args"]) ? (tree["args"] as unknown[]) : [];
  const arg = tree["arg"];
  switch (op) {
    case "const": return constText(tree);
    case "null": return "null";
    case "key": return String(tree["key"]);
    case "param": return `$${String(tree["name"])}`;
    case "not": return `not ${expressionText(args[0], true)}`;
    case "neg": return `-${expressionText(args[0], true)}`;
    case "is_null": return `${expressionText(arg, true)} is null`;
    case "not_null": return `${expressionText(arg, true)} not null`;
    case "in": {
      const values = Array.isArray(tree["values"]) ? (tree["values"] as unknown[]) : [];
      return `${expressionText(arg, true)} in [${values.map((v) => JSON.stringify(v)).join(", ")}]`;
    }
    case "regex": {
      const pattern = tree["param"] !== undefined ? `$${String(tree["param"])}` : `/${String(tree["pattern"])}/${String(tree["flags"] ?? "")}`;
      return `${expressionText(arg, true)} ~ ${pattern}`;
    }
    case "if":
      return `if(${expressionText(tree["pred"])}, ${expressionText(args[0])}, ${expressionText(args[1])})`;
    case "model": return `model(${String(tree["model"])}, ${String(tree["output"])})`;
    default: {
      const symbol = INFIX[op];
      if (symbol !== undefined && args.length >= 2) {
        const text = args.map((a) => expressionText(a, true)).join(` ${symbol} `);
        return nested ? `(${text})` : text;
      }
      return `${op}(${args.map((a) => expressionText(a)).join(", ")})`;
    }
  }
}
