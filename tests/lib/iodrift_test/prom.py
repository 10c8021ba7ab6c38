"""Prometheus exposition text: series → value maps, (name, labels, value) samples, look-ups."""
import re

from iodrift_test.skip import fail

_SERIES = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text):
    """Parses exposition text into {series: value} (series = name{labels} as printed)."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        series, _, value = line.rpartition(" ")
        out[series] = float(value)
    return out


def parse(text):
    """Exposition text → list of (name, {labels}, value)."""
    out = []
    for series, value in parse_metrics(text).items():
        m = _SERIES.match(series)
        if not m:
            continue
        labels = {k: v.replace('\\"', '"').replace("\\\\", "\\")
                  for k, v in _LABEL.findall(m.group(2) or "")}
        out.append((m.group(1), labels, value))
    return out


def value(samples, name, **labels):
    """The value of the one series of `name` whose labels include `labels`, else None; fails
    the test when several series match."""
    found = [v for n, ls, v in samples
             if n == name and all(ls.get(k) == x for k, x in labels.items())]
    if len(found) > 1:
        fail(f"{name}{labels} matches {len(found)} series")
    return found[0] if found else None


def runs(samples, probe, result):
    """iodrift_probe_runs_total{probe, result}, 0 when the series is absent."""
    return value(samples, "iodrift_probe_runs_total", probe=probe, result=result) or 0
