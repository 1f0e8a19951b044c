"""Drives the thermocline binary from Python: a `serve` process on a free
loopback port (for /tokenize and /v1/completions with logprobs) and
`thermocline generate`. Loopback only; every request has a timeout."""
import json
import os
import socket
import subprocess
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, binary, model, threads=2, ctx=None, log_path=None):
        self.binary, self.model, self.threads, self.ctx = binary, model, threads, ctx
        self.log_path = log_path or (model + ".serve.log")
        self.proc = None

    def __enter__(self):
        if not os.path.exists(self.binary):
            raise FileNotFoundError("%s is missing; build it: cmake -S . -B build-train -G Ninja "
                                    "-DCMAKE_BUILD_TYPE=Release -DTHERMOCLINE_CUDA=OFF && "
                                    "cmake --build build-train -j2 --target thermocline" % self.binary)
        self.port = free_port()
        cmd = [self.binary, "serve", "-m", self.model, "--host", "127.0.0.1", "--port", str(self.port),
               "-t", str(self.threads)]
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("thermocline serve exited with %d; log: %s" % (self.proc.returncode, self.log_path))
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/health" % self.port, timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.3)
        raise RuntimeError("thermocline serve did not become healthy; log: " + self.log_path)

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def post(self, path, body, timeout=300):
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port, path), data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read())

    def tokenize(self, text, add_special=False, parse_special=False):
        return self.post("/tokenize", {"content": text, "add_special": add_special,
                                       "parse_special": parse_special})["tokens"]


def generate(binary, model, prompt, n_predict, threads=2, timeout=300):
    """`thermocline generate --temp 0`: returns (stdout text, stderr)."""
    cmd = [binary, "generate", "-m", model, "-p", prompt, "-n", str(n_predict), "--temp", "0", "-t", str(threads)]
    r = subprocess.run(cmd, capture_output=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), r.returncode, r.stderr.decode(errors="replace")))
    return r.stdout.decode("utf-8", errors="replace"), r.stderr.decode("utf-8", errors="replace")
