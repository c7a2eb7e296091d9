#!/usr/bin/env python3
# Summarizes one csi-sanity JUnit report (ginkgo's --ginkgo.junit-report), for run-sanity.sh (the host
# tier) and test-e2e/vm/guest/sanity.sh (inside the VM tier's guest).
#
#   junit-summary.py ACCESS_TYPE JUNIT SKIPPED_FILE
#
# Prints "passed failed skipped pending" on stdout, writes the name and reason of every skipped or
# pending spec to SKIPPED_FILE, and prints each failure's name and first line on stderr.
import sys
import xml.etree.ElementTree as ET

access_type, junit, skipped_file = sys.argv[1:4]
passed, failed, skipped, pending = 0, [], [], 0
for case in ET.parse(junit).getroot().iter("testcase"):
    name = case.get("name", "")
    # Ginkgo also reports its own suite-level nodes (e.g. the ReportAfterSuite writing this file).
    if name.startswith("[") and name.split(" ", 1)[0].endswith("Suite]"):
        continue
    status = case.get("status", "")
    problem = case.find("failure")
    if problem is None:
        problem = case.find("error")
    skip = case.find("skipped")
    if problem is not None or status in ("failed", "panicked", "interrupted", "aborted", "timedout"):
        message = "" if problem is None else (problem.get("message") or problem.text or "")
        failed.append((name, message.strip() or status))
    elif status == "pending":
        pending += 1
        skipped.append((name, "pending (disabled in csi-sanity itself)"))
    elif skip is not None or status == "skipped":
        reason = "" if skip is None else (skip.get("message") or "").strip()
        if reason.startswith("skipped - "):
            reason = reason[len("skipped - "):]
        skipped.append((name, reason))
    else:
        passed += 1
with open(skipped_file, "w") as out:
    for name, reason in skipped:
        out.write(f"{name}\n    {reason}\n")
for name, message in failed:
    print(f"FAILED [{access_type}] {name}\n    {message.splitlines()[0]}", file=sys.stderr)
print(passed, len(failed), len(skipped) - pending, pending)
