// Reels: short media from accounts recommended to the viewer, rather than
// followed. Fresh, popular items first; the viewer's own country is not used.

import { E, Key, definePlan } from "@rankd/dsl";

export default definePlan({
  name: "reels",
  params: {
    max_age_hours: 48,
    like_weight: 0.2,
  },
  build(ctx) {
    const recommended = ctx.viewer().recommendation({ fanout: 200 });
    const reels = recommended
      .media({ fanout: 5 })
      .fetchFeatures("media_features", ["age_hours", "likes", "ctr"], { id: "features" })
      .filter(Key.age_hours.le(ctx.param("max_age_hours")), { id: "fresh" });

    // Two model scores, blended: engagement, and freshness in [0, 1].
    const engagement = ctx.param("like_weight").mul(E.coalesce(Key.likes, 0).log1p()).add(E.coalesce(Key.ctr, 0));
    const freshness = E.float(1).sub(Key.age_hours.div(ctx.param("max_age_hours"))).clamp(0, 1);
    return reels
      .vm("model_score_1", engagement, { id: "engagement" })
      .vm("model_score_2", freshness, { id: "freshness" })
      .vm("final_score", Key.model_score_1.mul(0.7).add(Key.model_score_2.mul(0.3)), { id: "blend_scores" })
      .sort("final_score", "desc")
      .take(100);
  },
});
