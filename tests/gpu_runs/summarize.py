"""Writes a GPU test run's summary (device, versions, date, counts, failures) from its JUnit XML."""

import datetime
import json
import os
import platform
import sys
import xml.etree.ElementTree as ET
from importlib import metadata


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def main(junit: str, out: str) -> None:
    import jax

    root = ET.parse(junit).getroot()
    suites = [root] if root.tag == "testsuite" else list(root)
    counts = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
    failed = [
        f"{case.get('classname')}::{case.get('name')}"
        for s in suites
        for case in s.iter("testcase")
        if case.find("failure") is not None or case.find("error") is not None
    ]
    by_file: dict[str, int] = {}
    for s in suites:
        for case in s.iter("testcase"):
            if case.find("skipped") is None:
                f = case.get("classname", "").split(".")[-1]
                by_file[f] = by_file.get(f, 0) + 1
    summary = {
        "device": str(jax.devices()[0].device_kind),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "commit": os.environ.get("RLSCAN_COMMIT"),  # set by the caller: the device copy has no .git
        "versions": {n: _version(n) for n in ("jax", "jaxlib", "triton", "jax-triton", "numpy", "chex")},
        "tests": counts["tests"],
        "passed": counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"],
        "failed": counts["failures"] + counts["errors"],
        "skipped": counts["skipped"],
        "ran_per_file": by_file,
        "failures": failed[:200],
    }
    with open(out, "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps({k: v for k, v in summary.items() if k not in ("failures", "ran_per_file")}))
    print("first failures:", failed[:10])


if __name__ == "__main__":
    main(*sys.argv[1:3])
