// The home feed's freshness experiment: the feed plan's candidates and features, scored with
// ten times its weight on staleness, so recent media rise. The demo's `home` surface splits
// viewers between it and feed (docs/experiments.md).

import { E, Key, definePlan } from "@rankd/dsl";
import { feedCandidates } from "./feed_candidates";

export default definePlan({
  name: "feed_fresh",
  params: {
    like_weight: 0.5,
    recency_weight: 0.5,
    min_score: -1000.0,
    blocklist_regex: "[^\\s\\S]",
  },
  budgets: { max_rows_per_node: 5_000, max_redis_commands: 1_500 },
  build(ctx) {
    const hydrated = feedCandidates(ctx);

    // score = ctr + like_weight * log1p(likes) - recency_weight * age_hours, missing values as 0
    const score = E.coalesce(Key.ctr, 0)
      .add(ctx.param("like_weight").mul(E.coalesce(Key.likes, 0).log1p()))
      .sub(ctx.param("recency_weight").mul(E.coalesce(Key.age_hours, 0)));
    const scored = hydrated.vm("final_score", score, { id: "score", label: "engagement minus 10x staleness" });

    const kept = scored.filter(
      Key.final_score.ge(ctx.param("min_score")).and(Key.title.matches(ctx.param("blocklist_regex")).not()),
      { id: "quality" },
    );
    return kept.topk("final_score", 50, { id: "top" });
  },
});
