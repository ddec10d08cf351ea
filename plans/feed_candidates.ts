// The home feed's candidates, shared by feed and its variants feed_fresh and feed_gbdt: recent
// media from the accounts the viewer follows, with the features their scores and filters read.
//
// A plain function rather than a defineFragment fragment: its nodes keep the ids the plans
// give them (viewer, follow, media, features), where a fragment's would be prefixed with its
// instance name.

import type { Candidates, PlanContext } from "@rankd/dsl";

/** Adds the viewer, follow, media and features nodes to the plan; returns the hydrated media. */
export function feedCandidates(ctx: PlanContext): Candidates {
  const viewer = ctx.viewer();
  const followees = viewer.follow({ fanout: 100 });
  const media = followees.media({ fanout: 10 });
  return media.fetchFeatures("media_features", ["author_id", "age_hours", "likes", "ctr", "title"], {
    id: "features",
  });
}
