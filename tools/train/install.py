#!/usr/bin/env python3
"""Install one training run's outputs into the repository (no PyTorch needed).

    python3 tools/train/install.py --run RUN_DIR --corpus CORPUS_DIR [--draft DRAFT_DIR]

RUN_DIR is train.py's --out (hf/, reference/, metrics.json). Copies the checkpoint to models/sluice-tiny-moe/,
the reference logits to tests/fixtures/reference/trained_moe/, the held-out questions (plain, and the tool, JSON
and no-tool tasks) and prose to tests/fixtures/trained/, and the PyTorch-side numbers the tests compare against
to tests/fixtures/trained/pytorch_metrics.json. DRAFT_DIR (the draft's train.py --out, with agreement.json) adds
the draft's numbers to tests/fixtures/trained/draft_metrics.json; its checkpoint is not copied (only its GGUF
ships). Converting to GGUF is train.sh's next step.
"""

import argparse
import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KEEP = ["seed", "steps", "steps_done", "batch", "seq", "lr", "parameters", "config", "rope_theta", "train_seconds",
        "total_seconds", "device", "torch", "transformers", "perplexity", "answers_fixture", "fixture_prose_ids",
        "tokenizer_samples", "arch", "answers_fixture_nothink"]
ACCURACY = ("accuracy_fixture", "accuracy_fixture_nothink", "accuracy_large")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--draft")
    args = ap.parse_args()
    run, corpus = Path(args.run), Path(args.corpus)
    targets = {
        run / "hf": ROOT / "models" / "sluice-tiny-moe",
        run / "reference": ROOT / "tests" / "fixtures" / "reference" / "trained_moe",
    }
    for src, dst in targets.items():
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(src, dst)
        for f in dst.iterdir():
            f.chmod(0o644)
    trained = ROOT / "tests" / "fixtures" / "trained"
    trained.mkdir(parents=True, exist_ok=True)
    for name in ("heldout.jsonl", "heldout_prose.txt", "heldout_tools.jsonl"):
        shutil.copyfile(corpus / name, trained / name)
    m = json.loads((run / "metrics.json").read_text())
    out = {k: m[k] for k in KEEP}
    for k in ACCURACY:
        out[k] = {f: m[k][f] for f in ("overall", "per_task", "counts")}
    out["tool_skills"] = m["tool_skills"]["per_kind"]
    (trained / "pytorch_metrics.json").write_text(json.dumps(out, indent=1) + "\n")
    if args.draft:
        d = json.loads((Path(args.draft) / "metrics.json").read_text())
        dm = {k: d[k] for k in KEEP if k in d and k not in ("fixture_prose_ids", "tokenizer_samples")}
        for k in ACCURACY:
            dm[k] = {f: d[k][f] for f in ("overall", "per_task", "counts")}
        dm["tool_skills"] = d["tool_skills"]["per_kind"]
        dm["agreement_with_model"] = {
            k: {"rate": v[0], "tokens": v[1]}
            for k, v in json.loads((Path(args.draft) / "agreement.json").read_text()).items()}
        (trained / "draft_metrics.json").write_text(json.dumps(dm, indent=1) + "\n")
    print(f"installed: accuracy {out['accuracy_fixture']['overall']:.4f} (200 held-out), "
          f"{out['accuracy_large']['overall']:.4f} (large), perplexity {out['perplexity']['fixture']:.4f}")


if __name__ == "__main__":
    main()
