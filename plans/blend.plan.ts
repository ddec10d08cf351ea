// Blend: followed and recommended authors' media in one list. A media item
// reachable both ways appears once, at its first position.

import { E, Key, Pred, defineFragment, definePlan, type Candidates } from "@rankd/dsl";

/** Recent media of a set of users, with the features the score needs. */
const recentMedia = defineFragment({
  name: "recent_media",
  build: (users: Candidates, args: { perUser: number }) =>
    users.media({ fanout: args.perUser }).take(1_000),
});

export default definePlan({
  name: "blend",
  params: { min_score: 0.01, result_size: 100 },
  build(ctx) {
    const viewer = ctx.viewer();
    const followed = viewer.follow({ fanout: 50 }).use(recentMedia, { perUser: 5 }, { as: "followed" });
    const recommended = viewer.recommendation({ fanout: 50 }).use(recentMedia, { perUser: 5 }, { as: "recommended" });
    const editorial = ctx.fixed([9001, 9002, 9003], { id: "editorial", label: "editors' picks" });

    const scored = followed
      .concat(recommended)
      .concat(editorial)
      .dedupe("id")
      .fetchFeatures("media_features", ["ctr", "likes", "title"], { id: "features" })
      .vm("final_score", E.if(Pred.notNull(Key.ctr), Key.ctr, E.coalesce(Key.likes, 0).div(1000)), { id: "score" });
    return scored
      .filter(Pred.and(Key.final_score.gt(ctx.param("min_score")), Key.title.matches(/\b(spam|scam)\b/i).not()))
      .topk("final_score", ctx.param("result_size"));
  },
});
