#!/usr/bin/env python3
"""The training corpus of Sluice's tiny MoE model, deterministic from a seed.

Two kinds of documents:
- chat tasks whose answers can be checked exactly: addition and subtraction of numbers up to 999, counting a
  letter in a word, spelling and reversing a word, and the capital of a country;
- public-domain prose: the King James Bible as Debian's `bible-kjv` package prints it (`bible Gen1:1-Rev22:21`).

The held-out split is kept apart by construction: held-out arithmetic pairs, (word, letter) pairs, reversed
words and capital-question phrasings never occur in training, and held-out chapters of the Bible are never
trained on. Everything else follows from `random.Random(seed)`.

Usage (writes kjv.txt, heldout.jsonl, heldout_large.jsonl, heldout_prose.txt, tokenizer_texts.txt):
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
            return (f"What is {a} + {b}?", str(a + b)) if task == "add" else (f"What is {a} - {b}?", str(a - b))
        if task == "count":
            w = self.word(rng, heldout)
            c = rng.choice(w) if rng.random() < 0.8 else rng.choice(self.letters)
            if self.held(f"count:{w}:{c}") != heldout:
                return None
            return f'How many times does the letter "{c}" appear in "{w}"?', str(w.count(c))
        if task == "reverse":
            w = self.word(rng, heldout)
            if w in self.word_set and self.held(f"reverse:{w}", 0.15) != heldout:
                return None
            return f'Reverse the word "{w}".', w[::-1]
        if task == "spell":  # all words: teaches the letters of every word, held-out ones included
            if heldout:
                return None
            w = self.word(rng, heldout)
            return f'Spell the word "{w}".', "-".join(w)
        if task == "capital":
            c, cap = rng.choice(CAPITALS)
            if heldout:
                return CAPITAL_HELDOUT.format(c=c), cap
            return rng.choice(CAPITAL_TRAIN).format(c=c), cap
        raise ValueError(task)


def chat(question, answer=None):
    """The ChatML rendering the chat template produces (with the generation prompt), plus the answer."""
    prompt = f"<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n"
    return prompt if answer is None else (prompt, answer + "<|im_end|>\n")


def heldout_questions(gen, seed, per_task, salt):
    rng = random.Random(f"{seed}:{salt}")
    out, seen = [], set()
    for task, n in per_task.items():
        got = 0
        n = min(n, len(CAPITALS)) if task == "capital" else n  # each country once
        while got < n:
            q, a = gen.make(task, rng, heldout=True)
            if q in seen:
                continue
            seen.add(q)
            out.append({"task": task, "question": q, "answer": a})
            got += 1
    return out


def training_stream(gen, train_prose, seed, prose_fraction=0.008):
    """Endless training documents: ("prose", text) or ("chat", prompt, answer). Prose is rare (0.8% of documents,
    about 3% of tokens): the Bible is ~1M tokens, and more epochs of it make the model memorise it (held-out
    perplexity rises again)."""
    rng = random.Random(f"{seed}:train")
    weights = {"add": 0.22, "sub": 0.22, "count": 0.16, "reverse": 0.16, "spell": 0.12, "capital": 0.12}
    names, w = list(weights), list(weights.values())
    while True:
        if rng.random() < prose_fraction:
            yield ("prose", rng.choice(train_prose))
        else:
            task = rng.choices(names, w)[0]
            q, a = gen.make(task, rng, heldout=False)
            yield ("chat",) + chat(q, a)


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
    # Texts for the tokenizer: all training prose plus 60000 training chat documents (specials removed).
    stream = training_stream(gen, train_prose, args.seed, prose_fraction=0.0)
    chats = [next(stream) for _ in range(60000)]
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
