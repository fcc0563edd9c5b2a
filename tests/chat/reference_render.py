#!/usr/bin/env python3
"""Renders every (chat template x conversation x flags) case with Python's jinja2, configured as Hugging Face
transformers configures it, and writes the expected outputs (or raised errors) to a JSON file.

Usage: reference_render.py TEMPLATES_DIR[:MORE_DIRS] CONVERSATIONS_DIR OUTPUT_JSON
The C++ test (chat_template_test) renders the same cases with sluice::chat and compares byte for byte.
"""
import datetime
import json
import os
import sys

import jinja2
import jinja2.ext
from jinja2 import nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

# strftime_now must be deterministic: both sides format this UTC instant (2026-01-15 12:34:56).
FIXED_TIME = 1768480496
BOS_TOKEN = "<|bos|>"
EOS_TOKEN = "<|eos|>"
# enable_thinking None means the variable is not passed at all (templates then see it undefined).
FLAGS = [(agp, thinking) for agp in (False, True) for thinking in (None, False, True)]


class GenerationTracker(jinja2.ext.Extension):
    """The {% generation %} tag of transformers (AssistantTracker): renders its body unchanged."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return datetime.datetime.fromtimestamp(FIXED_TIME, tz=datetime.timezone.utc).strftime(format)


def make_environment():
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTracker, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render_case(template, conversation, agp, thinking):
    try:
        if isinstance(template, Exception):
            raise template
        kwargs = {} if thinking is None else {"enable_thinking": thinking}
        text = template.render(
            messages=conversation["messages"],
            tools=conversation.get("tools"),
            documents=None,
            add_generation_prompt=agp,
            bos_token=BOS_TOKEN,
            eos_token=EOS_TOKEN,
            **kwargs,
        )
        return {"output": text}
    except Exception as e:  # every failure is an expected value to compare against
        return {"error": {"type": type(e).__name__, "message": str(e)}}


def main():
    templates_dir, conversations_dir, output = sys.argv[1:4]
    env = make_environment()
    conversations = {}
    for name in sorted(os.listdir(conversations_dir)):
        if name.endswith(".json"):
            with open(os.path.join(conversations_dir, name), encoding="utf-8") as f:
                conversations[name[:-5]] = json.load(f)
    cases = []
    paths = {}
    for directory in templates_dir.split(os.pathsep):
        for name in os.listdir(directory):
            if name.endswith(".jinja"):
                paths[name] = os.path.join(directory, name)
    for name in sorted(paths):
        with open(paths[name], encoding="utf-8") as f:
            source = f.read()
        try:
            template = env.from_string(source)
        except Exception as e:  # a template that does not compile raises in every case
            template = e
        for conv_name, conversation in conversations.items():
            for agp, thinking in FLAGS:
                case = {"template": name, "conversation": conv_name, "add_generation_prompt": agp,
                        "enable_thinking": thinking}
                case.update(render_case(template, conversation, agp, thinking))
                cases.append(case)
    result = {"fixed_time": FIXED_TIME, "bos_token": BOS_TOKEN, "eos_token": EOS_TOKEN, "cases": cases}
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    with open(output, "w", encoding="utf-8") as f:
        json.dump(result, f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
