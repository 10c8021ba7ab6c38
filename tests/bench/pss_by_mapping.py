#!/usr/bin/env python3
"""Where a running iodriftd's PSS goes, per mapping (root):

  sudo python3 tests/bench/pss_by_mapping.py PID

Prints, per mapping (the binary, each shared library, [heap], [anon], [stack]), Rss and Pss from
/proc/PID/smaps and the PSS *as the only iodriftd* (scrape_bench.pss_alone_by_mapping: each
present page counts page size / its map count less the other iodriftd processes mapping it), in
KiB, largest first. [anon] holds malloc arenas other than the main heap, thread stacks and
anonymous mmaps; a library's rows include its relocated (copy-on-write) data pages.
"""
import collections
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scrape_bench  # noqa: E402


def smaps_by_mapping(pid):
    out = collections.defaultdict(collections.Counter)
    with open(f"/proc/{pid}/smaps") as f:
        name = None
        for line in f:
            fields = line.split()
            if "-" in fields[0] and not fields[0].endswith(":"):
                name = os.path.basename(fields[5]) if len(fields) > 5 else "[anon]"
            elif fields[0] in ("Rss:", "Pss:"):
                out[name][fields[0][:-1]] += int(fields[1])
    return out


def main():
    if len(sys.argv) != 2 or not sys.argv[1].isdigit():
        sys.exit(__doc__)
    pid = int(sys.argv[1])
    alone = scrape_bench.pss_alone_by_mapping(pid)
    if alone is None:
        sys.exit("needs root: /proc/PID/pagemap hides PFNs and /proc/kpagecount is root's")
    smaps = smaps_by_mapping(pid)
    print(f"{'mapping':<32} {'Rss':>7} {'Pss':>7} {'alone':>7}  KiB")
    total = collections.Counter()
    for name in sorted(smaps, key=lambda n: -alone.get(n, 0)):
        rss, pss, one = smaps[name]["Rss"], smaps[name]["Pss"], alone.get(name, 0)
        if rss:
            print(f"{name[:32]:<32} {rss:>7} {pss:>7} {one:>7.0f}")
        total.update(Rss=rss, Pss=pss, alone=one)
    print(f"{'total':<32} {total['Rss']:>7} {total['Pss']:>7} {total['alone']:>7.0f}")
    print(f"other iodriftd processes left out: {len(scrape_bench.other_iodriftd_pids(pid))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
