"""The sanitizer sweep's calls that launch given kernel variants: indices for `--only`.

Usage: python tests/gpu_runs/select_calls.py MATCH [MATCH ...]
  MATCH is a kernel name (carry_kernel) or NAME=VALUE of a launch's constexprs (VEC=8, KC=128) or
  its num_warps, or several of those joined by commas, all of which one launch must match
  (BB=1,num_warps=4); a call is selected when a launch of its forward or gradient matches any one
  MATCH. Prints the
  indices into triton_variants.calls() (what sanitize_driver.py --only reads), comma-separated,
  and on stderr how many calls matched. Traces only (no GPU).
"""

import ast
import sys

import triton_variants


def matches(name: str, constexprs: dict, match: str) -> bool:
    if "," in match:
        return all(matches(name, constexprs, term) for term in match.split(","))
    if "=" not in match:
        return name == match
    key, value = match.split("=", 1)
    return key in constexprs and constexprs[key] == ast.literal_eval(value)


def main(patterns: list[str]) -> None:
    hits = []
    found = []  # the call being traced: whether each of its launches matched

    def on_launch(kernel, grid, args, out_shapes, num_warps, constexprs):
        fields = {**constexprs, "num_warps": num_warps}
        found.append(any(matches(kernel.fn.__name__, fields, m) for m in patterns))

    for i, (inp, args) in enumerate(triton_variants.calls()):
        found.clear()
        with triton_variants.recording(on_launch):  # caches cleared: every launch traced again
            triton_variants.trace(inp, args)
        if any(found):
            hits.append(i)
    print(",".join(map(str, hits)))
    print(f"{len(hits)} calls match {' or '.join(patterns)}", file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
