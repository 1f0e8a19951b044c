#!/usr/bin/env python3
"""Runs the code examples of the user docs against a real `thermocline serve`,
so that the docs fail a test when they drift from the server.

Pages: docs/quickstart.md, docs/api.md, docs/operations.md, and any other
docs/*.md holding the line `<!-- examples: run -->`.

Fenced blocks whose info string is `sh`, `python`, `js` or `mjs` are run
(sh with `bash -euo pipefail`, python with this interpreter, js as an ES
module with node); every other block (text, json, yaml, toml, ini, ...) is
not. HTML comments on the lines just above a fence (blank lines allowed)
steer it:

  <!-- example: not run (why) -->      do not run this block
  <!-- example: server FLAGS... -->    run it against a second server started
                                       with these extra `serve` flags
  <!-- example: output -->             this block is the documented output of
                                       the run block before it

A documented output is a JSON document, or SSE `data:` lines (`event:`
lines, as the Responses API sends, are skipped). The actual
stdout must parse the same way, and every key path of the documented JSON
must exist in it with the same JSON type (values may differ; of an array
only the first element's shape is compared). SSE events are matched in
order, each documented event to a later actual one.

Examples talk to http://127.0.0.1:8080 or localhost:8080; the runner
rewrites that to the port of the server it started. `thermocline` is on
PATH. Examples run in a scratch folder with a timeout each.

Python examples that import `openai` are byte-compiled always and run only
where that package is installed (Debian does not package it). Node examples
that import `openai` need <repo>/.deps/npm/node_modules/openai (scripts/setup.sh
installs it); without it they are skipped, or fail when
THERMOCLINE_REQUIRE_ORACLE is set (CI).

  run_doc_examples.py --thermocline BIN --repo DIR [--model FILE] [--timeout S]

Without --model: <repo>/models/default.gguf when it exists, else a small
random-weight model made with `thermocline make-model`.
"""
import argparse
import json
import os
import py_compile
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_PAGES = ("quickstart.md", "api.md", "operations.md")
OPT_IN = "<!-- examples: run -->"
RUNNERS = {"sh": "sh", "python": "python", "js": "js", "mjs": "js"}
MARKER = re.compile(r"^<!--\s*example:\s*(.*?)\s*-->$")
FENCE = re.compile(r"^```\s*([\w+-]*)")
DOC_ADDRESS = re.compile(r"\b(?:127\.0\.0\.1|localhost):8080\b")
USES_OPENAI_PY = re.compile(r"^\s*(?:import openai\b|from openai\b)", re.M)
USES_OPENAI_JS = re.compile(r"""\bfrom\s+["']openai["']|import\(\s*["']openai["']\s*\)""")


class DocError(Exception):
    """A problem with the docs themselves (bad marker, orphan output block)."""


@dataclass
class Block:
    page: str
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    markers: list = field(default_factory=list)
    output: "Block | None" = None  # the documented output, for run blocks

    @property
    def where(self):
        return f"{self.page}:{self.line}"

    def marker(self, name):
        for m in self.markers:
            if m == name or m.startswith(name + " ") or m.startswith(name + "("):
                return m[len(name):].strip()
        return None


def parse_page(path, name):
    """The fenced blocks of one page, with their markers and outputs paired."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, body = i, []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        markers, j = [], start - 1
        while j >= 0 and (not lines[j].strip() or MARKER.match(lines[j].strip())):
            if lines[j].strip():
                markers.insert(0, MARKER.match(lines[j].strip()).group(1))
            j -= 1
        blocks.append(Block(name, start + 1, m.group(1), "\n".join(body) + "\n", markers))
        i += 1
    last_run = None
    for b in blocks:
        for m in b.markers:
            if not re.match(r"^(output|not run \(.+\)|server \S.*)$", m):
                raise DocError(f"{b.where}: unknown example marker '{m}'")
        if b.marker("output") is not None:
            if last_run is None or last_run.output is not None:
                raise DocError(f"{b.where}: an output block must follow a block that is run")
            check_documented_output(b)
            last_run.output = b
            last_run = None
        elif b.lang in RUNNERS and b.marker("not run") is None:
            last_run = b
        else:
            last_run = None
    return [b for b in blocks if b.lang in RUNNERS and b.marker("output") is None]


# ---------------------------------------------------------------- shapes

def json_type(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object"


def shape_errors(doc, actual, path="$"):
    """Where `actual` lacks a key path of `doc` or has another type there."""
    if json_type(doc) != json_type(actual):
        return [f"{path}: documented {json_type(doc)}, got {json_type(actual)}"]
    errors = []
    if isinstance(doc, dict):
        for key, value in doc.items():
            if key not in actual:
                errors.append(f"{path}.{key}: documented, missing from the output")
            else:
                errors += shape_errors(value, actual[key], f"{path}.{key}")
    elif isinstance(doc, list) and doc:
        if not actual:
            errors.append(f"{path}: documented a non-empty array, got []")
        else:
            errors += shape_errors(doc[0], actual[0], f"{path}[0]")
    return errors


def parse_sse(text):
    """The events of an SSE body: JSON values, or the string '[DONE]'."""
    events = []
    for line in text.splitlines():
        if not line.strip() or line.startswith(":") or line.startswith("event:"):
            continue  # blank separators, comments (": ping") and event names (the data says its type)
        if not line.startswith("data:"):
            raise ValueError(f"not an SSE line: {line[:120]!r}")
        payload = line[5:].strip()
        events.append(payload if payload == "[DONE]" else json.loads(payload))
    if not events:
        raise ValueError("no SSE events")
    return events


def event_errors(want, got):
    if want == "[DONE]" or got == "[DONE]":
        return [] if want == got else [f"documented data: {json.dumps(want)[:60]}, got data: {json.dumps(got)[:60]}"]
    return shape_errors(want, got)


def is_sse(text):
    return text.lstrip().startswith(("data:", "event:"))


def check_documented_output(block):
    """A documented output must itself parse, as SSE or as JSON."""
    try:
        parse_sse(block.text) if is_sse(block.text) else json.loads(block.text)
    except ValueError as e:
        raise DocError(f"{block.where}: the documented output does not parse: {e}")


def output_errors(documented, actual):
    """Compares an example's stdout with its documented output."""
    if is_sse(documented):
        doc_events = parse_sse(documented)
        try:
            got = parse_sse(actual)
        except ValueError as e:
            return [f"the output is not SSE: {e}"]
        pos = 0
        for n, want in enumerate(doc_events, 1):
            best = None
            for k in range(pos, len(got)):
                errs = event_errors(want, got[k])
                if not errs:
                    pos = k + 1
                    break
                if best is None or len(errs) < len(best):
                    best = errs
            else:
                return [f"documented event {n} matches no later event of the output"] + (best or [])
        return []
    try:
        got = json.loads(actual)
    except ValueError as e:
        return [f"the output is not JSON ({e}): {actual[:200]!r}"]
    return shape_errors(json.loads(documented), got)


# ---------------------------------------------------------------- servers

def clean_env():
    """The environment minus THERMOCLINE_* settings that would change `serve`."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith("THERMOCLINE_") or k == "THERMOCLINE_REQUIRE_ORACLE"}


LISTENING = re.compile(r'listening on http://[^\s"]+:([0-9]+)')


class Server:
    def __init__(self, binary, model, extra, workdir):
        # Port 0: the server binds a free port itself and logs it, so no
        # other process can take it between a probe and the bind.
        self.port = None
        self.log_path = Path(tempfile.mkstemp(prefix="serve-", suffix=".log", dir=workdir)[1])
        args = [binary, "serve", "--model", str(model), "--host", "127.0.0.1", "--port", "0"]
        if Path(model).stem != "default":
            args += ["--alias", "default"]  # the docs' model id
        self.args = args + extra
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(self.args, stdout=subprocess.DEVNULL, stderr=log, env=clean_env())
        deadline = time.time() + 60
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"`{' '.join(self.args)}` exited with {self.proc.returncode}:\n{self.log()}")
            if self.port is None:
                m = LISTENING.search(self.log_path.read_text(errors="replace"))
                self.port = int(m.group(1)) if m else None
            try:
                if self.port is not None:
                    with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                        if r.status == 200:
                            return
            except OSError:
                pass
            if time.time() > deadline:
                self.proc.kill()
                raise RuntimeError(f"the server was not healthy within 60 s:\n{self.log()}")
            time.sleep(0.1)

    def log(self):
        return self.log_path.read_text(errors="replace")[-3000:]

    def stop(self):
        """SIGTERM, as operations.md documents; returns the exit status."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return "no exit within 30 s of SIGTERM"


# ---------------------------------------------------------------- running

def python_has_openai():
    return subprocess.run([sys.executable, "-c", "import openai"], capture_output=True).returncode == 0


def js_problem(code, node_modules):
    """Why a js example cannot run here, or ''."""
    if not shutil.which("node"):
        return "node is not installed"
    if USES_OPENAI_JS.search(code) and not (node_modules / "openai" / "package.json").exists():
        return f"the openai npm package is not in {node_modules}; scripts/setup.sh installs it"
    return ""


@dataclass
class Context:
    scratch: Path        # the examples' working folder
    bin_dir: str         # put on PATH, so examples can call `thermocline`
    node_modules: Path
    require_oracle: bool
    python_openai: bool
    timeout: float


def run_block(block, port, ctx):
    """Runs one example; returns (status, detail) with status PASS, SKIP or FAIL."""
    code = DOC_ADDRESS.sub(f"127.0.0.1:{port}", block.text)
    kind = RUNNERS[block.lang]
    script = ctx.scratch / f"{Path(block.page).stem}_{block.line}"
    if kind == "sh":
        script = script.with_suffix(".sh")
        script.write_text(code)
        cmd = ["bash", "-euo", "pipefail", str(script)]
    elif kind == "python":
        script = script.with_suffix(".py")
        script.write_text(code)
        try:
            py_compile.compile(str(script), doraise=True, cfile=str(script) + "c")
        except py_compile.PyCompileError as e:
            return "FAIL", f"does not compile:\n{e.msg}"
        if USES_OPENAI_PY.search(code) and not ctx.python_openai:
            return "SKIP", "SKIPPED (python openai package not installed); byte-compiled only"
        cmd = [sys.executable, str(script)]
    else:
        # An ES module finds `openai` in the node_modules link next to it.
        script = script.with_suffix(".mjs")
        script.write_text(code)
        problem = js_problem(code, ctx.node_modules)
        if problem and ctx.require_oracle:
            return "FAIL", f"{problem}, and THERMOCLINE_REQUIRE_ORACLE is set"
        if problem:
            return "SKIP", f"SKIPPED ({problem})"
        cmd = ["node", str(script)]
    env = clean_env()
    env["PATH"] = f"{ctx.bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["NODE_PATH"] = str(ctx.node_modules)
    try:
        r = subprocess.run(cmd, cwd=ctx.scratch, env=env, capture_output=True, text=True, errors="replace",
                           timeout=ctx.timeout)
    except subprocess.TimeoutExpired:
        return "FAIL", f"timed out after {ctx.timeout:g} s"
    if r.returncode != 0:
        return "FAIL", f"exit status {r.returncode}\n--- stdout\n{r.stdout[-2000:]}\n--- stderr\n{r.stderr[-2000:]}"
    if block.output is not None:
        errors = output_errors(block.output.text, r.stdout)
        if errors:
            return "FAIL", (f"the output does not match the documented output at {block.output.where}:\n  "
                            + "\n  ".join(errors) + f"\n--- stdout\n{r.stdout[-2000:]}")
    return "PASS", ""


def model_to_serve(args, binary, repo, scratch):
    """--model, else the bundled model, else a small generated one."""
    if args.model:
        return Path(args.model)
    if (repo / "models" / "default.gguf").is_file():
        return repo / "models" / "default.gguf"
    model = scratch / "default.gguf"  # named so that its id is `default`, as in the docs
    subprocess.run([binary, "make-model", "-o", str(model), "--n-embd", "64", "--n-layer", "2", "--n-ff", "192",
                    "--n-head", "4", "--n-head-kv", "2", "--n-vocab", "512", "--type", "q8_0", "--seed", "1"],
                   check=True, capture_output=True)
    return model


def run_all(blocks, binary, model, ctx):
    """Runs every block, each against the server its markers ask for; returns the counts."""
    counts = {"PASS": 0, "SKIP": 0, "FAIL": 0, "not run": 0}
    servers = {}
    try:
        for b in blocks:
            reason = b.marker("not run")
            if reason is not None:
                counts["not run"] += 1
                print(f"not run {b.where} {b.lang} {reason}")
                continue
            flags = b.marker("server") or ""
            if flags not in servers:
                servers[flags] = Server(binary, model, flags.split(), ctx.scratch)
            t0 = time.time()
            status, detail = run_block(b, servers[flags].port, ctx)
            counts[status] += 1
            print(f"{status} {b.where} {b.lang} ({time.time() - t0:.1f} s)" + (f" {detail}" if status == "SKIP" else ""))
            if status == "FAIL":
                print("  " + detail.replace("\n", "\n  "))
    except RuntimeError as e:
        counts["FAIL"] += 1
        print(f"FAIL cannot start the server: {e}")
    finally:
        for flags, server in servers.items():
            status = server.stop()
            if status != 0:
                counts["FAIL"] += 1
                print(f"FAIL `serve {flags}` did not exit 0 on SIGTERM: {status}\n{server.log()}")
    return counts


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--thermocline", required=True, help="the thermocline binary")
    ap.add_argument("--repo", required=True, help="the repository root")
    ap.add_argument("--model", help="GGUF model to serve (default: models/default.gguf, else a generated one)")
    ap.add_argument("--timeout", type=float, default=60, help="seconds per example (default 60)")
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    binary = str(Path(args.thermocline).resolve())
    repo = Path(args.repo).resolve()
    started = time.time()

    docs = repo / "docs"
    pages = [docs / p for p in DEFAULT_PAGES]
    pages += [p for p in sorted(docs.glob("*.md")) if p.name not in DEFAULT_PAGES and OPT_IN in p.read_text()]
    try:
        blocks = [b for p in pages for b in parse_page(p, f"docs/{p.name}")]
    except (DocError, OSError) as e:
        print(f"FAIL {e}")
        return 1

    with tempfile.TemporaryDirectory(prefix="tc-doc-examples-") as tmp:
        scratch = Path(tmp)
        node_modules = repo / ".deps" / "npm" / "node_modules"
        if node_modules.is_dir():
            (scratch / "node_modules").symlink_to(node_modules)
        try:
            model = model_to_serve(args, binary, repo, scratch)
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"FAIL cannot make a model to serve: {e}")
            return 1
        print(f"doc examples: {len(blocks)} blocks from {len(pages)} pages; model {model}")
        require = os.environ.get("THERMOCLINE_REQUIRE_ORACLE", "") not in ("", "0")
        ctx = Context(scratch, os.path.dirname(binary), node_modules, require, python_has_openai(), args.timeout)
        counts = run_all(blocks, binary, model, ctx)
    print(f"doc examples: {counts['PASS']} passed, {counts['SKIP']} skipped, {counts['not run']} not run, "
          f"{counts['FAIL']} failed ({time.time() - started:.1f} s)")
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
