// The feed plan's scoring on one thread (make bench-engine; bench/scripts/engine_bench.py runs
// it): the score expression of plans/feed.plan.ts written to final_score, its filter
// (final_score >= min_score and not title ~ blocklist_regex) and topk(final_score, 50), over N
// synthetic media rows with 10% nulls in each input column, computed three ways:
//
//   vm         the engine: the plan's expression and predicate (dsl/test/golden/feed.json, loaded
//              against registry/) compiled by the VM, run by RunVm, RunFilter and RunTopk over
//              columns in an arena, as a request runs them;
//   tree_walk  the tests' row-at-a-time interpreter (tests/engine/tree_walk.h) for the score and
//              the filter, then the same RunTopk;
//   hand       the floor: one fused loop over plain arrays (values plus a validity byte each),
//              the same float64 operations in the same order, the same RE2 search (RE2::Match,
//              unanchored, no submatches, as the VM calls it) on the titles of the rows that
//              pass the score (as the engine's filter does), and a heap of 50.
//
// Usage:
//   rankd_feed_bench --rows N --check [--csv FILE]   every variant once; their top-50 ids must
//                                                    agree (exit 1 if not); prints them as JSON;
//                                                    --csv writes the rows for DuckDB
//   rankd_feed_bench --rows N --variant vm|tree_walk|hand [--min_ms 300] [--min_iters 3]
//                    times one variant: one warm-up run, then runs until both minimums are
//                    met; prints JSON with each run's nanoseconds and the median per row
//
// The rows are the same for a given N in every process (a fixed seed): id 1..N; ctr uniform in
// [0, 0.3); likes log-uniform in [0, 100000); age_hours uniform in [0, 96); title one of 1,000
// short strings; each of ctr, likes, age_hours and title null with probability 0.1, on its own.
#include <re2/re2.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "rankd/engine/columns/arena.h"
#include "rankd/engine/columns/candidates.h"
#include "rankd/engine/columns/column.h"
#include "rankd/engine/ops/cpu_ops.h"
#include "rankd/engine/plan/plan.h"
#include "rankd/engine/registry/registry.h"
#include "rankd/engine/store/plan_store.h"
#include "rankd/engine/vm/program.h"
#include "tree_walk.h"

namespace {

using namespace rankd::engine;

constexpr std::size_t kTopK = 50;
constexpr int kNullPercent = 10;
constexpr std::size_t kTitles = 1000;

// The input rows, as plain arrays (the hand loop reads these) and as engine columns in an arena
// (the vm and the tree walk read those); both hold the same values.
struct Data {
  std::size_t n = 0;
  std::vector<std::int64_t> id;
  std::vector<double> ctr, age;
  std::vector<std::int64_t> likes;
  std::vector<std::uint32_t> title;  // an index into titles
  std::vector<std::uint8_t> ctr_ok, likes_ok, age_ok, title_ok;
  std::vector<std::string> titles;
};

Data MakeData(std::size_t n) {
  Data d;
  d.n = n;
  std::mt19937_64 rng(0xfeed'2026);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const auto null = [&] { return rng() % 100 < static_cast<std::uint64_t>(kNullPercent); };
  static const char* kWords[] = {"sunset", "city",   "cat",    "recipe", "trip",  "game",
                                 "music",  "street", "garden", "coffee", "beach", "night"};
  for (std::size_t t = 0; t < kTitles; ++t) {
    d.titles.push_back(std::string(kWords[t % 12]) + " " + kWords[(t / 12) % 12] + " " +
                       std::to_string(t));
  }
  d.id.resize(n);
  d.ctr.resize(n);
  d.age.resize(n);
  d.likes.resize(n);
  d.title.resize(n);
  d.ctr_ok.resize(n);
  d.likes_ok.resize(n);
  d.age_ok.resize(n);
  d.title_ok.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    d.id[i] = static_cast<std::int64_t>(i + 1);
    d.ctr_ok[i] = !null();
    d.ctr[i] = d.ctr_ok[i] ? 0.3 * unit(rng) : 0.0;
    d.likes_ok[i] = !null();
    d.likes[i] =
        d.likes_ok[i] ? static_cast<std::int64_t>(std::exp(unit(rng) * std::log(1e5))) - 1 : 0;
    d.age_ok[i] = !null();
    d.age[i] = d.age_ok[i] ? 96.0 * unit(rng) : 0.0;
    d.title_ok[i] = !null();
    d.title[i] = d.title_ok[i] ? static_cast<std::uint32_t>(rng() % kTitles) : 0;
  }
  return d;
}

void WriteCsv(const Data& d, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) throw std::runtime_error("cannot write " + path);
  std::fputs("id,ctr,likes,age_hours,title\n", f);
  for (std::size_t i = 0; i < d.n; ++i) {
    std::fprintf(f, "%lld,", static_cast<long long>(d.id[i]));
    if (d.ctr_ok[i]) std::fprintf(f, "%.17g", d.ctr[i]);
    std::fputc(',', f);
    if (d.likes_ok[i]) std::fprintf(f, "%lld", static_cast<long long>(d.likes[i]));
    std::fputc(',', f);
    if (d.age_ok[i]) std::fprintf(f, "%.17g", d.age[i]);
    std::fputc(',', f);
    if (d.title_ok[i]) std::fputs(d.titles[d.title[i]].c_str(), f);
    std::fputc('\n', f);
  }
  std::fclose(f);
}

// The feed plan, its compiled score and filter, and the rows as a candidate set.
struct Engine {
  std::shared_ptr<const Registry> registry;
  std::shared_ptr<const Plan> plan;
  const Expr* score = nullptr;
  const Pred* filter = nullptr;
  std::shared_ptr<const Program> score_program, filter_program;
  ParamBinding binding;
  std::size_t score_slot = 0;
  Arena arena{1 << 20};
  CandidateSet* rows = nullptr;
};

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void SetUp(Engine& e, const Data& d) {
  const std::filesystem::path root(RANKD_SOURCE_DIR);
  e.registry = LoadRegistry(root / "registry");
  const std::filesystem::path file = root / "dsl/test/golden/feed.json";
  e.plan = LoadPlan(ReadFile(file), file.string(), *e.registry);
  const Node* vm = e.plan->FindNode("score");
  const Node* quality = e.plan->FindNode("quality");
  const Node* top = e.plan->FindNode("top");
  if (vm == nullptr || quality == nullptr || top == nullptr || top->params.k != kTopK)
    throw std::runtime_error("feed.json is not the plan this benchmark expects");
  e.score = &e.plan->exprs.at(vm->params.expr);
  e.filter = &e.plan->preds.at(quality->params.pred);
  e.score_program = CompileExpr(*e.score, *e.registry, e.plan->params);
  e.filter_program = CompilePred(*e.filter, *e.registry, e.plan->params);
  e.binding = ParamBinding::Defaults(e.plan->params);
  e.score_slot = *e.registry->KeySlot(vm->params.out_key);

  const Registry& reg = *e.registry;
  e.rows = CandidateSet::Make(e.arena, reg.keys().size(), d.n);
  Column* id = Column::Make(e.arena, ValueType::kInt, d.n);
  Column* ctr = Column::Make(e.arena, ValueType::kFloat, d.n);
  Column* likes = Column::Make(e.arena, ValueType::kInt, d.n);
  Column* age = Column::Make(e.arena, ValueType::kFloat, d.n);
  Column* title = Column::Make(e.arena, ValueType::kString, d.n);
  std::vector<StringRef> titles;
  for (const std::string& t : d.titles) titles.push_back(StringRef::Of(e.arena.CopyString(t)));
  for (std::size_t i = 0; i < d.n; ++i) {
    id->ints()[i] = d.id[i];
    id->set_valid(i);
    ctr->floats()[i] = d.ctr[i];
    if (d.ctr_ok[i]) ctr->set_valid(i);
    likes->ints()[i] = d.likes[i];
    if (d.likes_ok[i]) likes->set_valid(i);
    age->floats()[i] = d.age[i];
    if (d.age_ok[i]) age->set_valid(i);
    if (d.title_ok[i]) {
      title->strings()[i] = titles[d.title[i]];
      title->set_valid(i);
    }
  }
  e.rows->set_column(reg.id_slot(), id);
  e.rows->set_column(*reg.KeySlot("ctr"), ctr);
  e.rows->set_column(*reg.KeySlot("likes"), likes);
  e.rows->set_column(*reg.KeySlot("age_hours"), age);
  e.rows->set_column(*reg.KeySlot("title"), title);
}

std::vector<std::int64_t> IdsOf(const CandidateSet& set, const Registry& reg) {
  std::vector<std::int64_t> ids;
  const Column* c = set.column(reg.id_slot());
  for (std::size_t i = 0; i < set.size(); ++i) ids.push_back(c->ints()[set.row(i)]);
  return ids;
}

// The engine, as a request runs the plan's three nodes.
std::vector<std::int64_t> RunVmVariant(const Engine& e) {
  Arena arena;
  const CandidateSet* scored =
      RunVm(*e.rows, e.score_slot, ValueType::kFloat, *e.score_program, e.binding, arena);
  const CandidateSet* kept = RunFilter(*scored, *e.filter_program, e.binding, arena);
  const CandidateSet* top = RunTopk(*kept, e.score_slot, kTopK, arena);
  return IdsOf(*top, *e.registry);
}

// The tests' tree walk for the score and the filter, row by row; RunTopk for the top 50.
std::vector<std::int64_t> RunTreeWalkVariant(const Engine& e) {
  Arena arena;
  const std::size_t n = e.rows->size();
  Column* score = Column::Make(arena, ValueType::kFloat, e.rows->physical_rows());
  {
    const rankd::engine::testing::TreeWalk walk(*e.registry, e.plan->params, e.binding, *e.rows);
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t row = e.rows->row(i);
      const Scalar v = walk.Eval(*e.score, row);
      if (std::holds_alternative<double>(v)) {
        score->floats()[row] = std::get<double>(v);
        score->set_valid(row);
      }
    }
  }
  CandidateSet* scored = CandidateSet::CopyOf(arena, *e.rows);
  scored->set_column(e.score_slot, score);
  std::uint32_t* selection = arena.Allocate<std::uint32_t>(std::max<std::size_t>(n, 1));
  std::size_t kept = 0;
  const rankd::engine::testing::TreeWalk walk(*e.registry, e.plan->params, e.binding, *scored);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t row = scored->row(i);
    if (walk.Truth(*e.filter, row) == rankd::engine::testing::TreeWalk::kTrue)
      selection[kept++] = row;
  }
  CandidateSet* filtered = CandidateSet::CopyOf(arena, *scored);
  filtered->set_selection(selection, kept);
  return IdsOf(*RunTopk(*filtered, e.score_slot, kTopK, arena), *e.registry);
}

double ParamFloat(const Engine& e, std::string_view name) {
  for (std::size_t i = 0; i < e.plan->params.size(); ++i) {
    if (e.plan->params[i].name == name) return std::get<double>(e.binding.values[i]);
  }
  throw std::runtime_error("the feed plan has no param " + std::string(name));
}
std::string ParamString(const Engine& e, std::string_view name) {
  for (std::size_t i = 0; i < e.plan->params.size(); ++i) {
    if (e.plan->params[i].name == name) return std::get<std::string>(e.binding.values[i]);
  }
  throw std::runtime_error("the feed plan has no param " + std::string(name));
}

// The floor: what a programmer would write for this one query over plain arrays.
struct Hand {
  double like_weight, recency_weight, min_score;
  std::unique_ptr<re2::RE2> blocklist;
  std::vector<re2::StringPiece> titles;
};

std::vector<std::int64_t> RunHandVariant(const Data& d, const Hand& h) {
  struct Entry {
    double score;
    std::uint32_t row;
  };
  // The heap's top is the worst kept entry: the lowest score, and among equal scores the latest
  // row (topk keeps equal values in input order).
  const auto better = [](const Entry& a, const Entry& b) {
    return a.score > b.score || (a.score == b.score && a.row < b.row);
  };
  std::vector<Entry> heap;
  heap.reserve(kTopK + 1);
  const double* ctr = d.ctr.data();
  const double* age = d.age.data();
  const std::int64_t* likes = d.likes.data();
  const std::uint8_t* ctr_ok = d.ctr_ok.data();
  const std::uint8_t* likes_ok = d.likes_ok.data();
  const std::uint8_t* age_ok = d.age_ok.data();
  const std::uint8_t* title_ok = d.title_ok.data();
  const std::uint32_t* title = d.title.data();
  for (std::size_t i = 0; i < d.n; ++i) {
    const double c = ctr_ok[i] ? ctr[i] : 0.0;
    const double l = likes_ok[i] ? static_cast<double>(likes[i]) : 0.0;
    const double a = age_ok[i] ? age[i] : 0.0;
    const double s = (c + h.like_weight * std::log1p(l)) - h.recency_weight * a;
    if (!std::isfinite(s) || !(s >= h.min_score) || !title_ok[i]) continue;
    const re2::StringPiece t = h.titles[title[i]];
    if (h.blocklist->Match(t, 0, t.size(), re2::RE2::UNANCHORED, nullptr, 0)) continue;
    heap.push_back(Entry{s, static_cast<std::uint32_t>(i)});
    std::push_heap(heap.begin(), heap.end(), better);
    if (heap.size() > kTopK) {
      std::pop_heap(heap.begin(), heap.end(), better);
      heap.pop_back();
    }
  }
  std::sort(heap.begin(), heap.end(), better);
  std::vector<std::int64_t> ids;
  for (const Entry& entry : heap) ids.push_back(d.id[entry.row]);
  return ids;
}

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string Json(const std::vector<std::int64_t>& ids) {
  std::string s = "[";
  for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s + "]";
}

[[noreturn]] void Usage() {
  std::fprintf(stderr,
               "usage: rankd_feed_bench --rows N (--check [--csv FILE] | --variant "
               "vm|tree_walk|hand [--min_ms MS] [--min_iters K])\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t rows = 0;
  std::string variant, csv;
  bool check = false;
  double min_ms = 300;
  int min_iters = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const auto value = [&]() -> const char* {
      if (i + 1 >= argc) Usage();
      return argv[++i];
    };
    if (arg == "--rows") {
      rows = std::strtoull(value(), nullptr, 10);
    } else if (arg == "--variant") {
      variant = value();
    } else if (arg == "--csv") {
      csv = value();
    } else if (arg == "--check") {
      check = true;
    } else if (arg == "--min_ms") {
      min_ms = std::strtod(value(), nullptr);
    } else if (arg == "--min_iters") {
      min_iters = std::atoi(value());
    } else {
      Usage();
    }
  }
  if (rows == 0 || rows > UINT32_MAX || check == !variant.empty()) Usage();

  const Data data = MakeData(rows);
  Engine engine;
  SetUp(engine, data);
  Hand hand{ParamFloat(engine, "like_weight"),
            ParamFloat(engine, "recency_weight"),
            ParamFloat(engine, "min_score"),
            nullptr,
            {}};
  re2::RE2::Options options;
  options.set_log_errors(false);
  hand.blocklist = std::make_unique<re2::RE2>(ParamString(engine, "blocklist_regex"), options);
  for (const std::string& t : data.titles) hand.titles.emplace_back(t);

  const auto run = [&](std::string_view which) {
    if (which == "vm") return RunVmVariant(engine);
    if (which == "tree_walk") return RunTreeWalkVariant(engine);
    if (which == "hand") return RunHandVariant(data, hand);
    Usage();
  };

  if (check) {
    if (!csv.empty()) WriteCsv(data, csv);
    const std::vector<std::int64_t> vm = run("vm"), walk = run("tree_walk"), floor = run("hand");
    const bool same = vm == walk && vm == floor && vm.size() == std::min(kTopK, rows);
    std::printf(
        "{\"rows\": %zu, \"agree\": %s, \"params\": {\"like_weight\": %.17g, \"recency_weight\": "
        "%.17g, \"min_score\": %.17g, \"blocklist_regex\": %s}, \"ids\": {\"vm\": %s, "
        "\"tree_walk\": %s, \"hand\": %s}}\n",
        rows, same ? "true" : "false", hand.like_weight, hand.recency_weight, hand.min_score,
        JsonString(ParamString(engine, "blocklist_regex")).c_str(), Json(vm).c_str(),
        Json(walk).c_str(), Json(floor).c_str());
    return same ? 0 : 1;
  }

  using Clock = std::chrono::steady_clock;
  std::vector<std::int64_t> ids = run(variant);  // warm-up, unmeasured
  std::vector<double> ns;
  const Clock::time_point start = Clock::now();
  while (static_cast<int>(ns.size()) < min_iters ||
         std::chrono::duration<double, std::milli>(Clock::now() - start).count() < min_ms) {
    const Clock::time_point t0 = Clock::now();
    ids = run(variant);
    ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
  }
  std::vector<double> sorted = ns;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted.size() % 2
                            ? sorted[sorted.size() / 2]
                            : (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
  std::string runs = "[";
  for (std::size_t i = 0; i < ns.size(); ++i)
    runs += (i ? "," : "") + std::to_string(static_cast<std::int64_t>(ns[i]));
  runs += "]";
  std::printf(
      "{\"variant\": \"%s\", \"rows\": %zu, \"iterations\": %zu, \"median_ns\": %.0f, "
      "\"ns_per_row\": %.3f, \"rows_per_s\": %.0f, \"runs_ns\": %s, \"ids\": %s}\n",
      variant.c_str(), rows, ns.size(), median, median / static_cast<double>(rows),
      static_cast<double>(rows) / median * 1e9, runs.c_str(), Json(ids).c_str());
  return 0;
}
