#!/usr/bin/env python3
"""Renders the chat template test data with Python's jinja2.

Every tests/data/chat_templates/templates/*.jinja is rendered over every
conversation in tests/data/chat_templates/conversations.json into
tests/data/chat_templates/expected/<template>__<conversation>.txt, or, when
rendering fails, <template>__<conversation>.error holding the exception's
class name on the first line and its message after it. The C++ test
(tests/engine/text/chat_template_test.cpp) compares ChatTemplate's output
with these files byte for byte; it never runs Python.

The environment is the one HuggingFace transformers renders chat templates
with (transformers.utils.chat_template_utils._compile_jinja_template):
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with the
loopcontrols extension and the {% generation %} tag, the globals
raise_exception and strftime_now, and tojson replaced by json.dumps with
ensure_ascii=False and no key sorting or HTML escaping.

Conversation keys must be sorted: the server hands templates a
nlohmann::json, whose objects iterate in key order, while Python keeps the
file's order; with sorted files both see the same order.

Usage: scripts/chat_templates/render_expected.py   (needs python3-jinja2)
"""
import json
import pathlib
import sys
from datetime import datetime

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "chat_templates"


class GenerationTag(jinja2.ext.Extension):
    """HuggingFace's {% generation %} block (AssistantTracker) renders its body unchanged."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.now().strftime(format)

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def check_sorted(value, where):
    if isinstance(value, dict):
        keys = list(value)
        if keys != sorted(keys):
            sys.exit(f"{where}: object keys must be sorted, got {keys}")
        for k, v in value.items():
            check_sorted(v, f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            check_sorted(v, f"{where}[{i}]")


def main():
    env = make_environment()
    conversations = json.loads((DATA / "conversations.json").read_text(encoding="utf-8"))
    for conv in conversations:
        check_sorted(conv["variables"], conv["name"])
    out_dir = DATA / "expected"
    out_dir.mkdir(exist_ok=True)
    for stale in out_dir.iterdir():
        stale.unlink()
    n_ok = n_err = 0
    for path in sorted((DATA / "templates").glob("*.jinja")):
        # newline="" keeps the file's bytes, as the C++ test reads them
        with open(path, encoding="utf-8", newline="") as f:
            template = env.from_string(f.read())
        for conv in conversations:
            stem = f"{path.stem}__{conv['name']}"
            try:
                text, suffix = template.render(**conv["variables"]), ".txt"
                n_ok += 1
            except Exception as e:  # the template's own failure is the expected result
                text, suffix = f"{type(e).__name__}\n{e}", ".error"
                n_err += 1
            with open(out_dir / (stem + suffix), "w", encoding="utf-8", newline="") as f:
                f.write(text)
    print(f"render_expected: {n_ok} renders, {n_err} errors, jinja2 {jinja2.__version__}")


if __name__ == "__main__":
    main()
