"""A sysfs tree (daemon config key `sys_root`) that makes a loop device an md array whose slaves
are other loop devices: this kernel has no md or dm, so loop devices stand in.

    tree = build_array_tree(s.path("sys"), array_dev, ["loop5", "loop6"])
    # config: sys_root: <tree>

With `mirror="/sys"` every other entry of the real sysfs is linked in as well, so that the
daemon's other probes (ext4 on a loop device, memory, ...) see the machine as they would without
`sys_root`; only the array's dev_t resolves to the fake md0.
"""
import os


def build_array_tree(root, array_dev, members, mirror=None, name="md0"):
    """root/dev/block/MAJ:MIN -> ../../block/<name> (the array's own dev_t), root/block/<name>/
    slaves/ -> each member, root/block/<member>/ (no slaves: a disk; a link to the real one when
    mirroring). Returns root."""
    st = os.stat(array_dev)
    array_key = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
    os.makedirs(os.path.join(root, "block", name, "slaves"))
    os.makedirs(os.path.join(root, "block", name, "queue"))
    os.makedirs(os.path.join(root, "dev/block"))
    os.symlink(f"../../block/{name}", os.path.join(root, "dev/block", array_key))
    for m in members:
        os.symlink(f"../../{m}", os.path.join(root, "block", name, "slaves", m))
    if mirror is None:
        for m in members:
            os.makedirs(os.path.join(root, "block", m, "queue"))
        return root
    # The real machine beside the fake array: every top-level sysfs entry but dev/ and block/,
    # every block device and dev_t but the array's (links to where the real ones resolve).
    for entry in os.listdir(mirror):
        if entry not in ("dev", "block"):
            os.symlink(os.path.join(mirror, entry), os.path.join(root, entry))
    for entry in os.listdir(os.path.join(mirror, "dev")):
        if entry != "block":
            os.symlink(os.path.join(mirror, "dev", entry), os.path.join(root, "dev", entry))
    for key in os.listdir(os.path.join(mirror, "dev/block")):
        if key != array_key:
            os.symlink(os.path.realpath(os.path.join(mirror, "dev/block", key)),
                       os.path.join(root, "dev/block", key))
    for disk in os.listdir(os.path.join(mirror, "block")):
        if disk != name and not os.path.lexists(os.path.join(root, "block", disk)):
            os.symlink(os.path.realpath(os.path.join(mirror, "block", disk)),
                       os.path.join(root, "block", disk))
    return root
