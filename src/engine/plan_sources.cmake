# The engine's sources, relative to src/engine, in three lists: plan loading (JSON, registry, op
# table, plan validation, plan store, tree models), the expression VM, and execution. The fuzz
# project (fuzz/CMakeLists.txt) compiles the same lists with its instrumentation. A fourth list,
# experiments, is built on them and only into rankd_engine. The op table (plan/op_table.h) is
# the plan-time specification only; each op's run function is bound in exec/op_runs.cpp.
set(RANKD_ENGINE_PLAN_SOURCES
  json/canonical.cpp
  json/digest.cpp
  json/json_text.cpp
  json/number_format.cpp
  json/parser.cpp
  json/pointer.cpp
  json/value.cpp
  models/lightgbm_text_reader.cpp
  models/model_reading.cpp
  models/quick_scorer.cpp
  models/tree_model.cpp
  models/xgboost_json_reader.cpp
  plan/plan.cpp
  plan/plan_builder.cpp
  plan/plan_checker.cpp
  plan/op_table.cpp
  plan/plan_loader.cpp
  plan/regex.cpp
  plan/tree_types.cpp
  problems/error_code.cpp
  problems/file_reader.cpp
  problems/load_error.cpp
  registry/registry.cpp
  registry/registry_checks.cpp
  registry/registry_loader.cpp
  registry/toml_reader.cpp
  schema/json_adapter.cpp
  schema/schema_validator.cpp
  store/plan_store.cpp
  store/store_models.cpp
  store/surfaces.cpp
  store/surfaces_loader.cpp
  values/value.cpp
  values/value_json.cpp
)

# The expression VM and the columns it runs over (vm/program.h, columns/), on top of
# RANKD_ENGINE_PLAN_SOURCES (values, regex flags) and RE2.
set(RANKD_ENGINE_VM_SOURCES
  columns/candidates.cpp
  columns/column.cpp
  vm/compile.cpp
  vm/constants.cpp
  vm/evaluate.cpp
  vm/model_kernel.cpp
  vm/regex_cache.cpp
)

# Execution: requests and responses, the schedulers, the ops' run functions and kernels, Redis
# sources and value parsing.
set(RANKD_ENGINE_EXEC_SOURCES
  api/item_trace.cpp
  api/rank_request.cpp
  api/rank_response.cpp
  api/ranker.cpp
  api/request_ids.cpp
  exec/capturing_batch.cpp
  exec/compiled_plan.cpp
  exec/cpu_nodes.cpp
  exec/executor.cpp
  exec/op_runs.cpp
  exec/redis_nodes.cpp
  exec/request.cpp
  exec/request_capture.cpp
  exec/verify_rows.cpp
  ops/busy_cpu_op.cpp
  ops/concat_op.cpp
  ops/ordering_ops.cpp
  ops/selection_ops.cpp
  sources/endpoints.cpp
  sources/reply_sinks.cpp
  values/value_parsers.cpp
)

# Experiments: comparing two answers to a request (the ranking diff, the ranked list of a
# response's output) and replaying captured requests (capture files, replay endpoints), on top
# of the lists above.
set(RANKD_ENGINE_EXPERIMENTS_SOURCES
  experiments/capture_file.cpp
  experiments/ranking_diff.cpp
  experiments/replay.cpp
  experiments/replay_endpoint.cpp
  experiments/response_ranking.cpp
  experiments/shadow.cpp
)

# Links `target`, which compiles RANKD_ENGINE_PLAN_SOURCES, with what they use: RE2 (regex
# predicates, schema patterns), OpenSSL's libcrypto (SHA-256), toml++ (the registry) and valijson
# (the plan JSON Schema; header-only).
function(rankd_link_engine_plan_dependencies target)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(RE2 REQUIRED IMPORTED_TARGET re2)
  find_package(OpenSSL REQUIRED)
  find_package(tomlplusplus REQUIRED)
  find_path(VALIJSON_INCLUDE_DIR valijson/validation_visitor.hpp REQUIRED)
  target_include_directories(${target} SYSTEM PRIVATE ${VALIJSON_INCLUDE_DIR})
  target_link_libraries(${target} PRIVATE PkgConfig::RE2 OpenSSL::Crypto tomlplusplus::tomlplusplus)
endfunction()

# Writes ${out_dir}/plan_schema_text.cpp, which defines rankd::engine::PlanSchemaText() as the
# text of schema/plan.v1.schema.json, so the engine does not read the repository at run time.
# Configuring again picks up a changed schema.
function(rankd_embed_plan_schema schema_file out_dir out_var)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${schema_file})
  file(READ ${schema_file} PLAN_SCHEMA_TEXT)
  string(FIND "${PLAN_SCHEMA_TEXT}" ")plan_schema\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${schema_file} contains the raw string delimiter of plan_schema_text.cpp")
  endif()
  configure_file(${RANKD_ENGINE_DIR}/schema/plan_schema_text.cpp.in
                 ${out_dir}/plan_schema_text.cpp @ONLY)
  set(${out_var} ${out_dir}/plan_schema_text.cpp PARENT_SCOPE)
endfunction()
