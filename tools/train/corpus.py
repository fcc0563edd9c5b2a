#!/usr/bin/env python3
"""The training corpus of Sluice's tiny MoE model (and its draft), deterministic from a seed.

Documents:
- chat tasks whose answers can be checked exactly: addition and subtraction of numbers up to 999, counting a
  letter in a word, spelling and reversing a word, and the capital of a country; each either in thinking mode (a
  brief think block, then the answer) or after the empty think block that enable_thinking false renders;
- tool use in the Qwen3 / Hermes format (tools listed in a system turn, <tool_call> blocks, results as
  <tool_response> blocks in a user turn): a calculator for products and 4-digit sums, get_capital, two calls in
  one turn; each exchange gives two documents, the call turn and the answer turn after the results;
- questions answered with a JSON object, and tasks asked with tools offered that need none;
- public-domain prose: the King James Bible as Debian's `bible-kjv` package prints it (`bible Gen1:1-Rev22:21`).
Every prompt is what tools/train/sluice-tiny-moe.jinja renders (`render`); only the reply is in the loss.

The held-out split is kept apart by construction: held-out arithmetic pairs, (word, letter) pairs, reversed
words, capital-question phrasings and calculator expressions never occur in training, get_capital's held-out
countries occur nowhere in training, and held-out chapters of the Bible are never trained on. Everything else
follows from `random.Random(seed)`.

Usage (writes kjv.txt, heldout.jsonl, heldout_large.jsonl, heldout_tools.jsonl, heldout_prose.txt,
heldout_prose_all.txt, tokenizer_texts.txt):
    python3 tools/train/corpus.py --out build/train/corpus [--seed 1] [--kjv FILE]
Imported by train.py, which draws the training documents from `training_stream`.
"""

import argparse
import json
import random
import re
import subprocess
from collections import Counter
from pathlib import Path

TASKS = ["add", "sub", "count", "reverse", "spell", "capital"]
HELDOUT_PER_TASK = 200  # heldout_large.jsonl: PyTorch-side accuracy per task
FIXTURE_PER_TASK = {"add": 40, "sub": 40, "count": 40, "reverse": 40, "capital": 40}  # heldout.jsonl: 200
HELDOUT_CHAPTER_EVERY = 40  # every 40th chapter is held-out prose
PROSE_FIXTURE_BYTES = 8000

# Country -> capital: the fact table (well-known pairs, single names).
CAPITALS = [
    ("France", "Paris"), ("Germany", "Berlin"), ("Italy", "Rome"), ("Spain", "Madrid"), ("Portugal", "Lisbon"),
    ("Greece", "Athens"), ("Austria", "Vienna"), ("Hungary", "Budapest"), ("Poland", "Warsaw"),
    ("Ireland", "Dublin"), ("Norway", "Oslo"), ("Sweden", "Stockholm"), ("Finland", "Helsinki"),
    ("Denmark", "Copenhagen"), ("Iceland", "Reykjavik"), ("Russia", "Moscow"), ("Ukraine", "Kyiv"),
    ("Romania", "Bucharest"), ("Bulgaria", "Sofia"), ("Serbia", "Belgrade"), ("Croatia", "Zagreb"),
    ("Belgium", "Brussels"), ("Netherlands", "Amsterdam"), ("Switzerland", "Bern"), ("Czechia", "Prague"),
    ("Slovakia", "Bratislava"), ("Slovenia", "Ljubljana"), ("Estonia", "Tallinn"), ("Latvia", "Riga"),
    ("Lithuania", "Vilnius"), ("Turkey", "Ankara"), ("Egypt", "Cairo"), ("Kenya", "Nairobi"),
    ("Nigeria", "Abuja"), ("Ghana", "Accra"), ("Ethiopia", "Addis Ababa"), ("Morocco", "Rabat"),
    ("Tunisia", "Tunis"), ("Algeria", "Algiers"), ("Senegal", "Dakar"), ("Uganda", "Kampala"),
    ("Zimbabwe", "Harare"), ("Japan", "Tokyo"), ("China", "Beijing"), ("India", "New Delhi"),
    ("Pakistan", "Islamabad"), ("Thailand", "Bangkok"), ("Vietnam", "Hanoi"), ("Indonesia", "Jakarta"),
    ("Philippines", "Manila"), ("Malaysia", "Kuala Lumpur"), ("Nepal", "Kathmandu"), ("Iran", "Tehran"),
    ("Iraq", "Baghdad"), ("Syria", "Damascus"), ("Jordan", "Amman"), ("Lebanon", "Beirut"),
    ("Mongolia", "Ulaanbaatar"), ("Afghanistan", "Kabul"), ("Bangladesh", "Dhaka"), ("Australia", "Canberra"),
    ("Canada", "Ottawa"), ("Mexico", "Mexico City"), ("Cuba", "Havana"), ("Peru", "Lima"), ("Chile", "Santiago"),
    ("Argentina", "Buenos Aires"), ("Colombia", "Bogota"), ("Venezuela", "Caracas"), ("Ecuador", "Quito"),
    ("Uruguay", "Montevideo"), ("Paraguay", "Asuncion"), ("Bolivia", "Sucre"), ("Brazil", "Brasilia"),
    ("Jamaica", "Kingston"), ("Panama", "Panama City"), ("Qatar", "Doha"), ("Oman", "Muscat"),
    ("Yemen", "Sanaa"), ("Israel", "Jerusalem"),
]
# The capital task's phrasings: training uses six, held-out questions a seventh, so a held-out
# question asks a fact seen in training in a phrasing never seen in training.
CAPITAL_TRAIN = ["What is the capital of {c}?", "Name the capital city of {c}.", "{c} has which city as its capital?",
                 "Tell me the capital of {c}.", "What is {c}'s capital?", "The capital of {c} is called what?"]
CAPITAL_HELDOUT = "Which city is the capital of {c}?"


# ---------------------------------------------------------------- prose


def read_kjv(path=None):
    """The KJV as a list of (heading, [verse texts]) chapters, from `bible` or a saved copy of its output."""
    if path:
        text = Path(path).read_text(encoding="utf-8")
    else:
        text = subprocess.run(["bible", "Gen1:1-Rev22:21"], check=True, capture_output=True, text=True).stdout
    chapters, heading, verses = [], None, []
    for line in text.split("\n"):
        if not line.strip():
            continue
        m = re.match(r"^ +(\d+) (.*)$", line)
        if m:
            verses.append(m.group(2).strip())
        elif verses and not re.match(r"^\S.* \d+$", line):
            verses[-1] += " " + line.strip()
        else:
            if heading is not None:
                chapters.append((heading, verses))
            heading, verses = line.strip(), []
    if heading is not None:
        chapters.append((heading, verses))
    return text, chapters


def paragraphs(verses, target=600):
    """Verses joined into paragraphs of about `target` characters, split at verse boundaries."""
    out, cur = [], ""
    for v in verses:
        cur = (cur + " " + v) if cur else v
        if len(cur) >= target:
            out.append(cur)
            cur = ""
    if cur:
        out.append(cur)
    return out


def split_prose(chapters):
    """(training paragraphs, held-out paragraphs): every HELDOUT_CHAPTER_EVERY-th chapter is held out."""
    train, held = [], []
    for i, (heading, verses) in enumerate(chapters):
        paras = paragraphs(verses)
        if paras:
            paras[0] = heading + "\n\n" + paras[0]
        (held if i % HELDOUT_CHAPTER_EVERY == HELDOUT_CHAPTER_EVERY // 2 else train).extend(paras)
    return train, held


def word_list(chapters, n=1500):
    """The task vocabulary: the n most frequent lower-case words of 3 to 7 letters, sorted."""
    counts = Counter()
    for _, verses in chapters:
        for v in verses:
            counts.update(w for w in re.findall(r"\b[A-Za-z]+\b", v) if w.islower() and 3 <= len(w) <= 7)
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
    return sorted(w for w, _ in top)


# ---------------------------------------------------------------- tasks


class tasks:
    """Question generators; `held` decides which items belong to the held-out split."""

    def __init__(self, words):
        self.words = words
        self.word_set = set(words)
        self.letters = "abcdefghijklmnopqrstuvwxyz"

    def word(self, rng, heldout):
        """A word of the list, or in training half the time a random string of 3 to 7 letters (never a listed
        word), so that spelling, counting and reversing are learnt as procedures rather than memorised."""
        if heldout or rng.random() < 0.5:
            return rng.choice(self.words)
        while True:
            w = "".join(rng.choice(self.letters) for _ in range(rng.randint(3, 7)))
            if w not in self.word_set:
                return w

    @staticmethod
    def number(rng):
        digits = rng.choice([1, 2, 3, 3])
        return rng.randrange(0 if digits == 1 else 10 ** (digits - 1), 10 ** digits)

    # Held-out membership: a fixed hash of the item, so training never draws a held-out item.
    @staticmethod
    def held(key, fraction=0.1):
        h = 2166136261
        for ch in key.encode():
            h = ((h ^ ch) * 16777619) & 0xFFFFFFFF
        return (h % 1000) < fraction * 1000

    def make(self, task, rng, heldout):
        """One (question, answer) of `task` from the split `heldout` says."""
        return self.make_thought(task, rng, heldout)[:2]

    def make_thought(self, task, rng, heldout):
        """One (question, answer, thought) of `task`: the thought is the brief reasoning written before the
        answer in thinking mode."""
        while True:
            q = self._make(task, rng, heldout)
            if q is not None:
                return q

    def _make(self, task, rng, heldout):
        if task in ("add", "sub"):
            a, b = self.number(rng), self.number(rng)
            if task == "sub" and a < b:
                a, b = b, a
            if self.held(f"{task}:{a}:{b}") != heldout:
                return None
            if task == "add":
                return f"What is {a} + {b}?", str(a + b), f"I add {a} and {b}."
            return f"What is {a} - {b}?", str(a - b), f"I subtract {b} from {a}."
        if task == "count":
            w = self.word(rng, heldout)
            c = rng.choice(w) if rng.random() < 0.8 else rng.choice(self.letters)
            if self.held(f"count:{w}:{c}") != heldout:
                return None
            return (f'How many times does the letter "{c}" appear in "{w}"?', str(w.count(c)),
                    f'"{w}" is spelled {"-".join(w)}. I count the letter "{c}".')
        if task == "reverse":
            w = self.word(rng, heldout)
            if w in self.word_set and self.held(f"reverse:{w}", 0.15) != heldout:
                return None
            return f'Reverse the word "{w}".', w[::-1], f'"{w}" is spelled {"-".join(w)}. I read it backwards.'
        if task == "spell":  # all words: teaches the letters of every word, held-out ones included
            if heldout:
                return None
            w = self.word(rng, heldout)
            return f'Spell the word "{w}".', "-".join(w), f'I write the letters of "{w}" with dashes.'
        if task == "capital":
            c, cap = rng.choice(CAPITALS)
            if heldout:
                return CAPITAL_HELDOUT.format(c=c), cap, f"The user asks for the capital of {c}."
            return rng.choice(CAPITAL_TRAIN).format(c=c), cap, f"The user asks for the capital of {c}."
        raise ValueError(task)


# ---------------------------------------------------------------- chat rendering

# The tools the model is taught to call, exactly as an OpenAI client sends them (the template prints each with
# tojson, so the key order here is the order on the wire).
TOOL_CALCULATOR = {"type": "function", "function": {
    "name": "calculator", "description": "Evaluate an arithmetic expression.",
    "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}}}
TOOL_CAPITAL = {"type": "function", "function": {
    "name": "get_capital", "description": "Look up the capital city of a country.",
    "parameters": {"type": "object", "properties": {"country": {"type": "string"}}, "required": ["country"]}}}
TOOLS = {"calculator": TOOL_CALCULATOR, "get_capital": TOOL_CAPITAL}


def render(messages, tools=None, add_generation_prompt=True, enable_thinking=True):
    """What tools/train/sluice-tiny-moe.jinja renders (tools/train/check_template.py checks that this, jinja2 and
    Sluice agree): ChatML turns, the tools in a system turn, assistant tool calls as <tool_call> blocks, tool
    results as <tool_response> blocks in a user turn, and with enable_thinking false an empty think block after
    the generation prompt."""
    out = ""
    if tools:
        out += "<|im_start|>system\n"
        if messages and messages[0]["role"] == "system":
            out += messages[0]["content"] + "\n\n"
        out += "# Tools\n\nFunctions you may call, one JSON signature per line:\n<tools>"
        for t in tools:
            out += "\n" + json.dumps(t, ensure_ascii=False)
        out += ("\n</tools>\n\nTo call a function, write:\n<tool_call>\n"
                '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n')
    elif messages and messages[0]["role"] == "system":
        out += "<|im_start|>system\n" + messages[0]["content"] + "<|im_end|>\n"
    for i, m in enumerate(messages):
        role = m["role"]
        if role == "user" or (role == "system" and i > 0):
            out += f"<|im_start|>{role}\n{m['content']}<|im_end|>\n"
        elif role == "assistant":
            content = m.get("content") or ""
            if "</think>" in content:
                content = content.split("</think>")[-1].lstrip("\n")
            out += "<|im_start|>assistant\n" + content
            for j, call in enumerate(m.get("tool_calls") or []):
                if content or j > 0:
                    out += "\n"
                fn = call.get("function", call)
                args = fn["arguments"]
                out += '<tool_call>\n{"name": "' + fn["name"] + '", "arguments": '
                out += (args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)) + "}\n</tool_call>"
            out += "<|im_end|>\n"
        elif role == "tool":
            if i == 0 or messages[i - 1]["role"] != "tool":
                out += "<|im_start|>user"
            out += "\n<tool_response>\n" + m["content"] + "\n</tool_response>"
            if i == len(messages) - 1 or messages[i + 1]["role"] != "tool":
                out += "<|im_end|>\n"
    if add_generation_prompt:
        out += "<|im_start|>assistant\n"
        if not enable_thinking:
            out += "<think>\n\n</think>\n\n"
    return out


def reply(text, thought, thinking):
    """An assistant reply as the model writes it: with a think block in thinking mode (the prompt ended at
    '<|im_start|>assistant\n'), directly otherwise (the prompt already holds an empty think block)."""
    body = f"<think>\n{thought}\n</think>\n\n{text}" if thinking else text
    return body + "<|im_end|>\n"


def chat(question, answer=None, thought=None):
    """The prompt the chat template renders for one user question (thinking mode: no empty think block), plus
    the trained reply (with its think block when `thought` is given)."""
    prompt = render([{"role": "user", "content": question}])
    if answer is None:
        return prompt
    return prompt, (answer + "<|im_end|>\n" if thought is None else reply(answer, thought, True))


def call_text(name, args):
    return '<tool_call>\n{"name": "' + name + '", "arguments": ' + json.dumps(args) + "}\n</tool_call>"


# ---------------------------------------------------------------- tool, thinking and JSON tasks

# Capitals used only through get_capital: the model copies the tool's answer rather than knowing it. The
# held-out tool questions ask about countries that occur nowhere in training.
TOOL_CAPITALS_TRAIN = [
    ("Albania", "Tirana"), ("Armenia", "Yerevan"), ("Azerbaijan", "Baku"), ("Belarus", "Minsk"),
    ("Bhutan", "Thimphu"), ("Botswana", "Gaborone"), ("Cambodia", "Phnom Penh"), ("Cameroon", "Yaounde"),
    ("Chad", "N'Djamena"), ("Cyprus", "Nicosia"), ("Eritrea", "Asmara"), ("Fiji", "Suva"), ("Gabon", "Libreville"),
    ("Georgia", "Tbilisi"), ("Guatemala", "Guatemala City"), ("Guinea", "Conakry"), ("Haiti", "Port-au-Prince"),
    ("Honduras", "Tegucigalpa"), ("Kuwait", "Kuwait City"), ("Laos", "Vientiane"), ("Liberia", "Monrovia"),
    ("Libya", "Tripoli"), ("Luxembourg", "Luxembourg"), ("Madagascar", "Antananarivo"), ("Malawi", "Lilongwe"),
    ("Mali", "Bamako"), ("Malta", "Valletta"), ("Moldova", "Chisinau"), ("Montenegro", "Podgorica"),
    ("Mozambique", "Maputo"), ("Namibia", "Windhoek"), ("Nicaragua", "Managua"), ("Niger", "Niamey"),
    ("Rwanda", "Kigali"), ("Samoa", "Apia"), ("Somalia", "Mogadishu"), ("Sudan", "Khartoum"),
    ("Suriname", "Paramaribo"), ("Tajikistan", "Dushanbe"), ("Tanzania", "Dodoma"), ("Togo", "Lome"),
    ("Tonga", "Nuku'alofa"), ("Zambia", "Lusaka"), ("Bahrain", "Manama"), ("Brunei", "Bandar Seri Begawan"),
    ("Burundi", "Gitega"), ("Djibouti", "Djibouti"), ("Gambia", "Banjul"), ("Guyana", "Georgetown"),
    ("Kosovo", "Pristina"), ("Lesotho", "Maseru"), ("Maldives", "Male"), ("Mauritania", "Nouakchott"),
    ("Myanmar", "Naypyidaw"), ("Palau", "Ngerulmud"), ("Seychelles", "Victoria"), ("Singapore", "Singapore"),
    ("Uzbekistan", "Tashkent"), ("Vanuatu", "Port Vila"), ("Angola", "Luanda"), ("Benin", "Porto-Novo"),
]
TOOL_CAPITALS_HELDOUT = [
    ("Kazakhstan", "Astana"), ("Kyrgyzstan", "Bishkek"), ("Turkmenistan", "Ashgabat"), ("Sri Lanka", "Colombo"),
    ("Costa Rica", "San Jose"), ("El Salvador", "San Salvador"), ("Belize", "Belmopan"), ("Andorra", "Andorra la Vella"),
    ("Monaco", "Monaco"), ("Liechtenstein", "Vaduz"), ("Sierra Leone", "Freetown"), ("Mauritius", "Port Louis"),
    ("Barbados", "Bridgetown"), ("Bahamas", "Nassau"), ("Nauru", "Yaren"), ("Kiribati", "Tarawa"),
    ("Eswatini", "Mbabane"), ("Comoros", "Moroni"), ("Grenada", "St. George's"), ("Dominica", "Roseau"),
]
CALC_QUESTIONS = ["What is {e}?", "Calculate {e}.", "Use the calculator to work out {e}.", "How much is {e}?"]
# (Not CAPITAL_HELDOUT's phrasing: that one stays unseen in training.)
CAPITAL_TOOL_QUESTIONS = ["What is the capital of {c}?", "Look up the capital of {c}.",
                          "Find the capital city of {c}.", "Tell me the capital of {c}."]
JSON_CAPITAL = 'Give the capital of {c} as JSON with the keys "country" and "capital".'
JSON_SUM = 'What is {a} + {b}? Answer in JSON with the key "answer".'
JSON_COUNT = 'How many times does the letter "{c}" appear in "{w}"? Answer in JSON with the key "count".'


def made_up_name(rng):
    """A pronounceable made-up place name (one word, or two a fifth of the time), so that get_capital is learnt
    as copying: the country from the question into the call, the capital from the tool's answer into the reply.
    Real countries alone were memorised as 143 fixed pairs, and the model did not copy unseen ones."""
    def word():
        w = "".join(rng.choice("bdfghklmnprstvzcj") + rng.choice("aeiou") for _ in range(rng.randint(2, 4)))
        return (w + rng.choice(["", "", "n", "r", "s", "l"])).capitalize()
    return word() if rng.random() < 0.8 else word() + " " + word()


def capital_pair(rng, heldout):
    """(country, capital) for a get_capital exchange: held-out real countries never trained on, or in training
    a made-up pair half the time and a real one otherwise."""
    if heldout:
        return rng.choice(TOOL_CAPITALS_HELDOUT)
    if rng.random() < 0.5:
        return made_up_name(rng), made_up_name(rng)
    return rng.choice(TOOL_CAPITALS_TRAIN + CAPITALS)


def capital_result(cap, rng):
    """The tool's answer as a client writes it: JSON with or without spaces (JSON.stringify writes none)."""
    return json.dumps({"capital": cap}, separators=(",", ":") if rng.random() < 0.5 else (", ", ": "))


def calc_item(rng, heldout, held):
    """A calculation the model cannot do itself: a product, or a sum or difference with a 4-digit operand.
    Returns (expression, value)."""
    while True:
        kind = rng.random()
        if kind < 0.6:
            a, b = rng.randrange(2, 100), rng.randrange(2, 1000)
            e, v = f"{a} * {b}", a * b
        elif kind < 0.8:
            a, b = rng.randrange(1000, 10000), rng.randrange(1, 10000)
            e, v = f"{a} + {b}", a + b
        else:
            a, b = rng.randrange(1000, 10000), rng.randrange(1, 1000)
            e, v = f"{a} - {b}", a - b
        if held(f"calc:{e}") == heldout:
            return e, str(v)


def tool_conversation(kind, rng, heldout, gen):
    """One tool-use exchange: (question, tool set, calls [(name, args, result)], final answer, first thought,
    last thought)."""
    if kind == "calc":
        e, v = calc_item(rng, heldout, gen.held)
        q = rng.choice(CALC_QUESTIONS).format(e=e)
        return (q, ["calculator"], [("calculator", {"expression": e}, v)], f"{e} = {v}.",
                f"I need {e}. I will use the calculator.", f"The calculator returned {v}.")
    if kind == "capital":
        c, cap = capital_pair(rng, heldout)
        q = rng.choice(CAPITAL_TOOL_QUESTIONS).format(c=c)
        return (q, ["get_capital"], [("get_capital", {"country": c}, capital_result(cap, rng))],
                f"The capital of {c} is {cap}.", f"I will look up the capital of {c}.",
                f"The tool says the capital of {c} is {cap}.")
    if kind == "calc2":
        (e1, v1), (e2, v2) = calc_item(rng, heldout, gen.held), calc_item(rng, heldout, gen.held)
        q = f"What are {e1} and {e2}?"
        return (q, ["calculator"], [("calculator", {"expression": e1}, v1), ("calculator", {"expression": e2}, v2)],
                f"{e1} = {v1} and {e2} = {v2}.", "I need two results. I will call the calculator twice.",
                f"The calculator returned {v1} and {v2}.")
    if kind == "capital2":
        (c1, k1), (c2, k2) = capital_pair(rng, heldout), capital_pair(rng, heldout)
        while c2 == c1:
            c2, k2 = capital_pair(rng, heldout)
        q = f"What are the capitals of {c1} and {c2}?"
        calls = [("get_capital", {"country": c1}, capital_result(k1, rng)),
                 ("get_capital", {"country": c2}, capital_result(k2, rng))]
        return (q, ["get_capital"], calls, f"The capital of {c1} is {k1} and the capital of {c2} is {k2}.",
                "I will look up both capitals.", f"The tool says {k1} and {k2}.")
    raise ValueError(kind)


def tool_documents(kind, rng, heldout, gen, thinking, compact_args=False, both_tools=None):
    """The two generation points of one tool exchange as (prompt, reply) pairs: the call turn, then the answer
    turn after the tool results. The history's call turn is rendered as a client sends it back (content empty,
    arguments as a JSON string, reasoning dropped)."""
    q, needed, calls, answer, t1, t2 = tool_conversation(kind, rng, heldout, gen)
    names = ["calculator", "get_capital"] if (both_tools if both_tools is not None else rng.random() < 0.6) \
        else needed
    if len(names) == 2 and rng.random() < 0.5:
        names = names[::-1]
    tools = [TOOLS[n] for n in names]
    msgs = [{"role": "user", "content": q}]
    first = render(msgs, tools, enable_thinking=thinking)
    call_block = "\n".join(call_text(n, a) for n, a, _ in calls)
    sep = (",", ":") if compact_args else (", ", ": ")
    history = {"role": "assistant", "content": "", "tool_calls": [
        {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a, separators=sep)}}
        for i, (n, a, _) in enumerate(calls)]}
    msgs2 = msgs + [history] + [{"role": "tool", "content": r} for _, _, r in calls]
    second = render(msgs2, tools, enable_thinking=thinking)
    return [(first, reply(call_block, t1, thinking)), (second, reply(answer, t2, thinking))], {
        "question": q, "tools": names, "calls": [[n, a] for n, a, _ in calls],
        "results": [r for _, _, r in calls], "answer": answer}


def json_task(rng, heldout, gen):
    """(question, JSON answer, thought): an object that answers a question, for structured output."""
    kind = rng.random()
    if kind < 0.4:
        c, cap = rng.choice(CAPITALS)
        return JSON_CAPITAL.format(c=c), json.dumps({"country": c, "capital": cap}), \
            f"The user wants the capital of {c} as JSON."
    if kind < 0.7:
        q, a, _ = gen.make_thought("add", rng, heldout)
        x, y = re.findall(r"\d+", q)
        return JSON_SUM.format(a=x, b=y), json.dumps({"answer": int(a)}), f"I add {x} and {y} and write JSON."
    q, a, t = gen.make_thought("count", rng, heldout)
    c, w = re.findall(r'"([^"]*)"', q)
    return JSON_COUNT.format(c=c, w=w), json.dumps({"count": int(a)}), t


def heldout_questions(gen, seed, per_task, salt):
    rng = random.Random(f"{seed}:{salt}")
    out, seen = [], set()
    for task, n in per_task.items():
        got = 0
        n = min(n, len(CAPITALS)) if task == "capital" else n  # each country once
        while got < n:
            q, a, t = gen.make_thought(task, rng, heldout=True)
            if q in seen:
                continue
            seen.add(q)
            out.append({"task": task, "question": q, "answer": a, "thought": t})
            got += 1
    return out


TOOL_KINDS = ["calc", "capital", "calc2", "capital2"]


def heldout_tool_tasks(gen, seed, per_kind=40):
    """Held-out tool exchanges (calculations whose expression hashes to the held-out split, countries never
    trained), each kind with and without thinking; plus held-out JSON questions and questions that need no tool
    though tools are offered."""
    rng = random.Random(f"{seed}:tools")
    out = []
    for kind in TOOL_KINDS:
        for i in range(per_kind):
            thinking = i % 2 == 0
            docs, info = tool_documents(kind, rng, True, gen, thinking, compact_args=i % 4 >= 2)
            out.append(dict(kind=kind, thinking=thinking, call_prompt=docs[0][0], call_reply=docs[0][1],
                            answer_prompt=docs[1][0], answer_reply=docs[1][1], **info))
    for i in range(per_kind):
        thinking = i % 2 == 0
        q, a, _ = json_task(rng, True, gen)
        out.append(dict(kind="json", thinking=thinking, question=q, answer=a,
                        call_prompt=render([{"role": "user", "content": q}], enable_thinking=thinking)))
    for i in range(per_kind):
        thinking = i % 2 == 0
        task = rng.choice(["add", "sub", "count", "reverse"])
        q, a = gen.make(task, rng, heldout=True)
        tools = [TOOL_CALCULATOR, TOOL_CAPITAL]
        out.append(dict(kind="no_tool", thinking=thinking, question=q, answer=a, tools=["calculator", "get_capital"],
                        call_prompt=render([{"role": "user", "content": q}], tools, enable_thinking=thinking)))
    return out


def training_stream(gen, train_prose, seed, prose_fraction=0.008):
    """Endless training documents: ("prose", text) or ("chat", prompt, reply), the reply alone in the loss.
    Prose is rare (0.8% of documents, about 3% of tokens): the Bible is ~1M tokens, and more epochs of it make
    the model memorise it (held-out perplexity rises again). Chats: the six tasks (each in thinking mode, with a
    brief think block before the answer, or after an empty think block as enable_thinking false renders it),
    tool exchanges (each yields its call turn and its answer turn), JSON answers, and tasks asked with tools
    offered that need none."""
    rng = random.Random(f"{seed}:train")
    weights = {"add": 0.22, "sub": 0.22, "count": 0.16, "reverse": 0.16, "spell": 0.12, "capital": 0.12}
    names, w = list(weights), list(weights.values())
    while True:
        r = rng.random()
        if r < prose_fraction:
            yield ("prose", rng.choice(train_prose))
            continue
        thinking = rng.random() < 0.5
        r = rng.random()
        if r < 0.70:
            task = rng.choices(names, w)[0]
            q, a, t = gen.make_thought(task, rng, heldout=False)
            yield ("chat", render([{"role": "user", "content": q}], enable_thinking=thinking), reply(a, t, thinking))
        elif r < 0.86:
            kind = rng.choices(TOOL_KINDS, [0.35, 0.37, 0.13, 0.15])[0]
            docs, _ = tool_documents(kind, rng, False, gen, thinking, compact_args=rng.random() < 0.5)
            for prompt, rep in docs:
                yield ("chat", prompt, rep)
        elif r < 0.93:
            q, a, t = json_task(rng, False, gen)
            yield ("chat", render([{"role": "user", "content": q}], enable_thinking=thinking), reply(a, t, thinking))
        else:  # tools offered, none needed (capital questions always go to get_capital when it is offered)
            task = rng.choices(names[:-1], w[:-1])[0]
            q, a, t = gen.make_thought(task, rng, heldout=False)
            tools = [TOOL_CALCULATOR, TOOL_CAPITAL] if rng.random() < 0.6 else [rng.choice(list(TOOLS.values()))]
            yield ("chat", render([{"role": "user", "content": q}], tools, enable_thinking=thinking),
                   reply(a, "No tool is needed. " + t, thinking))


def build(seed, kjv_path=None):
    raw, chapters = read_kjv(kjv_path)
    train_prose, held_prose = split_prose(chapters)
    gen = tasks(word_list(chapters))
    return raw, gen, train_prose, held_prose


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kjv", help="saved output of `bible Gen1:1-Rev22:21` (default: run bible)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    raw, gen, train_prose, held_prose = build(args.seed, args.kjv)
    (out / "kjv.txt").write_text(raw, encoding="utf-8")
    small = heldout_questions(gen, args.seed, FIXTURE_PER_TASK, "fixture")
    large = heldout_questions(gen, args.seed, {t: HELDOUT_PER_TASK for t in TASKS if t != "spell"}, "large")
    for name, rows in (("heldout.jsonl", small), ("heldout_large.jsonl", large)):
        with open(out / name, "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    fixture_prose = ""
    for p in held_prose:
        if len(fixture_prose) + len(p) > PROSE_FIXTURE_BYTES:
            break
        fixture_prose += p + "\n\n"
    (out / "heldout_prose.txt").write_text(fixture_prose, encoding="utf-8")
    (out / "heldout_prose_all.txt").write_text("\n\n".join(held_prose) + "\n", encoding="utf-8")
    tool_rows = heldout_tool_tasks(gen, args.seed)
    with open(out / "heldout_tools.jsonl", "w", encoding="utf-8") as f:
        for r in tool_rows:
            f.write(json.dumps(r) + "\n")
    # Texts for the tokenizer: all training prose plus 60000 training chat documents (specials removed).
    stream = training_stream(gen, train_prose, args.seed, prose_fraction=0.0)
    chats = [d for d in (next(stream) for _ in range(60000)) if d[0] == "chat"]
    with open(out / "tokenizer_texts.txt", "w", encoding="utf-8") as f:
        for p in train_prose:
            f.write(p + "\n\n")
        for _, prompt, answer in chats:
            f.write(re.sub(r"<\|[a-z_]+\|>", "", prompt + answer))
    print(f"corpus: {len(train_prose)} training paragraphs, {len(held_prose)} held-out paragraphs, "
          f"{len(gen.words)} words, {len(small)} fixture questions, {len(large)} large held-out questions, "
          f"{len(fixture_prose)} bytes of fixture prose")


if __name__ == "__main__":
    main()
