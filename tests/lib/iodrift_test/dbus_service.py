"""dbus_service: a fake D-Bus service on one connection (stdlib only), for tests of what
iodriftctl does with replies a real iodriftd never sends (hostile text, odd values).

    svc = dbus_service.Service(bus.address)
    svc.request_name("org.iodrift.Monitor1")
    svc.answer({"ListProbes": ("a(sss)", [("x\\x1b[2J", "cached", "/t")])})
    ... run iodriftctl ...
    svc.close()

`answer` serves method calls on a thread until close(): each member named in the table gets a
method return with that signature and value; an entry ("!error", NAME, MESSAGE) sends an error
instead; other members get org.freedesktop.DBus.Error.UnknownMethod. Marshals the types the
tests need: y b u t d s o g, arrays, structs (tuples), dict entries ({k: v} dicts) and variants
as ("SIG", value). Not a general D-Bus library.
"""
import struct
import threading

from iodrift_test import dbus_wire

_ALIGN = {"y": 1, "b": 4, "u": 4, "t": 8, "d": 8, "s": 4, "o": 4, "g": 1, "a": 4, "(": 8,
          "{": 8, "v": 1, "i": 4, "x": 8, "n": 2, "q": 2}


def _pad(buf, n):
    return buf + b"\0" * (-len(buf) % n)


def _split(sig):
    """The complete types of a signature, in order."""
    out, i = [], 0
    while i < len(sig):
        j = _end(sig, i)
        out.append(sig[i:j])
        i = j
    return out


def _end(sig, i):
    c = sig[i]
    if c == "a":
        return _end(sig, i + 1)
    if c in "({":
        close = ")" if c == "(" else "}"
        j = i + 1
        while sig[j] != close:
            j = _end(sig, j)
        return j + 1
    return i + 1


def _marshal(buf, sig, value):
    c = sig[0]
    buf = _pad(buf, _ALIGN[c])
    if c == "y":
        return buf + struct.pack("<B", value)
    if c in "bu":
        return buf + struct.pack("<I", int(value))
    if c == "i":
        return buf + struct.pack("<i", value)
    if c == "t":
        return buf + struct.pack("<Q", value)
    if c == "x":
        return buf + struct.pack("<q", value)
    if c == "d":
        return buf + struct.pack("<d", value)
    if c in "so":
        data = value.encode() if isinstance(value, str) else value
        return buf + struct.pack("<I", len(data)) + data + b"\0"
    if c == "g":
        data = value.encode()
        return buf + struct.pack("<B", len(data)) + data + b"\0"
    if c == "v":
        inner, v = value
        buf = _marshal(buf, "g", inner)
        return _marshal(buf, inner, v)
    if c == "(":
        for t, v in zip(_split(sig[1:-1]), value):
            buf = _marshal(buf, t, v)
        return buf
    if c == "a":
        elem = sig[1:]
        length_at = len(buf)
        buf += b"\0\0\0\0"
        buf = _pad(buf, _ALIGN[elem[0]])
        start = len(buf)
        items = value.items() if elem[0] == "{" else value
        for item in items:
            if elem[0] == "{":
                buf = _pad(buf, 8)
                k_sig, v_sig = _split(elem[1:-1])
                buf = _marshal(buf, k_sig, item[0])
                buf = _marshal(buf, v_sig, item[1])
            else:
                buf = _marshal(buf, elem, item)
        return buf[:length_at] + struct.pack("<I", len(buf) - start) + buf[length_at + 4:]
    raise ValueError(f"cannot marshal {sig}")


class Service(dbus_wire.Connection):
    """A connection that owns a name and answers method calls from a table."""

    def _send(self, mtype, fields, sig, args):
        body = b""
        for t, v in zip(_split(sig), args):
            body = _marshal(body, t, v)
        self.serial += 1
        header_fields = b""
        for code, fsig, value in fields + ([(8, "g", sig)] if sig else []):
            header_fields = _pad(header_fields, 8) + struct.pack("<B", code)
            header_fields += struct.pack("<B", len(fsig)) + fsig.encode() + b"\0"
            header_fields = _marshal(header_fields, fsig, value)
        flags = 1 if mtype != 1 else 0  # replies and errors expect no reply
        header = struct.pack("<cBBBIII", b"l", mtype, flags, 1, len(body), self.serial,
                             len(header_fields))
        self.sock.sendall(_pad(header + header_fields, 8) + body)
        return self.serial

    def request_name(self, name):
        """Owns `name` (DO_NOT_QUEUE); raises unless it became the primary owner."""
        serial = self._send(1, [(1, "o", "/org/freedesktop/DBus"), (2, "s", "org.freedesktop.DBus"),
                                (3, "s", "RequestName"), (6, "s", "org.freedesktop.DBus")],
                            "su", [name, 4])
        reply = self.wait(serial)
        if reply[0] != "return":
            raise RuntimeError(f"RequestName {name}: {reply}")

    def answer(self, table):
        """Serves method calls from `table` ({member: (sig, *values)} or ("!error", NAME, TEXT))
        on a thread until close()."""
        self.calls = []

        def serve():
            try:
                while True:
                    mtype, fields = self._read_message()
                    if mtype != 1:
                        continue
                    member, sender, serial = fields.get(3), fields.get(7), self._last_serial
                    self.calls.append(member)
                    reply_to = [(5, "u", serial), (6, "s", sender)]
                    entry = table.get(member)
                    if entry is None:
                        self._send(3, reply_to + [(4, "s", "org.freedesktop.DBus.Error."
                                                          "UnknownMethod")], "s",
                                   [f"no method {member}"])
                    elif entry[0] == "!error":
                        self._send(3, reply_to + [(4, "s", entry[1])], "s", [entry[2]])
                    else:
                        self._send(2, reply_to, entry[0], list(entry[1:]))
            except (OSError, RuntimeError):
                return  # closed

        self.thread = threading.Thread(target=serve, daemon=True)
        self.thread.start()

    def _read_message(self):
        """dbus_wire's reader, also keeping the message's serial (for the reply)."""
        while True:
            if len(self.buf) >= 16:
                _, mtype, _, _, body_len, serial, fields_len = struct.unpack_from("<cBBBIII",
                                                                                  self.buf)
                total = 16 + fields_len + (-(16 + fields_len) % 8) + body_len
                if len(self.buf) >= total:
                    msg, self.buf = self.buf[:total], self.buf[total:]
                    self._last_serial = serial
                    return mtype, self._fields(msg[16:16 + fields_len])
            chunk = self.sock.recv(65536)
            if not chunk:
                raise RuntimeError("connection closed")
            self.buf += chunk
