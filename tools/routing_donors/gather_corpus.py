#!/usr/bin/env python3
"""Gathers the routing donors' corpus: real English prose and source code already installed on this machine.

Each document is one file (prose: package documentation, licences, man pages rendered to text; code: Python's
standard library, npm's JavaScript, C headers). Files are visited in sorted order and each source stops at its byte
budget, so the same machine gives the same corpus. A document goes to the held-out split when the SHA-1 of its id is
0 modulo 20 (5% of the documents), so the split is by document and does not depend on the order of the others.

Writes OUT (JSON lines, xz-compressed): one object per document with "id", "source", "kind" (prose or code), "split"
(train or heldout) and "text"; prints per-source counts and the SHA-256 of the file. Python's standard library only.

    tools/routing_donors/gather_corpus.py /work/gen/donors/corpus.jsonl.xz
"""
import argparse
import gzip
import hashlib
import json
import lzma
import itertools
import os
import subprocess
import sys
import sysconfig
from concurrent.futures import ThreadPoolExecutor

MAX_DOC = 48 * 1024  # bytes of text kept from one file (cut at a line end): no single file dominates
MIN_DOC = 1024  # shorter files are left out


def read_text(path):
    """The file's text (gunzipped when it ends in .gz), or None if it is not UTF-8 text."""
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rb") as f:
            raw = f.read(4 * MAX_DOC)
    except OSError:
        return None
    if b"\0" in raw:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def clip(text):
    """At most MAX_DOC bytes, cut at the last line end before it; carriage returns and trailing blanks dropped."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    data = text.encode("utf-8")
    if len(data) > MAX_DOC:
        cut = data.rfind(b"\n", 0, MAX_DOC)
        data = data[: cut if cut > 0 else MAX_DOC]
        text = data.decode("utf-8", errors="ignore")
    return "\n".join(line.rstrip() for line in text.split("\n")).strip() + "\n"


def walk(root, accept):
    """Files under root accepted by accept(path), in sorted order, symbolic links not followed."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if not os.path.islink(path) and accept(path):
                yield path


def render_man(path):
    """A man page rendered to plain text at 80 columns (backspace overstrikes removed), or None."""
    env = dict(os.environ, MANWIDTH="80", LANG="C.UTF-8", LC_ALL="C.UTF-8")
    env.pop("MAN_KEEP_FORMATTING", None)
    try:
        out = subprocess.run(["man", "--nh", "--nj", "-P", "cat", "-l", path], env=env, capture_output=True,
                             timeout=20, check=False)
        plain = subprocess.run(["col", "-bx"], input=out.stdout, capture_output=True, env=env, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    try:
        return plain.stdout.decode("utf-8")
    except UnicodeDecodeError:
        return None


def one_in(path, n):
    """Whether path is among the 1 in n files chosen by the SHA-1 of its name (spreads a budget over a tree)."""
    return int(hashlib.sha1(path.encode()).hexdigest(), 16) % n == 0


def sources():
    """(source name, kind, byte budget, file iterator, reader) in the order they are gathered."""
    pylib = sysconfig.get_paths()["stdlib"]
    doc_names = ("readme", "news", "faq", "howto", "usage", "manual", "tutorial", "intro", "overview")

    def doc_file(p):
        base = os.path.basename(p).lower()
        stem = base[:-3] if base.endswith(".gz") else base
        return (stem.endswith((".md", ".rst", ".txt")) or stem.startswith(doc_names)) and "changelog" not in stem

    def py_file(p):
        parts = p[len(pylib):].split(os.sep)
        skip = {"test", "tests", "idlelib", "site-packages", "lib2to3", "ensurepip", "turtledemo", "__pycache__"}
        return p.endswith(".py") and not skip.intersection(parts)

    return [
        ("doc", "prose", 12 << 20, walk("/usr/share/doc", doc_file), read_text),
        ("changelog", "prose", 2 << 20, walk("/usr/share/doc", lambda p: "changelog" in os.path.basename(p).lower()),
         read_text),
        ("license", "prose", 2 << 20,
         walk("/usr/share/common-licenses", lambda p: True), read_text),
        ("man", "prose", 5 << 20,
         walk("/usr/share/man", lambda p: os.path.basename(os.path.dirname(p)) in ("man1", "man5", "man7", "man8")
              and one_in(p, 4)), render_man),
        ("python", "code", 8 << 20, walk(pylib, py_file), read_text),
        ("javascript", "code", 2 << 20,
         walk("/usr/lib/node_modules", lambda p: p.endswith((".js", ".mjs")) and ".min." not in p), read_text),
        ("c", "code", 3 << 20, walk("/usr/include", lambda p: p.endswith(".h") and "/boost/" not in p), read_text),
    ]


def read_in_order(files, reader, batch=32):
    """(path, reader(path)) for every file in order; readers run 4 at a time (man pages render slowly)."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        while True:
            chunk = list(itertools.islice(files, batch))
            if not chunk:
                return
            yield from zip(chunk, pool.map(reader, chunk))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="output file (.jsonl.xz)")
    args = ap.parse_args()

    seen = set()  # texts already taken (the same README installed twice counts once)
    totals = {}
    with lzma.open(args.out, "wt", encoding="utf-8", preset=6) as out:
        for name, kind, budget, files, reader in sources():
            used = docs = held = 0
            for path, text in read_in_order(files, reader):
                if used >= budget:
                    break
                if text is None:
                    continue
                text = clip(text)
                size = len(text.encode("utf-8"))
                digest = hashlib.sha256(text.encode("utf-8")).digest()
                if size < MIN_DOC or digest in seen:
                    continue
                seen.add(digest)
                doc_id = name + ":" + path
                split = "heldout" if int(hashlib.sha1(doc_id.encode()).hexdigest(), 16) % 20 == 0 else "train"
                out.write(json.dumps({"id": doc_id, "source": name, "kind": kind, "split": split, "text": text},
                                     ensure_ascii=False) + "\n")
                used += size
                docs += 1
                held += split == "heldout"
            totals[name] = (docs, held, used)
            print(f"{name:<10} {kind:<5} {docs:6d} documents ({held} held out) {used / 1e6:7.2f} MB", flush=True)
    with open(args.out, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    docs = sum(t[0] for t in totals.values())
    held = sum(t[1] for t in totals.values())
    size = sum(t[2] for t in totals.values())
    print(f"total      {docs} documents ({held} held out), {size / 1e6:.2f} MB of text; {args.out} sha256 {sha}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
