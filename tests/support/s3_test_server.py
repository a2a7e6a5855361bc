#!/usr/bin/env python3
"""An S3-compatible server on 127.0.0.1 for the object-storage tests, with a fault-injecting proxy.

The server is s3rver (npm, tests/support/s3rver/, installed by scripts/install-deps.sh). It lists
with ListObjectsV2 (start-after, continuation-token), serves ranged GETs and takes virtual-hosted
requests (http://<bucket>.s3.localhost:<port>/...). It does not emulate checksums (x-amz-checksum-*),
STS, IAM or bucket policies, and it does not check SigV4 signatures at all (its source says so).

So the proxy in front of it checks every signature itself (an implementation independent of the
host's, on Python's hmac and hashlib; access key and secret "S3RVER") and answers 403
SignatureDoesNotMatch when one is wrong. It forwards each request unchanged (the Host header too),
unless a fault plan says otherwise:
    {"match": "index/", "method": "GET", "times": 2, "action": "status", "status": 503, "code": "SlowDown"}
    {"action": "reset"}                       close the connection without answering
    {"action": "delay", "seconds": 3}         answer late
    {"action": "truncate", "keep_bytes": 10}  announce the whole body, send part of it, close
    {"action": "short_length", "keep_bytes": 10}  announce and send only part: looks complete
    {"action": "endless_body", "status": 200, "prefix": "<ListBucketResult>", "bytes": 67108864}
                                              a hostile server: the prefix, then filler with no
                                              Content-Length until `bytes` are sent or the client
                                              hangs up; the server never reads the request's upstream
    {"action": "endless_listing"}             a ListObjectsV2 page of one object, truncated, with
                                              a new continuation token each time (pagination forever)
Every request the proxy sees is logged (method, path with query, status, and in_flight: how many
requests the proxy was answering when it came, itself included; one counts until its answer starts), so tests count requests and see
how many a client keeps in flight. Clearing the log starts it and the count afresh: a request still being
answered from before (an earlier test's delayed one that its client gave up on) is neither counted
nor logged.

Use as a module (`with S3TestServer(buckets=["trials"]) as s3: ...`) or run it: it prints one JSON
line with the addresses once both listen, and serves until its standard input closes.
"""
import hashlib
import hmac
import http.client
import http.server
import json
import pathlib
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

ROOT = pathlib.Path(__file__).resolve().parent
S3RVER = ROOT / "s3rver" / "node_modules" / "s3rver" / "bin" / "s3rver.js"
ACCESS_KEY = "S3RVER"
SECRET_KEY = "S3RVER"
REGION = "us-east-1"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _signature_error(method, raw_path, headers, secret):
    """Why the request's SigV4 signature is wrong, or None when it verifies."""
    auth = headers.get("Authorization", "")
    if not auth.startswith("AWS4-HMAC-SHA256 "):
        return "no SigV4 Authorization header"
    fields = dict(part.strip().split("=", 1) for part in auth[len("AWS4-HMAC-SHA256 "):].split(","))
    _, date, region, service, _ = fields["Credential"].split("/")
    path, _, query = raw_path.partition("?")
    pairs = []
    for item in query.split("&") if query else []:
        k, _, v = item.partition("=")
        enc = lambda t: urllib.parse.quote(urllib.parse.unquote(t), safe="-_.~")
        pairs.append((enc(k), enc(v)))
    signed = fields["SignedHeaders"].split(";")
    canonical_headers = "".join(f"{h}:{' '.join((headers.get(h) or '').split())}\n" for h in signed)
    canonical = "\n".join([method, path, "&".join(f"{k}={v}" for k, v in sorted(pairs)), canonical_headers,
                           fields["SignedHeaders"], headers.get("x-amz-content-sha256", "UNSIGNED-PAYLOAD")])
    scope = f"{date}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", headers.get("x-amz-date", ""), scope,
                         hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + secret).encode()
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return None if hmac.compare_digest(expected, fields["Signature"]) else "signature does not match"


class _FaultPlan:
    def __init__(self):
        self.lock = threading.Lock()
        self.rules = []
        self.log = []
        self.in_flight = 0
        self.generation = 0  # bumped when the log is cleared; in_flight and the log hold this generation only

    def take(self, method, target):
        with self.lock:
            for rule in self.rules:
                if rule.get("times", 1) <= 0:
                    continue
                if rule.get("method") not in (None, method) or rule.get("match", "") not in target:
                    continue
                rule["times"] = rule.get("times", 1) - 1
                return dict(rule)
        return None

    def arrive(self):
        """A request came in: its generation, and how many are being answered now, itself included."""
        with self.lock:
            self.in_flight += 1
            return self.generation, self.in_flight

    def leave(self, generation):
        with self.lock:
            if generation == self.generation:
                self.in_flight -= 1

    def clear_log(self):
        """Called with the lock held."""
        self.log.clear()
        self.generation += 1
        self.in_flight = 0

    def record(self, generation, method, target, status, in_flight=None):
        with self.lock:
            if generation != self.generation:  # came before the log was cleared: not this log's
                return
            self.log.append({"method": method, "path": target, "status": status, "in_flight": in_flight})


def _proxy_handler(upstream_port, plan):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # The status line and headers go out in one write and the body in another: with Nagle's
        # algorithm on, the body then waits for the client's delayed ACK (40 ms a request).
        disable_nagle_algorithm = True

        def log_message(self, *args):
            pass

        def _error(self, status, code):
            xml = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>%s</Code><Message>from the test "
                   "proxy</Message></Error>" % code).encode()
            plan.record(self.generation, self.command, self.path, status, self.in_flight)
            self._leave()
            self.send_response(status)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(xml)))
            self.end_headers()
            if self.command != "HEAD":  # a HEAD answer has no body, whatever its Content-Length says
                self.wfile.write(xml)

        def _forward(self):
            self.generation, self.in_flight = plan.arrive()
            self.counted = True
            try:
                self._answer()
            finally:
                self._leave()

        def _leave(self):
            # Before the answer goes out: once the client has it, it may send its next request at
            # once, and that one must not find this one still counted.
            if self.counted:
                self.counted = False
                plan.leave(self.generation)

        def _answer(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            if _signature_error(self.command, self.path, self.headers, SECRET_KEY):
                self._error(403, "SignatureDoesNotMatch")
                return
            fault = plan.take(self.command, self.path)
            action = fault.get("action") if fault else None
            if action == "reset":
                plan.record(self.generation, self.command, self.path, "reset", self.in_flight)
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.close_connection = True
                return
            if action == "delay":
                time.sleep(float(fault.get("seconds", 1)))
            if action == "status":
                self._error(int(fault.get("status", 503)), fault.get("code", "SlowDown"))
                return
            if action == "endless_body":
                self._endless_body(fault)
                return
            if action == "endless_listing":
                self._endless_listing()
                return
            conn = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=60)
            headers = {k: v for k, v in self.headers.items()}
            conn.request(self.command, self.path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            conn.close()
            plan.record(self.generation, self.command, self.path, resp.status, self.in_flight)
            self._leave()
            send = data
            # A HEAD answer announces the object's length but carries no body.
            announced = int(resp.getheader("Content-Length") or 0) if self.command == "HEAD" else len(data)
            if action in ("truncate", "short_length"):
                send = data[: int(fault.get("keep_bytes", len(data) // 2))]
                if action == "short_length":
                    announced = len(send)
            self.send_response(resp.status)
            for k, v in resp.getheaders():
                if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                    self.send_header(k, v)
            self.send_header("Content-Length", str(announced))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(send)
            if action == "truncate":
                self.wfile.flush()
                self.close_connection = True

        def _endless_body(self, fault):
            plan.record(self.generation, self.command, self.path, "endless_body", self.in_flight)
            self.send_response(int(fault.get("status", 200)))
            self.send_header("Content-Type", "application/xml")
            self.send_header("Connection", "close")  # no length: the body runs until the connection closes
            self.end_headers()
            self.close_connection = True
            left = int(fault.get("bytes", 64 << 20))
            chunk = fault.get("prefix", "").encode()
            filler = b"<Contents><Key>k</Key><Size>1</Size></Contents>" * 1024
            try:
                while left > 0:
                    self.wfile.write(chunk[:left])
                    left -= len(chunk[:left])
                    chunk = filler
            except OSError:  # the client hung up: what a bounded client does
                pass

        def _endless_listing(self):
            page = getattr(plan, "endless_pages", 0) + 1
            plan.endless_pages = page
            xml = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult><IsTruncated>true</IsTruncated>"
                   "<Contents><Key>endless/%d</Key><Size>1</Size></Contents>"
                   "<NextContinuationToken>page%d</NextContinuationToken></ListBucketResult>" % (page, page)).encode()
            plan.record(self.generation, self.command, self.path, 200, self.in_flight)
            self.send_response(200)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(xml)))
            self.end_headers()
            self.wfile.write(xml)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

    return Handler


def _control_handler(plan):
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _reply(self, value):
            data = json.dumps(value).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            with plan.lock:
                self._reply(list(plan.log) if self.path == "/requests" else list(plan.rules))

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with plan.lock:
                if self.path == "/faults":
                    plan.rules = json.loads(body or b"[]")
                elif self.path == "/requests/clear":
                    plan.clear_log()
            self._reply({"ok": True})

    return Handler


class S3TestServer:
    """s3rver plus the fault proxy, both on 127.0.0.1, for the life of a `with` block."""

    def __init__(self, buckets=("trials",), data_dir=None):
        self.buckets = list(buckets)
        self._own_dir = data_dir is None
        self.data_dir = pathlib.Path(data_dir or tempfile.mkdtemp(prefix="vigil-s3-"))
        self.plan = _FaultPlan()

    def __enter__(self):
        if not S3RVER.exists():
            raise RuntimeError(f"{S3RVER} is missing: run scripts/install-deps.sh")
        self.port = _free_port()
        # s3rver makes ListObjectsV2 continuation tokens with DES, which OpenSSL 3 keeps in its legacy
        # provider: without it every truncated listing is a 500 InternalError.
        args = ["node", "--openssl-legacy-provider", str(S3RVER), "--address", "127.0.0.1", "--port", str(self.port), "--directory",
                str(self.data_dir), "--silent", "--service-endpoint", "localhost"]
        for b in self.buckets:
            args += ["--configure-bucket", b]
        # Its banner goes to our stderr: standard output carries only the JSON line of main().
        self._node = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=sys.stderr)
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self._node.poll() is not None or time.monotonic() > deadline:
                    self.__exit__(None, None, None)
                    raise RuntimeError("s3rver did not start")
                time.sleep(0.05)
        self._proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _proxy_handler(self.port, self.plan))
        self._control = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _control_handler(self.plan))
        for server in (self._proxy, self._control):
            server.daemon_threads = True
            threading.Thread(target=server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        for server in (getattr(self, "_proxy", None), getattr(self, "_control", None)):
            if server:
                server.shutdown()
                server.server_close()
        if getattr(self, "_node", None) and self._node.poll() is None:
            self._node.terminate()
            try:
                self._node.wait(10)
            except subprocess.TimeoutExpired:
                self._node.kill()
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def proxy_endpoint(self):
        return f"http://127.0.0.1:{self._proxy.server_address[1]}"

    @property
    def control_endpoint(self):
        return f"http://127.0.0.1:{self._control.server_address[1]}"

    def set_faults(self, rules):
        with self.plan.lock:
            self.plan.rules = [dict(r) for r in rules]

    def requests(self):
        with self.plan.lock:
            return list(self.plan.log)

    def clear_requests(self):
        with self.plan.lock:
            self.plan.clear_log()

    def environment(self, through_proxy=True):
        """The AWS variables a client in a test uses to reach this server."""
        return {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": REGION,
                "AWS_ENDPOINT_URL_S3": self.proxy_endpoint if through_proxy else self.endpoint}


def main():
    with S3TestServer(buckets=sys.argv[1:] or ["trials"]) as server:
        print(json.dumps({"endpoint": server.endpoint, "proxy": server.proxy_endpoint,
                          "control": server.control_endpoint, **server.environment()}), flush=True)
        signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
        sys.stdin.read()  # serve until the parent closes our input


if __name__ == "__main__":
    main()
