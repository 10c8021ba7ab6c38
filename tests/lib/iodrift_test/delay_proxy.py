"""A TCP relay on 127.0.0.1 that can delay every chunk it forwards: a network with latency for
one connection's traffic only (tc netem on lo would slow every local test on the machine).

    p = DelayProxy(upstream_port)      # listens on p.port, forwards to 127.0.0.1:upstream_port
    p.delay_ms = 20                    # from now on each chunk waits 20 ms before it is sent on
    p.close()                          # stops listening and closes every relayed connection
"""
import socket
import threading
import time


class DelayProxy:
    def __init__(self, upstream_port, delay_ms=0):
        self.upstream = ("127.0.0.1", upstream_port)
        self.delay_ms = delay_ms
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.port = self.listener.getsockname()[1]
        self.sockets = []
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream, timeout=10)
                server.settimeout(None)
            except OSError:
                client.close()
                continue
            for s in (client, server):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.sockets += [client, server]
            threading.Thread(target=self._pump, args=(client, server), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client), daemon=True).start()

    def _pump(self, src, dst):
        try:
            while True:
                data = src.recv(1 << 16)
                if not data:
                    break
                if self.delay_ms:
                    time.sleep(self.delay_ms / 1000)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self.closed = True
        self.listener.close()
        for s in self.sockets:
            try:
                s.close()
            except OSError:
                pass
