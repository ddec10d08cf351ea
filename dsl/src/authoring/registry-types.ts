// Types derived from the generated registry module, so that the TypeScript
// checker rejects an unknown key, param or model, a string key in arithmetic,
// a key of the wrong type, or a key schema of the wrong kind.

import { KEYS, KEY_SCHEMAS, MODELS, PARAMS } from "../generated/registry.js";

export type KeyName = keyof typeof KEYS;
export type KeyType<K extends KeyName> = (typeof KEYS)[K]["type"];

/** Keys a `vm` node may assign. */
export type WritableKey = {
  [K in KeyName]: (typeof KEYS)[K]["writable"] extends true ? K : never;
}[KeyName];

/** Writable keys of type float: the keys a `decay` node may write. */
export type WritableFloatKey = {
  [K in WritableKey]: KeyType<K> extends "float" ? K : never;
}[WritableKey];

/** Keys of type int or float. */
export type NumericKey = {
  [K in KeyName]: KeyType<K> extends "int" | "float" ? K : never;
}[KeyName];

export type ParamName = keyof typeof PARAMS;
export type ParamType<P extends ParamName> = (typeof PARAMS)[P]["type"];
export type ParamValue<P extends ParamName> = ParamType<P> extends "string"
  ? string
  : ParamType<P> extends "bool"
    ? boolean
    : number;

/** Params a plan declares, each with the plan's default value. */
export type ParamDecls = { readonly [P in ParamName]?: ParamValue<P> };

export type SchemaName = keyof typeof KEY_SCHEMAS;

/** Key schemas stored as Redis hashes: fetched with `fetchFeatures`. */
export type HashSchema = {
  [S in SchemaName]: (typeof KEY_SCHEMAS)[S]["type"] extends "hash" ? S : never;
}[SchemaName];

/** Key schemas stored as Redis lists of ids: fetched with `fetchList`. */
export type ListSchema = {
  [S in SchemaName]: (typeof KEY_SCHEMAS)[S]["type"] extends "list" ? S : never;
}[SchemaName];

/** Key schemas stored as Redis sets of ids: a plan tests its rows' ids against them with `excludeSeen`. */
export type SetSchema = {
  [S in SchemaName]: (typeof KEY_SCHEMAS)[S]["type"] extends "set" ? S : never;
}[SchemaName];

/** The keys a hash schema yields. */
export type SchemaKey<S extends HashSchema> = (typeof KEY_SCHEMAS)[S]["yields"][number];

/** The registry's tree models, scored with `E.model(name)`. */
export type ModelName = keyof typeof MODELS;
