#!/usr/bin/python3
"""HTTP client for scripts/container_check.sh: talks to a Thermocline server
through its published port and fails loudly when an answer is not what a
real client needs.

  chat.py chat URL [--model M]               one chat completion; prints the reply
  chat.py models URL --expect ID             /v1/models lists ID
  chat.py stream URL [--model M] [--max-tokens N] [--after K --run CMD]
      streams a chat completion; after K content chunks runs CMD (e.g. a
      `podman stop`) in the background and keeps reading; passes only when
      the stream ends with its final event: a chunk with finish_reason, the
      usage chunk (completion_tokens == N) and `data: [DONE]`, no error
  chat.py stream ... --expect-broken          passes when the stream is cut
      (the server was killed) before [DONE]
"""
import argparse
import http.client
import json
import shlex
import subprocess
import sys
import time
import urllib.error
import urllib.request


def fail(msg):
    print("chat: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def post(url, body, timeout=300):
    req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    return urllib.request.urlopen(req, timeout=timeout)


def messages():
    return [{"role": "user", "content": "In the beginning God created the heaven and the earth."}]


def cmd_chat(a):
    try:
        with post(a.url, {"model": a.model, "messages": messages(), "max_tokens": a.max_tokens}) as r:
            status, doc = r.status, json.load(r)
    except urllib.error.HTTPError as e:
        fail("POST /v1/chat/completions: %d %s" % (e.code, e.read().decode(errors="replace")))
    except OSError as e:
        fail("POST /v1/chat/completions: %s" % e)
    choice = (doc.get("choices") or [{}])[0]
    content = (choice.get("message") or {}).get("content")
    if status != 200 or doc.get("object") != "chat.completion" or not content:
        fail("unexpected reply: %s" % json.dumps(doc)[:500])
    if choice.get("finish_reason") not in ("stop", "length"):
        fail("finish_reason %r" % choice.get("finish_reason"))
    if a.model and doc.get("model") != a.model:
        fail("model %r answered, %r asked" % (doc.get("model"), a.model))
    print("chat: %s answered %d tokens (%s): %s" % (doc.get("model"), doc["usage"]["completion_tokens"],
                                                   choice["finish_reason"], content.strip()[:120]))


def cmd_models(a):
    with urllib.request.urlopen(a.url + "/v1/models", timeout=30) as r:
        ids = [m["id"] for m in json.load(r)["data"]]
    if a.expect not in ids:
        fail("/v1/models lists %s, not %s" % (ids, a.expect))
    print("chat: /v1/models lists %s" % ids)


def cmd_stream(a):
    body = {"model": a.model, "messages": messages(), "max_tokens": a.max_tokens, "stream": True,
            "ignore_eos": True, "stream_options": {"include_usage": True}}
    chunks, finish, usage, done, errors, proc, t_run = 0, None, None, False, [], None, None
    start = time.time()
    try:
        with post(a.url, body) as r:
            for raw in r:
                line = raw.decode().rstrip("\r\n")
                if not line.startswith("data: "):
                    continue
                data = line[6:]
                if data == "[DONE]":
                    done = True
                    break
                ev = json.loads(data)
                if "error" in ev:
                    errors.append(ev["error"])
                    continue
                if ev.get("usage"):
                    usage = ev["usage"]
                for c in ev.get("choices") or []:
                    if (c.get("delta") or {}).get("content"):
                        chunks += 1
                    if c.get("finish_reason"):
                        finish = c["finish_reason"]
                if a.run and proc is None and chunks >= a.after:
                    t_run = time.time()
                    print("chat: %d chunks in, running: %s" % (chunks, a.run), flush=True)
                    proc = subprocess.Popen(shlex.split(a.run))
    except (OSError, ValueError, http.client.HTTPException) as e:  # a cut connection
        errors.append("connection: %s" % e)
    took = time.time() - start
    summary = ("chat: stream of %d content chunks in %.1f s, %s after the command; finish_reason=%s "
               "usage=%s [DONE]=%s errors=%s" % (chunks, took, "%.1f s" % (time.time() - t_run) if t_run else "-",
                                                  finish, usage and usage.get("completion_tokens"), done, errors))
    print(summary, flush=True)
    if proc is not None and proc.wait() != 0:
        fail("%s exited %d" % (a.run, proc.returncode))
    if a.run and proc is None:
        fail("the stream ended before %d chunks: the command never ran" % a.after)
    if a.expect_broken:
        if done:
            fail("the stream was expected to be cut, but it finished")
        return
    if errors or not done or finish != "length" or not usage or usage.get("completion_tokens") != a.max_tokens:
        fail("the stream did not end with its final event (finish_reason length, %d tokens, [DONE])" % a.max_tokens)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("chat", "stream", "models"):
        s = sub.add_parser(name)
        s.add_argument("url")
        s.add_argument("--model", default="default")
        s.add_argument("--max-tokens", type=int, default=32)
        s.add_argument("--expect")
        s.add_argument("--after", type=int, default=5)
        s.add_argument("--run")
        s.add_argument("--expect-broken", action="store_true")
    a = p.parse_args()
    {"chat": cmd_chat, "stream": cmd_stream, "models": cmd_models}[a.cmd](a)


if __name__ == "__main__":
    main()
