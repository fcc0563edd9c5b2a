#!/usr/bin/env python3
"""Renders a matrix of small expressions ({{ value op value }}, {{ value | filter }}, {{ value is test }}, methods,
subscripts) with Python's jinja2 in the Hugging Face configuration and writes [template, expected] pairs.

Usage: expression_matrix.py OUTPUT_JSON
Each expected value is {"output": text} or {"error": "ExceptionName: message"}; expression_matrix_test.cpp
renders the same templates with sluice::chat and compares.
"""
import itertools
import json
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_render  # noqa: E402  (same environment as the chat-template reference)

VALUES = ["0", "1", "-2", "2.5", "'ab'", "''", "[]", "[1,'a']", "{'k':1}", "none", "true", "nope", "'Ab c '",
          "[3,1,2]", "{'b':2,'a':1}", "'é'"]
OPERATORS = ["+", "-", "*", "/", "//", "%", "~", "==", "!=", "<", ">=", "in", "not in", "and", "or"]
FILTERS = ["length", "string", "list", "first", "last", "int", "float", "trim", "upper", "lower", "tojson", "join",
           "join('-')", "default('D')", "default('D', true)", "sort", "unique|list", "reverse|list", "sum", "abs",
           "round", "items|list", "dictsort", "map('string')|list", "select|list", "reject|list", "count", "min",
           "max", "capitalize", "title", "wordcount", "escape", "e", "safe", "tojson(indent=1)", "indent(2)",
           "replace('a','Z')", "batch(2)|list"]
TESTS = ["defined", "undefined", "none", "string", "number", "iterable", "sequence", "mapping", "integer", "float",
         "boolean", "true", "false", "odd", "even", "callable", "lower", "upper"]
POSTFIX = ["{v}[0]", "{v}[1:]", "{v}[::-1]", "{v}.k", "{v}.items()", "{v}.get('k')", "{v}.strip()", "{v}.split()",
           "not {v}", "-{v}", "{v} if {v} else 'n'"]


def expressions():
    for a, op, b in itertools.product(VALUES, OPERATORS, VALUES):
        yield f"{a} {op} {b}"
    for v, f in itertools.product(VALUES, FILTERS):
        yield f"{v} | {f}"
    for v, t in itertools.product(VALUES, TESTS):
        yield f"{v} is {t}"
    for v, p in itertools.product(VALUES, POSTFIX):
        yield p.format(v=v)


def main():
    warnings.simplefilter("ignore")  # Python warns about constant subscripts such as 1[0]
    env = reference_render.make_environment()
    cases = []
    for e in expressions():
        source = "{{ " + e + " }}"
        try:
            expected = {"output": env.from_string(source).render()}
        except Exception as ex:  # errors are expected values too
            expected = {"error": f"{type(ex).__name__}: {ex}"}
        cases.append([source, expected])
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False, indent=0)


if __name__ == "__main__":
    main()
