# The engine's folders as layers, bottom-up (docs/engine.md, "Layers"): each folder is a static
# library of its own sources, which may include its own headers and those of the layers it names
# in DEPS (and, through them, theirs): nothing above it. A layer may name only layers declared
# before it, so the libraries form no cycle; and each library's include root holds its own folder
# only, so an include of a folder it does not depend on is "No such file" when it compiles
# (tests/engine/layers proves it, and check_layers.py there reads the table at the bottom).
#
# Shared by src/engine/CMakeLists.txt and fuzz/CMakeLists.txt. The caller sets
#   RANKD_ENGINE_PREFIX          the layers' target prefix (rankd_engine, rankd_engine_fuzzed)
#   RANKD_RUNTIME, RANKD_REDIS   the targets standing for the runtime and redis components
#   RANKD_DEBUG_CHECK            the target defining RANKD_D_ASSERT's failure function only
#   RANKD_ENGINE_FLAGS_PUBLIC    (optional) a target every layer and its users link with
#   RANKD_ENGINE_FLAGS_PRIVATE   (optional) a target every layer compiles with
#   RANKD_PLAN_SCHEMA            the plan JSON Schema built into the schema layer
set(RANKD_ENGINE_DIR ${CMAKE_CURRENT_LIST_DIR})

find_package(PkgConfig REQUIRED)
pkg_check_modules(RE2 REQUIRED IMPORTED_TARGET re2)
find_package(OpenSSL REQUIRED)
find_package(tomlplusplus REQUIRED)
# valijson (the plan JSON Schema; header-only).
find_path(VALIJSON_INCLUDE_DIR valijson/validation_visitor.hpp REQUIRED)
if(NOT TARGET rankd_valijson)
  add_library(rankd_valijson INTERFACE)
  target_include_directories(rankd_valijson SYSTEM INTERFACE ${VALIJSON_INCLUDE_DIR})
endif()

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

# rankd_engine_layer(<folder> [DEPS <layers below>...] [PUBLIC <targets>...]
#                    [PRIVATE <targets>...] [SOURCES <generated sources>...])
function(rankd_engine_layer folder)
  cmake_parse_arguments(PARSE_ARGV 1 L "" "" "DEPS;PUBLIC;PRIVATE;SOURCES")
  set(target ${RANKD_ENGINE_PREFIX}_${folder})
  set(deps)
  foreach(dep IN LISTS L_DEPS)
    if(NOT TARGET ${RANKD_ENGINE_PREFIX}_${dep})
      message(FATAL_ERROR "engine layer ${folder}: ${dep} is not a layer declared below it")
    endif()
    list(APPEND deps ${RANKD_ENGINE_PREFIX}_${dep})
  endforeach()
  # A folder's sources are its .cpp files: where a file lives decides its layer.
  file(GLOB sources CONFIGURE_DEPENDS ${RANKD_ENGINE_DIR}/${folder}/*.cpp)
  add_library(${target} STATIC ${sources} ${L_SOURCES})
  # The include root, made at configure time: <root>/<folder> -> src/engine/<folder> (private
  # headers, "json/value.h") and <root>/rankd/engine/<folder> -> include/rankd/engine/<folder>
  # (public headers). src/engine and src/engine/include are include roots of no layer.
  set(root ${CMAKE_CURRENT_BINARY_DIR}/engine_layers/${folder})
  file(REMOVE_RECURSE ${root})
  file(MAKE_DIRECTORY ${root}/rankd/engine)
  file(CREATE_LINK ${RANKD_ENGINE_DIR}/${folder} ${root}/${folder} SYMBOLIC)
  if(IS_DIRECTORY ${RANKD_ENGINE_DIR}/include/rankd/engine/${folder})
    file(CREATE_LINK ${RANKD_ENGINE_DIR}/include/rankd/engine/${folder}
         ${root}/rankd/engine/${folder} SYMBOLIC)
  endif()
  target_include_directories(${target} PUBLIC ${root})
  target_link_libraries(${target} PUBLIC ${deps} ${L_PUBLIC} ${RANKD_ENGINE_FLAGS_PUBLIC}
                        PRIVATE ${L_PRIVATE} ${RANKD_ENGINE_FLAGS_PRIVATE})
  target_compile_features(${target} PUBLIC cxx_std_23)
  # No fused multiply-add: the VM's results are those of scalar IEEE-754 operations in the tree's
  # order (vm/program.h), and tree models sum as the libraries do (docs/models.md). (ISO C++
  # modes already keep the compiler from contracting; this says so, and holds under -march.)
  target_compile_options(${target} PRIVATE -ffp-contract=off)
endfunction()

# Fails the configure when `target` links, directly or through the libraries it links, any of
# the targets named after it.
function(rankd_assert_not_in_link_closure target)
  set(seen)
  set(todo ${target})
  while(todo)
    list(POP_FRONT todo t)
    if(t IN_LIST seen OR NOT TARGET ${t})
      continue()
    endif()
    list(APPEND seen ${t})
    if(t IN_LIST ARGN)
      message(FATAL_ERROR "${target} links ${t}: plan loading must link without it")
    endif()
    get_target_property(type ${t} TYPE)
    set(libs)
    if(NOT type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(direct ${t} LINK_LIBRARIES)
      if(direct)
        list(APPEND libs ${direct})
      endif()
    endif()
    get_target_property(iface ${t} INTERFACE_LINK_LIBRARIES)
    if(iface)
      list(APPEND libs ${iface})
    endif()
    foreach(lib IN LISTS libs)
      string(REGEX REPLACE "^\\$<LINK_ONLY:(.+)>$" "\\1" lib "${lib}")
      list(APPEND todo ${lib})
    endforeach()
  endwhile()
endfunction()

rankd_embed_plan_schema(${RANKD_PLAN_SCHEMA} ${CMAKE_CURRENT_BINARY_DIR}/generated plan_schema_cpp)

# The layers, bottom-up. Keep each call starting a line with `rankd_engine_layer(`:
# tests/engine/layers/check_layers.py reads the DEPS from here.
#                 folder      layers below it that it includes         other targets
rankd_engine_layer(problems)
rankd_engine_layer(json        DEPS problems                             PRIVATE OpenSSL::Crypto ${RANKD_DEBUG_CHECK})
rankd_engine_layer(schema      DEPS json                                 PRIVATE PkgConfig::RE2 rankd_valijson
                               SOURCES ${plan_schema_cpp})
rankd_engine_layer(values      DEPS json)
rankd_engine_layer(models      DEPS json                                 PRIVATE ${RANKD_DEBUG_CHECK})
rankd_engine_layer(registry    DEPS json models problems values          PRIVATE tomlplusplus::tomlplusplus)
rankd_engine_layer(plan        DEPS json problems registry schema values PUBLIC PkgConfig::RE2
                   PRIVATE ${RANKD_DEBUG_CHECK})
rankd_engine_layer(store       DEPS json models plan problems registry)
# ^ plan loading: none of the layers above links the runtime, redis or net.
rankd_engine_layer(columns     DEPS values                               PUBLIC ${RANKD_DEBUG_CHECK})
rankd_engine_layer(vm          DEPS columns models plan registry values  PRIVATE PkgConfig::RE2)
rankd_engine_layer(ops         DEPS columns plan vm                      PUBLIC ${RANKD_RUNTIME})
rankd_engine_layer(sources     DEPS columns registry values              PUBLIC ${RANKD_REDIS} ${RANKD_RUNTIME})
rankd_engine_layer(exec        DEPS columns ops plan problems registry sources store vm
                               PUBLIC ${RANKD_REDIS} ${RANKD_RUNTIME})
rankd_engine_layer(api         DEPS columns exec json ops plan problems sources store values vm
                               PUBLIC ${RANKD_RUNTIME})
rankd_engine_layer(experiments DEPS api exec json plan sources values
                               PUBLIC ${RANKD_REDIS} ${RANKD_RUNTIME})

# Plan loading links without the runtime: the link closure of the store layer holds none of it.
rankd_assert_not_in_link_closure(${RANKD_ENGINE_PREFIX}_store ${RANKD_RUNTIME} ${RANKD_REDIS})
