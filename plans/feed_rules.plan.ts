// The home feed with the rules ranking engineers change every week: what the viewer was already
// shown is dropped before its features are fetched, no author has more than one item in any three
// ranks, and every fifth rank goes to the newest item of a creator the viewer is recommended.

import { E, Key, definePlan } from "@rankd/dsl";

const FEATURES = ["author_id", "age_hours", "likes", "ctr", "title"] as const;

export default definePlan({
  name: "feed_rules",
  params: {
    like_weight: 0.5,
    recency_weight: 0.05,
  },
  budgets: { max_rows_per_node: 5_000, max_redis_commands: 1_500 },
  build(ctx) {
    // score = ctr + like_weight * log1p(likes) - recency_weight * age_hours, missing values as 0
    const score = E.coalesce(Key.ctr, 0)
      .add(ctx.param("like_weight").mul(E.coalesce(Key.likes, 0).log1p()))
      .sub(ctx.param("recency_weight").mul(E.coalesce(Key.age_hours, 0)));
    const viewer = ctx.viewer();

    // Organic: the followed accounts' recent media the viewer has not been shown, best first,
    // at most one item per author in any three consecutive ranks.
    const organic = viewer
      .follow({ fanout: 100 })
      .media({ fanout: 10 })
      .excludeSeen("seen", { id: "unseen", label: "not shown before" })
      .fetchFeatures("media_features", [...FEATURES], { id: "features" })
      .vm("final_score", score, { id: "score", label: "engagement minus staleness" })
      .topk("final_score", 200, { id: "ranked" })
      .diversify("author_id", { maxPerWindow: 1, window: 3 }, { id: "diverse" });

    // Discovery: the newest item of each recommended creator not shown before, best first.
    const discovery = viewer
      .recommendation({ fanout: 20 })
      .media({ fanout: 1 })
      .excludeSeen("seen", { id: "discovery_unseen" })
      .fetchFeatures("media_features", [...FEATURES], { id: "discovery_features" })
      .vm("final_score", score, { id: "discovery_score" })
      .topk("final_score", 10, { id: "discovery" });

    return organic
      .insert(discovery, { every: 5, maxInserted: 10 }, { id: "mixed", label: "a discovery every 5th rank" })
      .take(50, { id: "top" });
  },
});
