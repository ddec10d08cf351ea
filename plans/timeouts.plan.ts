// Timeouts: a plan whose slow steps degrade instead of failing. Feature
// fetching and a slow ranker each have their own deadline and on_error:
// "skip", so a late step passes its input through and the request still answers.

import { E, Key, definePlan } from "@rankd/dsl";

export default definePlan({
  name: "timeouts",
  params: { recency_weight: 0.1 },
  build(ctx) {
    const media = ctx.viewer().follow({ fanout: 20, timeout_ms: 50 }).media({ fanout: 5, timeout_ms: 50 });
    const features = media.fetchFeatures("media_features", ["age_hours", "ctr"], {
      id: "features",
      timeout_ms: 30,
      on_error: "skip",
    });
    const ranked = features
      .sleep(80, { id: "slow_ranker", timeout_ms: 20, on_error: "skip", label: "exceeds its timeout: skipped" })
      .busyCpu(5, { id: "cpu_step", timeout_ms: 100 })
      .vm("final_score", E.coalesce(Key.ctr, 0).sub(ctx.param("recency_weight").mul(E.coalesce(Key.age_hours, 0))), {
        id: "score",
      });
    return ranked.topk("final_score", 20, { id: "top" });
  },
});
