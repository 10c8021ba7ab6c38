"""Local servers a test starts (Prometheus, VictoriaMetrics, sshd, ...): a free port to give
them, and waiting until one answers.

    from iodrift_test.net import free_port, wait_ready
    port = free_port()
    why = wait_ready(f"http://127.0.0.1:{port}/-/ready", [proc], timeout=30)
    if why:
        fail(f"prometheus not ready: {why}")
"""
import http.server
import socket
import threading
import time
import urllib.request


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_metrics(body):
    """A fake exporter: an HTTP server on 127.0.0.1:0 (its own thread) answering every GET with
    `body()` (bytes) as Prometheus text. Returns the server (`server_address[1]` is the port;
    `shutdown()` stops it)."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            data = body()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def wait_ready(url, procs=(), timeout=60, interval=0.2):
    """Polls GET `url` until it answers 200. Returns None when it did, else why not: a process of
    `procs` (subprocess.Popen) exited, or `timeout` seconds passed (with the last error). The
    caller reports it its own way (fail(), a list of failures, sys.exit with the server's log)."""
    deadline = time.monotonic() + timeout
    last = "no answer yet"
    while True:
        for proc in procs:
            if proc.poll() is not None:
                return f"{proc.args[0]} exited with status {proc.returncode}"
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return None
                last = f"HTTP {r.status}"
        except OSError as e:
            last = str(e)
        if time.monotonic() >= deadline:
            return f"{url} not answering after {timeout} s ({last})"
        time.sleep(interval)
