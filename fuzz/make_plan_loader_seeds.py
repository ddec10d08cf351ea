#!/usr/bin/env python3
"""Writes the seeds of the plan_loader fuzz target (fuzz/corpus/plan_loader/): the golden
artifacts and a few cases of the shared corpus as compact JSON (under the fuzz runs' 4096-byte
input limit), each prefixed with the option byte the target reads first (0: digest not checked,
so mutations reach the later rules; 1: checked). Run from anywhere:
python3 fuzz/make_plan_loader_seeds.py"""
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "fuzz" / "corpus" / "plan_loader"
CASES = ["cycle", "expr_too_deep_in_pred", "key_not_available_in_expr", "regex_invalid_lookahead",
         "schema_regex_pattern_and_param", "type_mismatch_coalesce", "unsafe_integer_in_value",
         "param_undeclared_regex", "dead_node", "budget_commands", "model_unlisted",
         "key_not_available_model_feature"]


def compact(value) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode()


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    seeds = {}
    for golden in sorted((ROOT / "dsl" / "test" / "golden").glob("*.json")):
        text = compact(json.loads(golden.read_text()))
        seeds[golden.stem] = b"\x00" + text
        seeds[golden.stem + "_digest_checked"] = b"\x01" + text
    for case in CASES:
        artifact = json.loads((ROOT / "tests" / "plans" / "invalid" / f"{case}.json").read_text())["artifact"]
        seeds[f"case_{case}"] = b"\x00" + compact(artifact)
    for name, data in seeds.items():
        assert len(data) <= 4096, f"{name}: {len(data)} bytes, over the fuzz runs' -max_len"
        (OUT / name).write_bytes(data)


if __name__ == "__main__":
    main()
