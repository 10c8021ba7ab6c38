"""iodriftd config files for tests: probes as dicts, other keys as YAML text, or YAML as is.

    write_config(path, [{"name": "hot", "kind": "buffered", "target": f, "interval": "1s"}],
                 state_dir)
    write_config(path, text="probes: []\n")
"""
import os
import tempfile


def render(probes, state_dir=None, extra="", dbus="none", log_level="info"):
    """YAML text: `state_dir`, `dbus` and `log_level` (each left out when None), then `extra`
    (YAML text, as given), then `probes`: a list of dicts whose key: value pairs are written as
    given (`probes: []` when empty)."""
    lines = []
    if state_dir is not None:
        lines.append(f"state_dir: {state_dir}")
    if dbus is not None:
        lines.append(f"dbus: {dbus}")
    if log_level is not None:
        lines.append(f"log_level: {log_level}")
    if extra:
        lines.append(extra.rstrip("\n"))
    lines.append("probes:" if probes else "probes: []")
    for probe in probes:
        first = True
        for key, value in probe.items():
            lines.append(f"  {'- ' if first else '  '}{key}: {value}")
            first = False
    return "\n".join(lines) + "\n"


def write_config(path, probes=(), state_dir=None, extra="", *, text=None, dbus="none",
                 log_level="info"):
    """Writes render(probes, state_dir, extra, dbus, log_level) — or `text` as is — to `path`;
    returns `path`."""
    if text is None:
        text = render(probes, state_dir, extra, dbus, log_level)
    with open(path, "w") as f:
        f.write(text)
    return path


def write_temp_config(probes, directory=None, extra=""):
    """Writes render(probes, extra=extra) (no state_dir) to a new iodrift-fault-*.yaml in
    `directory` (default: the temp dir) and returns its path.

    Collectors that read root-only or large files are left on: the daemon is tested as shipped.
    """
    fd, path = tempfile.mkstemp(prefix="iodrift-fault-", suffix=".yaml", dir=directory)
    with os.fdopen(fd, "w") as f:
        f.write(render(probes, extra=extra))
    return path
