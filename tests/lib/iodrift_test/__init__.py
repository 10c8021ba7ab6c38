"""iodrift's Python test library (stdlib only). CTest puts tests/lib on PYTHONPATH for every
Python test (tests/CMakeLists.txt: iodrift_python_test_environment), so a test imports it as

    from iodrift_test.daemon import Daemon
    from iodrift_test.skip import fail, skip

Modules: skip (skip/fail exits), daemon (start iodriftd, port, scrape, health, logs), config
(write configs), devices (loop devices, mounts, checksums), wait (wait_for), prom (exposition
text), dbus + dbus_wire (private bus, busctl/gdbus/iodriftctl, a raw connection), fuse (faultfs),
web (curl, certificates, bcrypt). See tests/lib/README.md.
"""
