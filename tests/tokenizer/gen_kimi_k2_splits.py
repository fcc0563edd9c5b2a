#!/usr/bin/env python3
"""Reference splits of Kimi-K2's pre-tokenizer pattern (its tiktoken pat_str), computed with the `regex` module
(which, like tiktoken's fancy-regex, supports the class intersections the pattern uses).

Usage: python3 tests/tokenizer/gen_kimi_k2_splits.py tests/tokenizer/data/kimi_k2_splits.json
Writes {"pattern": ..., "cases": [{"text": ..., "pieces": [[begin, end] byte offsets, ...]}, ...]}: hand-picked
strings, then seeded random strings over an alphabet of Han, kana, cased Latin and Greek, marks, digits,
punctuation, '/', apostrophes and white space.
"""
import json
import random
import sys

import regex

PATTERN = "|".join([
    r"""[\p{Han}]+""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])

FIXED = [
    "Hello world", "I've been 'told he's there, 'RE you sure?", "我想在apple工作1314151天～",
    "日本語のテキストと漢字", "CamelCaseWordsAndHTTPServer", "path/to/file.txt", "a  b\n\n  c\r\n d",
    "12345 3.14159 ١٢٣", "emoji 🚀🦙 ok", "Ελληνικά ΚΕΦΑΛΑΙΑ", "naïve café résumé", "漢字かな交じり文、〇々。",
    "  leading and trailing  ", "tab\there", "x'S Y'LL z'd", "한국어 텍스트", "mixed漢字Latin字",
]
ALPHABET = list("abcXYZ ΑβγДж") + ["漢", "字", "々", "〇", "か", "カ", "한", "\u0301", "'", "s", "l", "d"] + \
    list("0123456789") + list(".,!?/-_()\"") + [" ", " ", "\n", "\r", "\t", "\u3000", "🚀"]


def pieces(text):
    out, pos = [], 0
    for m in regex.finditer(PATTERN, text, flags=regex.V1):
        assert m.start() == pos, (text, m.start(), pos)  # the pattern covers every character
        b = len(text[:m.start()].encode())
        e = len(text[:m.end()].encode())
        out.append([b, e])
        pos = m.end()
    assert pos == len(text)
    return out


def main():
    rng = random.Random(1234)
    texts = list(FIXED)
    for _ in range(1500):
        texts.append("".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 20))))
    cases = [{"text": t, "pieces": pieces(t)} for t in texts]
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        json.dump({"pattern": PATTERN, "regex_version": regex.__version__, "cases": cases}, f, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
