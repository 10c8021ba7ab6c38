"""dbus_wire: a minimal D-Bus client on one connection (stdlib only), for tests that need many
calls from the same sender, which busctl/gdbus (one connection per process) cannot make.

Supports unix:path= and unix:abstract= addresses, EXTERNAL auth, method calls whose arguments
are strings, and reading replies (method return or error name). Not a general D-Bus library.
"""
import os
import socket
import struct


def _pad(buf, n):
    return buf + b"\0" * (-len(buf) % n)


def _string(s, sig=False):
    data = s.encode()
    if sig:
        return struct.pack("<B", len(data)) + data + b"\0"
    return struct.pack("<I", len(data)) + data + b"\0"


class Connection:
    def __init__(self, address):
        params = dict(kv.split("=", 1) for kv in address.split(":", 1)[1].split(","))
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if "path" in params:
            self.sock.connect(params["path"])
        else:
            self.sock.connect("\0" + params["abstract"])
        uid = str(os.geteuid()).encode().hex()
        self.sock.sendall(b"\0AUTH EXTERNAL " + uid.encode() + b"\r\n")
        line = self._readline()
        if not line.startswith(b"OK"):
            raise RuntimeError(f"auth failed: {line!r}")
        self.sock.sendall(b"BEGIN\r\n")
        self.buf = b""
        self.serial = 0
        reply = self.wait(self.send("org.freedesktop.DBus", "/org/freedesktop/DBus",
                                    "org.freedesktop.DBus", "Hello"))
        if reply[0] != "return":
            raise RuntimeError(f"Hello failed: {reply}")

    def _readline(self):
        out = b""
        while not out.endswith(b"\r\n"):
            chunk = self.sock.recv(1)
            if not chunk:
                raise RuntimeError("connection closed during auth")
            out += chunk
        return out

    def send(self, dest, path, iface, member, *args):
        """Sends a method call with string arguments; returns its serial."""
        self.serial += 1
        body = b""
        for a in args:
            body = _pad(body, 4) + _string(a)
        fields = b""
        for code, sig, value in ((1, "o", path), (2, "s", iface), (3, "s", member),
                                 (6, "s", dest)) + (((8, "g", "s" * len(args)),) if args else ()):
            fields = _pad(fields, 8) + struct.pack("<B", code) + _string(sig, True)
            fields += _string(value, sig == "g")
        header = struct.pack("<cBBBIII", b"l", 1, 0, 1, len(body), self.serial, len(fields))
        self.sock.sendall(_pad(header + fields, 8) + body)
        return self.serial

    def _read_message(self):
        while True:
            if len(self.buf) >= 16:
                _, mtype, _, _, body_len, _, fields_len = struct.unpack_from("<cBBBIII", self.buf)
                total = 16 + fields_len + (-(16 + fields_len) % 8) + body_len
                if len(self.buf) >= total:
                    msg, self.buf = self.buf[:total], self.buf[total:]
                    return mtype, self._fields(msg[16:16 + fields_len])
            chunk = self.sock.recv(65536)
            if not chunk:
                raise RuntimeError("connection closed")
            self.buf += chunk

    @staticmethod
    def _fields(data):
        out, i = {}, 0
        while i < len(data):
            i += -i % 8
            code = data[i]
            siglen = data[i + 1]
            sig = data[i + 2:i + 2 + siglen].decode()
            i += 3 + siglen
            if sig in ("s", "o"):
                i += -i % 4
                (n,) = struct.unpack_from("<I", data, i)
                out[code] = data[i + 4:i + 4 + n].decode()
                i += 5 + n
            elif sig == "g":
                n = data[i]
                out[code] = data[i + 1:i + 1 + n].decode()
                i += 2 + n
            elif sig == "u":
                i += -i % 4
                (out[code],) = struct.unpack_from("<I", data, i)
                i += 4
            else:
                raise RuntimeError(f"unexpected header field type {sig}")
        return out

    def wait(self, serial):
        """Reads until the reply to `serial`: ("return", None) or ("error", ERROR_NAME)."""
        while True:
            mtype, fields = self._read_message()
            if fields.get(5) == serial and mtype in (2, 3):
                return ("return", None) if mtype == 2 else ("error", fields.get(4))

    def replies(self, serials):
        """Reads until every serial in `serials` has a reply; returns {serial: reply}."""
        want, out = set(serials), {}
        while want:
            mtype, fields = self._read_message()
            serial = fields.get(5)
            if serial in want and mtype in (2, 3):
                out[serial] = ("return", None) if mtype == 2 else ("error", fields.get(4))
                want.discard(serial)
        return out

    def close(self):
        self.sock.close()
