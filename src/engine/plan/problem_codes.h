// The problem codes the engine reports when it loads a registry or a plan store: the plan rules'
// codes, which rankc reports too (docs/plan-format.md, "Problem codes";
// dsl/src/compiler/issues.ts), and the codes of reading files, JSON, the registry and the store
// index and surfaces.toml (docs/plan-format.md, "Problems of files, the registry and the store
// index").
//
// Plain constants; no thread affinity.
#pragma once

#include <string_view>

namespace rankd::engine::codes {

// Plan rules, in the order of the format doc's table.
inline constexpr std::string_view kSchema = "schema";
inline constexpr std::string_view kRegistryDigestMismatch = "registry_digest_mismatch";
inline constexpr std::string_view kDigestMismatch = "digest_mismatch";
inline constexpr std::string_view kParamUnknown = "param_unknown";
inline constexpr std::string_view kParamMismatch = "param_mismatch";
inline constexpr std::string_view kParamDefaultWrongType = "param_default_wrong_type";
inline constexpr std::string_view kParamDefaultOutOfRange = "param_default_out_of_range";
inline constexpr std::string_view kDuplicateNodeId = "duplicate_node_id";
inline constexpr std::string_view kUnknownInput = "unknown_input";
inline constexpr std::string_view kCycle = "cycle";
inline constexpr std::string_view kUnknownOutput = "unknown_output";
inline constexpr std::string_view kDeadNode = "dead_node";
inline constexpr std::string_view kKeySchemaUnknown = "key_schema_unknown";
inline constexpr std::string_view kKeySchemaWrongType = "key_schema_wrong_type";
inline constexpr std::string_view kKeyNotYielded = "key_not_yielded";
inline constexpr std::string_view kKeyUnknown = "key_unknown";
inline constexpr std::string_view kKeyNotAvailable = "key_not_available";
inline constexpr std::string_view kKeyNotWritable = "key_not_writable";
inline constexpr std::string_view kKeyNotNumeric = "key_not_numeric";
inline constexpr std::string_view kParamUnbounded = "param_unbounded";
inline constexpr std::string_view kUnsafeInteger = "unsafe_integer";
inline constexpr std::string_view kUnknownExpr = "unknown_expr";
inline constexpr std::string_view kUnknownPred = "unknown_pred";
inline constexpr std::string_view kUnusedExpr = "unused_expr";
inline constexpr std::string_view kUnusedPred = "unused_pred";
inline constexpr std::string_view kParamUndeclared = "param_undeclared";
inline constexpr std::string_view kTypeMismatch = "type_mismatch";
inline constexpr std::string_view kExprTooDeep = "expr_too_deep";
inline constexpr std::string_view kRegexInvalid = "regex_invalid";
inline constexpr std::string_view kBudgetRows = "budget_rows";
inline constexpr std::string_view kBudgetCommands = "budget_commands";
inline constexpr std::string_view kModelUnknown = "model_unknown";
inline constexpr std::string_view kModelUnlisted = "model_unlisted";
inline constexpr std::string_view kUnusedModel = "unused_model";

// Files and JSON text.
inline constexpr std::string_view kFileUnreadable = "file_unreadable";
inline constexpr std::string_view kFileTooLarge = "file_too_large";
inline constexpr std::string_view kJsonSyntax = "json_syntax";
inline constexpr std::string_view kJsonDuplicateMember = "json_duplicate_member";
inline constexpr std::string_view kJsonTooDeep = "json_too_deep";
inline constexpr std::string_view kJsonNumberOutOfRange = "json_number_out_of_range";

// The registry, the plan store index and the store's surfaces.toml.
inline constexpr std::string_view kRegistryInvalid = "registry_invalid";
inline constexpr std::string_view kIndexInvalid = "index_invalid";
inline constexpr std::string_view kIndexMismatch = "index_mismatch";
inline constexpr std::string_view kSurfacesInvalid = "surfaces_invalid";
// A model file of the store, and an artifact's model digest against the store's file.
inline constexpr std::string_view kModelInvalid = "model_invalid";
inline constexpr std::string_view kModelDigestMismatch = "model_digest_mismatch";

}  // namespace rankd::engine::codes
