#!/usr/bin/python3
"""openmetrics_check.py FILE - parse FILE with Debian's strict OpenMetrics
parser (python3-prometheus-client) and check what it does not: canonical
bucket bounds, a UNIT for every *_seconds family, a _created sample beside
every counter and histogram series. Exit 0 if it all holds, else 1 with the
reason on stderr."""
import sys

from prometheus_client.openmetrics.parser import text_string_to_metric_families


def main(path):
    text = open(path, encoding="utf-8").read()
    try:
        families = list(text_string_to_metric_families(text))
    except Exception as e:  # the parser's ValueError names the line
        print(f"openmetrics: not valid OpenMetrics: {e}", file=sys.stderr)
        return 1
    for f in families:
        if f.name.endswith("_seconds") and f.unit != "seconds":
            print(f"openmetrics: {f.name} has no UNIT seconds", file=sys.stderr)
            return 1
        if f.type not in ("counter", "histogram"):
            continue
        series = {}
        for s in f.samples:
            key = tuple(sorted((k, v) for k, v in s.labels.items() if k != "le"))
            series.setdefault(key, set()).add(s.name)
            le = s.labels.get("le")
            if le is not None and le != "+Inf" and float(le) == int(float(le)) and "." not in le:
                print(f"openmetrics: {s.name} bound le=\"{le}\" is not canonical", file=sys.stderr)
                return 1
        for key, names in series.items():
            if f.name + "_created" not in names:
                print(f"openmetrics: {f.name}{dict(key)} has no _created", file=sys.stderr)
                return 1
    print(f"openmetrics: {len(families)} families, valid")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
