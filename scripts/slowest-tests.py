#!/usr/bin/env python3
"""Prints the slowest tests of a CTest run from its JUnit file: where `make test`'s time goes.

usage: slowest-tests.py JUNIT_XML [N]
"""
import sys
import xml.etree.ElementTree as ET


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    path, count = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 10
    try:
        cases = ET.parse(path).getroot().iter("testcase")
    except (OSError, ET.ParseError) as error:
        print(f"slowest-tests: no timings ({error})", file=sys.stderr)
        return
    times = sorted(((float(c.get("time", 0)), c.get("name", "?")) for c in cases), reverse=True)
    if not times:
        return
    total = sum(t for t, _ in times)
    print(f"\nSlowest {min(count, len(times))} of {len(times)} tests ({total:.0f} s of test time in all;"
          " budgets per tier in docs/development.md):")
    for seconds, name in times[:count]:
        print(f"  {seconds:8.1f} s  {name}")


if __name__ == "__main__":
    main()
