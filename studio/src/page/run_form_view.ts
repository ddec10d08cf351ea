// The run form (#run-form) generated from the plan's request schema: one labelled input per
// field with its bounds and default, values kept by input name when the form is redrawn (params
// only for the same plan: another plan's param of the same name starts at its own default), and the
// validation messages shown beside the inputs and in #run-error.

import type { FieldError, FormField } from "../model/run_form.js";
import { h, replaceChildren } from "./dom.js";

function inputFor(field: FormField, previous: string | undefined): HTMLElement {
  const value = previous ?? field.defaultText ?? "";
  if (field.kind === "boolean") {
    const select = h("select", { name: field.name, id: `field-${field.name}` },
      h("option", { value: "true" }, "true"),
      h("option", { value: "false" }, "false"));
    select.value = value === "true" ? "true" : "false";
    return select;
  }
  const attributes: Record<string, string | number | null> = {
    name: field.name,
    id: `field-${field.name}`,
    type: "text",
    inputmode: field.kind === "integer" || field.kind === "integer_list" ? "numeric" : field.kind === "number" ? "decimal" : null,
    placeholder: field.defaultText ?? (field.kind === "integer_list" ? "e.g. 1003877, 1010378" : field.required ? "required" : "optional"),
    "data-kind": field.kind,
    autocomplete: "off",
    spellcheck: "false",
  };
  if (field.minimum !== null && field.maximum !== null && field.maximum < 2 ** 53) {
    attributes["data-min"] = field.minimum;
    attributes["data-max"] = field.maximum;
  }
  const input = h("input", attributes);
  input.value = value;
  return input;
}

/**
 * Rebuilds the form for `fields`, keeping the values entered for inputs of the same name: all of
 * them when the plan is the same (`keepParams`), otherwise the viewer and deadline only.
 */
export function renderRunForm(form: HTMLFormElement, fields: FormField[], keepParams: boolean): void {
  // Another plan keeps the viewer and deadline, not the params or the traced ids (the previous
  // plan's items).
  const previous = Object.fromEntries(Object.entries(readFormValues(form))
    .filter(([name]) => keepParams || (!name.startsWith("param:") && name !== "trace_ids")));
  const rows = fields.map((field) =>
    h("div", { class: `field field-${field.kind}`, "data-field": field.name },
      h("label", { for: `field-${field.name}` }, field.param !== null ? h("span", { class: "param-prefix" }, "param ") : null, field.label,
        field.required ? h("span", { class: "required" }, " *") : null),
      inputFor(field, previous[field.name]),
      h("small", { class: "hint" }, field.description),
      h("small", { class: "field-error" })));
  replaceChildren(form, h("div", { class: "fields" }, ...rows),
    h("div", { class: "actions" }, h("button", { id: "run", type: "submit" }, "Run")));
}

/** The text of every input of the form, by name. */
export function readFormValues(form: HTMLFormElement): Record<string, string> {
  const values: Record<string, string> = {};
  for (const element of form.querySelectorAll<HTMLInputElement | HTMLSelectElement>("input[name], select[name]")) {
    values[element.name] = element.value;
  }
  return values;
}

/** Shows validation messages beside their inputs; an empty list clears them. */
export function showFieldErrors(form: HTMLFormElement, errors: FieldError[]): void {
  const byField = new Map(errors.map((e) => [e.field, e.message]));
  for (const row of form.querySelectorAll<HTMLElement>("[data-field]")) {
    const message = byField.get(row.dataset["field"] ?? "") ?? "";
    row.classList.toggle("invalid", message !== "");
    const slot = row.querySelector(".field-error");
    if (slot) slot.textContent = message;
    row.querySelector("input, select")?.setAttribute("aria-invalid", message !== "" ? "true" : "false");
  }
}

/** Shows a request or validation error in #run-error; null clears it. */
export function showRunError(target: HTMLElement, messages: string[] | null): void {
  if (messages === null || messages.length === 0) {
    replaceChildren(target);
    target.hidden = true;
    return;
  }
  target.hidden = false;
  replaceChildren(target, ...messages.map((message) => h("div", {}, message)));
}
