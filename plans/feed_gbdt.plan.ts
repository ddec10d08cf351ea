// The home feed ranked by a tree model: feed's candidates (recent media from
// the accounts the viewer follows) scored by the feed_ctr LightGBM model's
// click probability from their ctr, likes and age, best 50 first.

import { E, Key, definePlan } from "@rankd/dsl";
import { feedCandidates } from "./feed_candidates";

export default definePlan({
  name: "feed_gbdt",
  params: {
    blocklist_regex: "[^\\s\\S]",
  },
  budgets: { max_rows_per_node: 5_000, max_redis_commands: 1_500 },
  build(ctx) {
    const hydrated = feedCandidates(ctx);

    // The model reads ctr, likes and age_hours (registry/models.toml); a missing value is the model's to handle.
    const scored = hydrated.vm("final_score", E.model("feed_ctr"), { id: "score", label: "feed_ctr click probability" });

    const kept = scored.filter(Key.title.matches(ctx.param("blocklist_regex")).not(), { id: "quality" });
    return kept.topk("final_score", 50, { id: "top" });
  },
});
