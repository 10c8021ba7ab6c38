"""Memory and CPU figures of a running process from /proc/PID (Linux).

    status_bytes(pid, "VmRSS")   # VmRSS / VmHWM / RssAnon / ... in bytes, None when absent
    reset_peak(pid)              # VmHWM := VmRSS now (writes 5 to /proc/PID/clear_refs)
    cpu_seconds(pid)             # utime + stime of all its threads
"""
import os


def status_bytes(pid, field):
    """`field` of /proc/PID/status (a "... kB" line) in bytes; None when the line is absent."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key == field:
                return int(rest.split()[0]) * 1024
    return None


def reset_peak(pid):
    """Resets the peak resident set size (VmHWM) to the current VmRSS. Needs the right to write
    /proc/PID/clear_refs (same user or root); raises OSError otherwise."""
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5\n")


def cpu_seconds(pid):
    """User + system CPU seconds the process has used (all threads, from /proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks
