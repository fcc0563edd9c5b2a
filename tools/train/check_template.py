#!/usr/bin/env python3
"""The model's chat template three ways must agree: corpus.render (the prompts the model was trained on), Python's
jinja2 configured as Hugging Face renders templates, and Sluice's own engine (`sluice template`, from the template
file and from the shipped GGUF). Conversations: the shapes the model was trained on (a question; tools offered; a
tool loop with calls sent back as a client does, arguments as a JSON string or an object; two calls and two
results; a think block in an earlier reply) and a few it was not (a system prompt with and without tools, a later
turn after an answer), each with and without the generation prompt and with enable_thinking unset, true, false.

    python3 tools/train/check_template.py SLUICE_EXE [GGUF]
Prints one line per mismatch and exits 1 if there was any; needs jinja2.
"""

import json
import subprocess
import sys
from pathlib import Path

import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import corpus  # noqa: E402

TEMPLATE = HERE / "sluice-tiny-moe.jinja"
CALC, CAP = corpus.TOOL_CALCULATOR, corpus.TOOL_CAPITAL


def call(i, name, args):
    return {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": args}}


CONVERSATIONS = [
    ([{"role": "user", "content": "What is 478 + 356?"}], None),
    ([{"role": "user", "content": "What is 31 * 58?"}], [CALC, CAP]),
    ([{"role": "user", "content": "What is 31 * 58?"},
      {"role": "assistant", "content": "", "tool_calls": [call(0, "calculator", '{"expression":"31 * 58"}')]},
      {"role": "tool", "tool_call_id": "call_0", "content": "1798"}], [CALC, CAP]),
    ([{"role": "user", "content": "What are the capitals of Nauru and Belize?"},
      {"role": "assistant", "content": None, "tool_calls": [call(0, "get_capital", {"country": "Nauru"}),
                                                             call(1, "get_capital", {"country": "Belize"})]},
      {"role": "tool", "tool_call_id": "call_0", "content": '{"capital":"Yaren"}'},
      {"role": "tool", "tool_call_id": "call_1", "content": '{"capital": "Belmopan"}'}], [CAP]),
    ([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Reverse the word \"water\"."}], None),
    ([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2 + 2?"}], [CALC]),
    ([{"role": "user", "content": "What is 2 + 2?"},
      {"role": "assistant", "content": "<think>\nI add 2 and 2.\n</think>\n\n4"},
      {"role": "user", "content": "And 3 + 3?"}], None),
    ([{"role": "user", "content": "x"},
      {"role": "assistant", "content": "ok", "tool_calls": [call(0, "calculator", {"expression": "1 + 1"})]},
      {"role": "tool", "tool_call_id": "call_0", "content": "2"},
      {"role": "assistant", "content": "1 + 1 = 2."}], [CALC]),
]


def hf_environment():
    """jinja2 as transformers renders chat templates (trim and lstrip blocks, tojson without sorting or escaping)."""
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env.filters["tojson"] = tojson
    return env


def main():
    sluice = sys.argv[1]
    gguf = sys.argv[2] if len(sys.argv) > 2 else None
    template = hf_environment().from_string(TEMPLATE.read_text())
    bad = cases = 0
    for ci, (messages, tools) in enumerate(CONVERSATIONS):
        for thinking in (None, True, False):
            for gen in (True, False):
                kwargs = {} if thinking is None else {"enable_thinking": thinking}
                want = corpus.render(messages, tools, gen, thinking is not False)
                got = {"jinja2": template.render(messages=messages, tools=tools, add_generation_prompt=gen, **kwargs)}
                sources = [("template", ["--template", str(TEMPLATE)])]
                if gguf:
                    sources.append(("gguf", ["--model", gguf]))
                for name, source in sources:
                    cmd = [sluice, "template", *source, "--messages", json.dumps(messages)]
                    cmd += ["--tools", json.dumps(tools)] if tools else []
                    cmd += ["--add-generation-prompt"] if gen else []
                    cmd += ["--kwargs", json.dumps(kwargs)] if kwargs else []
                    r = subprocess.run(cmd, capture_output=True, text=True)
                    got[f"sluice {name}"] = r.stdout if r.returncode == 0 else f"<failed: {r.stderr.strip()}>"
                for who, text in got.items():
                    cases += 1
                    if text != want:
                        bad += 1
                        print(f"conversation {ci}, enable_thinking {thinking}, generation prompt {gen}: {who} "
                              f"differs from corpus.render:\n  got  {text!r}\n  want {want!r}")
    print(f"check_template: {cases - bad} of {cases} renderings equal corpus.render")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
