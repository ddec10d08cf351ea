// The build status banner (#build-status): hidden while the last rankc build is ok (or there is
// none), otherwise each diagnostic as file:line:col: message.

import type { BuildStatus } from "../model/api_types.js";
import { bannerHeadline, bannerVisible, diagnosticText } from "../model/build_status.js";
import { h, replaceChildren } from "./dom.js";

/** The status last drawn, so an unchanged poll leaves the banner alone. */
let shown: string | null = null;

export function renderBuildStatus(banner: HTMLElement, status: BuildStatus): void {
  const key = JSON.stringify(status);
  if (shown === key) return;
  shown = key;
  banner.dataset["state"] = status.state;
  banner.hidden = !bannerVisible(status);
  if (banner.hidden) {
    replaceChildren(banner);
    return;
  }
  replaceChildren(banner,
    h("strong", {}, bannerHeadline(status)),
    h("ul", {}, ...status.diagnostics.map((d) =>
      h("li", { class: "diagnostic", title: d.code ?? null }, diagnosticText(d)))));
}
