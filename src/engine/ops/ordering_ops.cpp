// sort, topk, dedupe and diversify: ops that reorder or drop rows by a key, producing a new
// selection.
//
// Each gathers the key of every row it orders into a flat array of (key, row) pairs first, so
// comparisons read neighbouring memory instead of chasing the selection into the column.
#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

#include "ops/value_index.h"
#include "rankd/engine/ops/cpu_ops.h"
#include "rankd/runtime/debug_check.h"

namespace rankd::engine {
namespace {

template <class T>
struct Keyed {
  T key;
  std::uint32_t row;    // physical row
  std::uint32_t index;  // logical position in the input (ties keep it)
};

template <class T>
const T* ValuesOf(const Column& column) {
  if constexpr (std::is_same_v<T, std::int64_t>) {
    return column.ints();
  } else if constexpr (std::is_same_v<T, double>) {
    return column.floats();
  } else if constexpr (std::is_same_v<T, std::uint8_t>) {
    return column.bools();
  } else {
    return column.strings();
  }
}

template <class T>
bool Less(const T& a, const T& b) noexcept {
  if constexpr (std::is_same_v<T, StringRef>) {
    return a.view() < b.view();  // byte-wise
  } else {
    return a < b;
  }
}

// Splits the input's rows into those with a value of `column` (gathered with their keys, in
// input order) and those without (their physical rows, in input order).
template <class T>
void Gather(const CandidateSet& in, const Column& column, std::vector<Keyed<T>>* keyed,
            std::vector<std::uint32_t>* nulls) {
  const T* values = ValuesOf<T>(column);
  const std::size_t n = in.size();
  keyed->reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t row = in.row(i);
    if (column.valid(row)) {
      keyed->push_back(Keyed<T>{values[row], row, static_cast<std::uint32_t>(i)});
    } else {
      nulls->push_back(row);
    }
  }
}

CandidateSet* WithRows(const CandidateSet& in, const std::vector<std::uint32_t>& rows,
                       Arena& arena) {
  std::uint32_t* selection = arena.Allocate<std::uint32_t>(std::max<std::size_t>(rows.size(), 1));
  std::copy(rows.begin(), rows.end(), selection);
  CandidateSet* out = CandidateSet::CopyOf(arena, in);
  out->set_selection(selection, rows.size());
  return out;
}

// The input's rows in order: what ordering by a key no row has gives.
CandidateSet* Unchanged(const CandidateSet& in, Arena& arena) {
  return CandidateSet::CopyOf(arena, in);
}

template <class T>
CandidateSet* SortBy(const CandidateSet& in, const Column& column, SortOrder order, Arena& arena) {
  std::vector<Keyed<T>> keyed;
  std::vector<std::uint32_t> rows;
  Gather(in, column, &keyed, &rows);
  if (order == SortOrder::kAsc) {
    std::stable_sort(keyed.begin(), keyed.end(),
                     [](const Keyed<T>& a, const Keyed<T>& b) { return Less(a.key, b.key); });
  } else {
    std::stable_sort(keyed.begin(), keyed.end(),
                     [](const Keyed<T>& a, const Keyed<T>& b) { return Less(b.key, a.key); });
  }
  std::vector<std::uint32_t> sorted;
  sorted.reserve(in.size());
  for (const Keyed<T>& k : keyed) sorted.push_back(k.row);
  sorted.insert(sorted.end(), rows.begin(), rows.end());  // nulls last
  return WithRows(in, sorted, arena);
}

// a ranks before b: a higher key, or an equal key earlier in the input.
template <class T>
bool Ranks(const Keyed<T>& a, const Keyed<T>& b) noexcept {
  return a.key > b.key || (a.key == b.key && a.index < b.index);
}

template <class T>
CandidateSet* TopkBy(const CandidateSet& in, const Column& column, std::size_t k, Arena& arena) {
  std::vector<Keyed<T>> keyed;
  std::vector<std::uint32_t> nulls;
  Gather(in, column, &keyed, &nulls);
  std::vector<Keyed<T>> best;
  if (keyed.size() <= k) {
    best = std::move(keyed);
  } else {
    // A heap of the k best so far with the one that ranks last on top: an element that does not
    // beat it is out at the cost of one comparison.
    const auto last_on_top = [](const Keyed<T>& a, const Keyed<T>& b) { return Ranks(a, b); };
    best.assign(keyed.begin(), keyed.begin() + static_cast<std::ptrdiff_t>(k));
    std::make_heap(best.begin(), best.end(), last_on_top);
    for (std::size_t i = k; i < keyed.size(); ++i) {
      if (!Ranks(keyed[i], best.front())) continue;
      std::pop_heap(best.begin(), best.end(), last_on_top);
      best.back() = keyed[i];
      std::push_heap(best.begin(), best.end(), last_on_top);
    }
  }
  std::sort(best.begin(), best.end(),
            [](const Keyed<T>& a, const Keyed<T>& b) { return Ranks(a, b); });
  std::vector<std::uint32_t> rows;
  rows.reserve(std::min(k, in.size()));
  for (const Keyed<T>& e : best) rows.push_back(e.row);
  for (std::size_t i = 0; i < nulls.size() && rows.size() < k; ++i) rows.push_back(nulls[i]);
  return WithRows(in, rows, arena);
}

// Hashing a key as dedupe compares it: floats by value (-0.0 is 0.0).
template <class T>
struct DedupeKey {
  using Type = T;
  static T Of(const T& v) noexcept { return v; }
};
template <>
struct DedupeKey<double> {
  using Type = double;
  static double Of(double v) noexcept { return v == 0.0 ? 0.0 : v; }
};
template <>
struct DedupeKey<StringRef> {
  using Type = std::string_view;
  static std::string_view Of(const StringRef& v) noexcept { return v.view(); }
};

template <class T>
CandidateSet* DedupeBy(const CandidateSet& in, const Column& column, Arena& arena) {
  const T* values = ValuesOf<T>(column);
  ValueIndex<typename DedupeKey<T>::Type> seen(in.size());
  bool seen_null = false;
  std::vector<std::uint32_t> rows;
  rows.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    const std::uint32_t row = in.row(i);
    bool first;
    if (!column.valid(row)) {
      first = !seen_null;
      seen_null = true;
    } else {
      const auto position = static_cast<std::uint32_t>(i);
      first = seen.FindOrAdd(DedupeKey<T>::Of(values[row]), position) == position;
    }
    if (first) rows.push_back(row);
  }
  return WithRows(in, rows, arena);
}

// diversify's greedy re-rank (docs/plan-format.md, "diversify"): at each rank, the earliest
// remaining row whose `by` value has fewer than `max` rows among the `window` - 1 rows placed
// last (a null value is never limited), else the earliest remaining row. The rows are grouped by
// value, each group a queue in input order; the fronts of the groups under the limit and of those
// at it are kept in two ordered sets, so each rank costs O(log n).
template <class T>
CandidateSet* DiversifyBy(const CandidateSet& in, const Column& column, std::size_t max,
                          std::size_t window, Arena& arena) {
  const T* values = ValuesOf<T>(column);
  const std::size_t n = in.size();
  constexpr std::uint32_t kNullGroup = 0;  // never counted: always under the limit
  // Each position's group (its value's number, 0 for null), then the groups' positions in
  // order, one after the other (group g's are at first[g] .. first[g + 1]).
  ValueIndex<typename DedupeKey<T>::Type> group_of_value(n);
  std::vector<std::uint32_t> group_of(n);
  std::uint32_t groups = 1;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t row = in.row(i);
    if (!column.valid(row)) {
      group_of[i] = kNullGroup;
    } else {
      group_of[i] = group_of_value.FindOrAdd(DedupeKey<T>::Of(values[row]), groups);
      if (group_of[i] == groups) ++groups;
    }
  }
  std::vector<std::uint32_t> first(groups + 1, 0);
  for (std::size_t i = 0; i < n; ++i) ++first[group_of[i] + 1];
  for (std::uint32_t g = 0; g < groups; ++g) first[g + 1] += first[g];
  std::vector<std::uint32_t> positions(n);
  std::vector<std::uint32_t> next(first.begin(), first.end() - 1);  // each group's front
  for (std::size_t i = 0; i < n; ++i)
    positions[next[group_of[i]]++] = static_cast<std::uint32_t>(i);
  std::copy(first.begin(), first.end() - 1, next.begin());
  std::vector<std::size_t> count(groups, 0);  // its rows in the window
  // The fronts of the groups with rows left, under the limit or at it: min-heaps of (front
  // position, group), packed in one integer (the position in the high half), whose stale entries
  // (a group since moved or advanced) are dropped when they reach the top. A group's live entry
  // is in the heap `where[g]` names.
  enum : std::uint8_t { kNowhere, kUnder, kAt };
  std::vector<std::uint8_t> where(groups, kNowhere);
  using Entry = std::uint64_t;
  const auto entry = [](std::uint32_t front, std::uint32_t g) {
    return std::uint64_t{front} << 32 | g;
  };
  std::vector<Entry> under, at;
  under.reserve(2 * n + groups);
  at.reserve(2 * n + groups);
  const auto file = [&](std::uint32_t g) {  // files g's front in the heap its count says
    if (next[g] == first[g + 1]) {
      where[g] = kNowhere;
      return;
    }
    const bool is_under = g == kNullGroup || count[g] < max;
    where[g] = is_under ? kUnder : kAt;
    std::vector<Entry>& heap = is_under ? under : at;
    heap.push_back(entry(positions[next[g]], g));
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
  };
  // The group of the live top of `heap`, taken off it (stale entries dropped on the way), or
  // kNone.
  constexpr std::uint32_t kNone = UINT32_MAX;
  const auto take = [&](std::vector<Entry>& heap, std::uint8_t which) -> std::uint32_t {
    while (!heap.empty()) {
      const auto g = static_cast<std::uint32_t>(heap.front());
      const auto front = static_cast<std::uint32_t>(heap.front() >> 32);
      std::pop_heap(heap.begin(), heap.end(), std::greater<>());
      heap.pop_back();
      if (where[g] == which && next[g] < first[g + 1] && positions[next[g]] == front) return g;
    }
    return kNone;
  };
  for (std::uint32_t g = 0; g < groups; ++g) file(g);
  std::vector<std::uint32_t> placed;  // positions, in their new order
  placed.reserve(n);
  while (placed.size() < n) {
    std::uint32_t g = take(under, kUnder);
    if (g == kNone) g = take(at, kAt);
    RANKD_D_ASSERT(g != kNone);
    placed.push_back(positions[next[g]++]);
    if (g != kNullGroup) ++count[g];
    file(g);
    // The row `window` - 1 ranks back leaves the window of the next rank.
    if (placed.size() >= window) {
      const std::uint32_t leaving = group_of[placed[placed.size() - window]];
      if (leaving != kNullGroup) {
        --count[leaving];
        if (where[leaving] == kAt && count[leaving] < max) file(leaving);
      }
    }
  }
  std::vector<std::uint32_t> rows(placed.size());
  for (std::size_t i = 0; i < placed.size(); ++i) rows[i] = in.row(placed[i]);
  return WithRows(in, rows, arena);
}

// decay's multipliers over `sorted` (its rows in `by`'s descending order): 1 for a group's
// first row, the previous row's times `factor` for each later one, 1 for a null group.
template <class T>
void DecayMultipliers(const CandidateSet& sorted, const Column& group, double factor,
                      double* multiplier) {
  const T* values = ValuesOf<T>(group);
  ValueIndex<typename DedupeKey<T>::Type> group_of_value(sorted.size());
  std::vector<double> last;  // per group: its last row's multiplier
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    const std::uint32_t row = sorted.row(i);
    if (!group.valid(row)) {
      multiplier[i] = 1.0;
      continue;
    }
    const auto number = static_cast<std::uint32_t>(last.size());
    const std::uint32_t g = group_of_value.FindOrAdd(DedupeKey<T>::Of(values[row]), number);
    if (g == number) {
      last.push_back(1.0);
    } else {
      last[g] *= factor;
    }
    multiplier[i] = last[g];
  }
}

template <template <class> class F, class... Args>
CandidateSet* ByType(const Column& column, Args&&... args) {
  switch (column.type()) {
    case ValueType::kInt:
      return F<std::int64_t>::Run(column, std::forward<Args>(args)...);
    case ValueType::kFloat:
      return F<double>::Run(column, std::forward<Args>(args)...);
    case ValueType::kBool:
      return F<std::uint8_t>::Run(column, std::forward<Args>(args)...);
    case ValueType::kString:
      return F<StringRef>::Run(column, std::forward<Args>(args)...);
  }
  return nullptr;
}

template <class T>
struct SortRunner {
  static CandidateSet* Run(const Column& c, const CandidateSet& in, SortOrder o, Arena& a) {
    return SortBy<T>(in, c, o, a);
  }
};
template <class T>
struct DedupeRunner {
  static CandidateSet* Run(const Column& c, const CandidateSet& in, Arena& a) {
    return DedupeBy<T>(in, c, a);
  }
};

template <class T>
struct DiversifyRunner {
  static CandidateSet* Run(const Column& c, const CandidateSet& in, std::size_t max,
                           std::size_t window, Arena& a) {
    return DiversifyBy<T>(in, c, max, window, a);
  }
};

}  // namespace

CandidateSet* RunSort(const CandidateSet& in, std::size_t by, SortOrder order, Arena& arena) {
  const Column* column = in.column(by);
  if (column == nullptr) return Unchanged(in, arena);  // every key null: the order stands
  return ByType<SortRunner>(*column, in, order, arena);
}

CandidateSet* RunTopk(const CandidateSet& in, std::size_t by, std::size_t k, Arena& arena) {
  const Column* column = in.column(by);
  if (column == nullptr) return RunTake(in, k, arena);  // every key null: input order
  switch (column->type()) {
    case ValueType::kInt:
      return TopkBy<std::int64_t>(in, *column, k, arena);
    case ValueType::kFloat:
      return TopkBy<double>(in, *column, k, arena);
    case ValueType::kBool:
    case ValueType::kString:
      break;
  }
  throw std::invalid_argument("topk ranks by a numeric key");
}

CandidateSet* RunDedupe(const CandidateSet& in, std::size_t by, Arena& arena) {
  const Column* column = in.column(by);
  if (column == nullptr) return RunTake(in, in.empty() ? 0 : 1, arena);  // all null: one value
  return ByType<DedupeRunner>(*column, in, arena);
}

CandidateSet* RunDecay(const CandidateSet& in, std::size_t by, std::size_t group, double factor,
                       std::size_t out_slot, Arena& arena) {
  const CandidateSet* sorted = RunSort(in, by, SortOrder::kDesc, arena);
  const std::size_t n = sorted->size();
  std::vector<double> multiplier(n, 1.0);
  if (const Column* g = sorted->column(group); g != nullptr) {
    switch (g->type()) {
      case ValueType::kInt:
        DecayMultipliers<std::int64_t>(*sorted, *g, factor, multiplier.data());
        break;
      case ValueType::kFloat:
        DecayMultipliers<double>(*sorted, *g, factor, multiplier.data());
        break;
      case ValueType::kBool:
        DecayMultipliers<std::uint8_t>(*sorted, *g, factor, multiplier.data());
        break;
      case ValueType::kString:
        DecayMultipliers<StringRef>(*sorted, *g, factor, multiplier.data());
        break;
    }
  }
  Column* out = Column::Make(arena, ValueType::kFloat, sorted->physical_rows());
  if (const Column* score = sorted->column(by); score != nullptr) {
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t row = sorted->row(i);
      if (!score->valid(row)) continue;
      const double value = score->type() == ValueType::kInt
                               ? static_cast<double>(score->ints()[row])
                               : score->floats()[row];
      out->floats()[row] = value * multiplier[i];
      out->set_valid(row);
    }
  }
  CandidateSet* scored = CandidateSet::CopyOf(arena, *sorted);
  scored->set_column(out_slot, out);
  return RunSort(*scored, out_slot, SortOrder::kDesc, arena);
}

CandidateSet* RunDiversify(const CandidateSet& in, std::size_t by, std::size_t max_per_window,
                           std::size_t window, Arena& arena) {
  const Column* column = in.column(by);
  if (column == nullptr) return Unchanged(in, arena);  // every key null: never limited
  return ByType<DiversifyRunner>(*column, in, max_per_window, window, arena);
}

}  // namespace rankd::engine
