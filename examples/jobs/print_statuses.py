"""Prints a `vigil evaluate` status file for people: each rule's status, the steps where it fired
and the evidence of the first trigger.   usage: print_statuses.py STATUS_FILE"""
import json
import sys

with open(sys.argv[1]) as f:
    statuses = json.load(f)["DebugRuleEvaluationStatuses"]
for s in statuses:
    triggers = s.get("Triggers", [])
    steps = [t["step"] for t in triggers]
    print("{:<20} {:<14} {}".format(s["RuleConfigurationName"], s["RuleEvaluationStatus"],
                                    "fired at steps " + ", ".join(map(str, steps)) if steps else ""))
    if triggers and triggers[0].get("evidence"):
        print("    evidence at step {}: {}".format(steps[0], json.dumps(triggers[0]["evidence"])[:400]))
