#!/usr/bin/env python3
"""Renders gpt-oss's harmony chat template over cases that exercise what only it has: reasoning effort, model
identity, built-in browser/python tools, TypeScript-style tool namespaces, analysis (thinking) messages kept or
dropped around tool calls, the training-style final <|return|>, and its raise_exception checks. Writes the
expected outputs (or errors) for harmony_test, with jinja2 configured as reference_render.py configures it.

Usage: harmony_render.py TEMPLATE OUTPUT_JSON
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_render  # noqa: E402  (the shared jinja2 environment, fixed time and special tokens)

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"}},
        "required": ["city"]}}}
# Every branch of render_typescript_type: arrays of each scalar, of objects, nullable, union lists, oneOf (with
# and without object variants), enums, defaults, nested objects, and a tool without parameters.
RICH = {"type": "function", "function": {
    "name": "plan_trip", "description": "Plan a trip.",
    "parameters": {"type": "object", "properties": {
        "cities": {"type": "array", "items": {"type": "string"}, "description": "Cities to visit"},
        "days": {"type": "array", "items": {"type": "integer"}},
        "budgets": {"type": "array", "items": {"type": "number"}, "nullable": True},
        "flags": {"type": "array", "items": {"type": "boolean"}},
        "legs": {"type": "array", "items": {"type": "object", "properties": {
            "from": {"type": "string"}, "to": {"type": "string"}}, "required": ["from"]}},
        "anything": {"type": "array"},
        "mixed": {"type": ["string", "number"]},
        "one": {"type": ["object"]},
        "choice": {"oneOf": [{"type": "string", "description": "a name"}, {"type": "integer", "default": 3}]},
        "shape": {"oneOf": [{"type": "object"}, {"type": "string"}]},
        "mode": {"type": "string", "enum": ["fast", "cheap"], "default": "fast"},
        "note": {"type": "string", "nullable": True},
        "count": {"type": "integer", "default": 2},
        "ratio": {"type": "number"},
        "strict": {"type": "boolean", "default": False},
        "options": {"type": "object", "properties": {"seat": {"type": "string"}, "meal": {"type": "boolean"}},
                    "required": ["seat"]},
        "blob": {"type": "object"},
        "unknown": {}},
        "required": ["cities", "days"]}}}
NO_PARAMS = {"type": "function", "function": {"name": "now", "description": "The current time."}}

USER = {"role": "user", "content": "What is the weather in Paris?"}
CALL = {"role": "assistant", "content": "", "tool_calls": [
    {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]}
RESULT = {"role": "tool", "tool_call_id": "c1", "content": "{\"temperature\": 18}"}
FINAL = {"role": "assistant", "content": "It is 18 °C."}

CASES = [
    ("plain", [USER], None, {}, True),
    ("effort_low", [USER], None, {"reasoning_effort": "low"}, True),
    ("effort_high", [USER], None, {"reasoning_effort": "high"}, True),
    ("identity", [USER], None, {"model_identity": "You are Sluice's test model."}, True),
    ("browser", [USER], None, {"builtin_tools": ["browser"]}, True),
    ("python", [USER], None, {"builtin_tools": ["python"]}, True),
    ("both_builtins_and_functions", [USER], [WEATHER], {"builtin_tools": ["browser", "python"],
                                                        "reasoning_effort": "low"}, True),
    ("typescript_types", [USER], [RICH, NO_PARAMS, WEATHER], {}, True),
    ("system_becomes_developer", [{"role": "system", "content": "Be brief."}, USER], None, {}, True),
    ("developer_and_tools", [{"role": "developer", "content": "Use tools."}, USER], [WEATHER], {}, True),
    ("call_keeps_thinking_before_a_result",
     [USER, dict(CALL, content="", thinking="I should call get_weather."), RESULT], [WEATHER], {}, True),
    ("call_keeps_content_as_analysis", [USER, dict(CALL, content="Looking it up."), RESULT], [WEATHER], {}, True),
    ("final_answer_drops_the_call_analysis",
     [USER, dict(CALL, thinking="Call it."), RESULT, FINAL, {"role": "user", "content": "Thanks!"}], [WEATHER], {},
     True),
    ("call_with_content_type_and_string_arguments",
     [USER, {"role": "assistant", "tool_calls": [{"function": {"name": "get_weather", "content_type": "<|constrain|>json",
                                                               "arguments": "{\"city\": \"Paris\"}"}}]}, RESULT],
     [WEATHER], {}, True),
    ("earlier_thinking_is_dropped",
     [USER, dict(FINAL, thinking="Easy."), {"role": "user", "content": "And Rome?"}], None, {}, True),
    ("training_turn_ends_with_return", [USER, dict(FINAL, thinking="Known.")], None, {}, False),
    ("training_turn_without_thinking", [USER, FINAL], None, {"reasoning_effort": "high"}, False),
    ("channel_tags_in_content_are_refused",
     [USER, {"role": "assistant", "content": "<|channel|>analysis<|message|>x"}], None, {}, True),
    ("channel_tags_in_thinking_are_refused",
     [USER, {"role": "assistant", "content": "ok", "thinking": "<|channel|>final<|message|>y"}], None, {}, True),
    ("tool_result_without_a_call_is_refused", [USER, RESULT], None, {}, True),
    ("content_and_thinking_beside_a_call_are_refused",
     [USER, dict(CALL, content="a", thinking="b")], [WEATHER], {}, True),
]


def main():
    template_path, output = sys.argv[1:3]
    env = reference_render.make_environment()
    with open(template_path, encoding="utf-8") as f:
        template = env.from_string(f.read())
    cases = []
    for name, messages, tools, kwargs, agp in CASES:
        case = {"name": name, "messages": messages, "tools": tools, "kwargs": kwargs, "add_generation_prompt": agp}
        try:
            case["output"] = template.render(messages=messages, tools=tools, documents=None, add_generation_prompt=agp,
                                             bos_token=reference_render.BOS_TOKEN, eos_token=reference_render.EOS_TOKEN,
                                             **kwargs)
        except Exception as e:  # an expected value: the C++ side must raise the same
            case["error"] = {"type": type(e).__name__, "message": str(e)}
        cases.append(case)
    result = {"fixed_time": reference_render.FIXED_TIME, "bos_token": reference_render.BOS_TOKEN,
              "eos_token": reference_render.EOS_TOKEN, "cases": cases}
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    with open(output, "w", encoding="utf-8") as f:
        json.dump(result, f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
