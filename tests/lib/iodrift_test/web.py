"""HTTP(S) side of the security tests: curl as the client, a throw-away self-signed certificate
for localhost / 127.0.0.1, bcrypt hashes for basic auth."""
import os
import shutil
import subprocess
import warnings

from iodrift_test.skip import need, skip

def make_cert(directory, name="tls"):
    """A self-signed EC certificate for localhost / 127.0.0.1; returns (cert, key) paths."""
    need("openssl")
    cert = os.path.join(directory, name + ".crt")
    key = os.path.join(directory, name + ".key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                    "-keyout", key, "-out", cert],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return cert, key


def bcrypt_hash(password, cost=10):
    """bcrypt of `password`: python's crypt module (libxcrypt), else htpasswd -B, else skip."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            import crypt
            method = getattr(crypt, "METHOD_BLOWFISH", None)
            if method is not None:
                h = crypt.crypt(password, crypt.mksalt(method, rounds=2 ** cost))
                if h and h.startswith("$2"):
                    return h
        except ImportError:
            pass
    if shutil.which("htpasswd"):
        out = subprocess.run(["htpasswd", "-nbBC", str(cost), "", password], check=True,
                             capture_output=True, text=True).stdout
        return out.strip().lstrip(":")
    skip("no bcrypt generator (python crypt with bcrypt, or htpasswd from apache2-utils)")


def curl(*args, timeout=15):
    """Runs curl; returns (exit code, HTTP status or 0, body)."""
    need("curl")
    r = subprocess.run(["curl", "-sS", "--max-time", "10", "-o", "-", "-w", "\n%{http_code}",
                        *args], capture_output=True, text=True, timeout=timeout)
    body, _, code = r.stdout.rpartition("\n")
    return r.returncode, int(code or 0), body
