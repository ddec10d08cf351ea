// The home feed: recent media from the accounts the viewer follows, scored by
// engagement and freshness, best 50 first.

import { E, Key, definePlan } from "@rankd/dsl";
import { feedCandidates } from "./feed_candidates";

export default definePlan({
  name: "feed",
  params: {
    like_weight: 0.5,
    recency_weight: 0.05,
    min_score: 0.0,
    blocklist_regex: "[^\\s\\S]",
  },
  budgets: { max_rows_per_node: 5_000, max_redis_commands: 1_500 },
  build(ctx) {
    const hydrated = feedCandidates(ctx);

    // score = ctr + like_weight * log1p(likes) - recency_weight * age_hours, missing values as 0
    const score = E.coalesce(Key.ctr, 0)
      .add(ctx.param("like_weight").mul(E.coalesce(Key.likes, 0).log1p()))
      .sub(ctx.param("recency_weight").mul(E.coalesce(Key.age_hours, 0)));
    const scored = hydrated.vm("final_score", score, { id: "score", label: "engagement minus staleness" });

    const kept = scored.filter(
      Key.final_score.ge(ctx.param("min_score")).and(Key.title.matches(ctx.param("blocklist_regex")).not()),
      { id: "quality" },
    );
    return kept.topk("final_score", 50, { id: "top" });
  },
});
