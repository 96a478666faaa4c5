#!/usr/bin/env python3
"""Parses an OpenMetrics text exposition (stdin) with the official Prometheus
Python client's parser, and prints its families as JSON (stdout) for the
tests of /metrics. Exit 3: the parser is not installed (apt install
python3-prometheus-client, see scripts/install-test-deps.sh); exit 1: the
exposition does not parse."""
import json
import sys

try:
    from prometheus_client.openmetrics.parser import text_string_to_metric_families
except ImportError as error:
    print(f"the Prometheus Python client is not installed: {error}", file=sys.stderr)
    sys.exit(3)

try:
    families = [
        {
            "name": family.name,
            "type": family.type,
            "unit": family.unit,
            "samples": [
                {"name": s.name, "labels": s.labels, "value": float(s.value)}
                for s in family.samples
            ],
        }
        for family in text_string_to_metric_families(sys.stdin.read())
    ]
except Exception as error:  # the parser raises ValueError and others
    print(f"not a valid OpenMetrics exposition: {error}", file=sys.stderr)
    sys.exit(1)
json.dump({"families": families}, sys.stdout)
