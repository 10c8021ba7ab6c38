#!/usr/bin/env python3
"""lint.layers: every #include "FOLDER/..." in the product sources goes down the layers.

The layers and what each may use are the one table IODRIFT_LAYERS of the top-level
CMakeLists.txt, passed here as arguments "NAME:FOLDER:USED,USED" (docs/design.md "Layers").
A file belongs to the layer whose folder is the longest prefix of its path; an include of a file
in another layer that is not in its list fails, naming the file, the line and the rule.
"""
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def main(argv):
    root = pathlib.Path(argv[1])
    layers = {}
    for spec in argv[2:]:
        name, folder, uses = (spec.split(":") + [""])[:3]
        layers[name] = (folder, {u for u in uses.split(",") if u})

    def layer_of(path):
        best = None
        for name, (folder, _) in layers.items():
            if path == folder or path.startswith(folder + "/"):
                if best is None or len(folder) > len(layers[best][0]):
                    best = name
        return best

    problems = []
    checked = 0
    for name, (folder, uses) in layers.items():
        for source in sorted((root / folder).rglob("*")):
            if source.suffix not in (".h", ".cpp"):
                continue
            relative = source.relative_to(root).as_posix()
            if layer_of(relative) != name:
                continue  # a deeper layer's folder
            checked += 1
            for number, line in enumerate(source.read_text(errors="replace").splitlines(), 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                target = layer_of(match.group(1))
                if target is None or target == name or target in uses:
                    continue
                allowed = ", ".join(sorted(uses)) or "nothing"
                problems.append(
                    f"{relative}:{number}: includes {match.group(1)} ({target}); layer {name} "
                    f"may use only {allowed} (CMakeLists.txt IODRIFT_LAYERS, docs/design.md)")
    for problem in problems:
        print(problem)
    if checked == 0:
        print("no source files found; wrong source directory?")
        return 1
    print(f"{checked} files checked, {len(problems)} wrong-direction includes")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
