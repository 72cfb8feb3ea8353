"""The local embedder's WordPiece gives the ids the `tokenizers` library gives for the model's file.

Every stored vector was embedded from these ids: a text tokenized otherwise gets another vector
under the same model's name. `tokenizers` (a development dependency) is the reference.

`python tests/memory/test_wordpiece.py --write` rewrites memory/embeddings/bert_characters.py's
tables from the installed `tokenizers` (after upgrading it, if the tests below then fail).
"""

from __future__ import annotations

import json
import random
import sys
import textwrap
import unicodedata
import zipfile
from pathlib import Path

import pytest
from tokenizers import Tokenizer

ROOT = Path(__file__).resolve().parents[2]
if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))

from memory.embeddings import local_model, minilm  # noqa: E402
from memory.embeddings.bert_characters import DROPPED, NONSPACING, PUNCTUATION  # noqa: E402
from memory.embeddings.wordpiece import CJK, WordPiece, words  # noqa: E402


def _tokenizer_json() -> str:
    path = local_model.model_zip()
    assert path is not None, "the model package is a dependency"
    with zipfile.ZipFile(path) as archive:
        return archive.read("tokenizer.json").decode()


def _reference(max_tokens: int | None) -> Tokenizer:
    """`tokenizers` on the model's file, as the local embedder used it: unpadded, truncated."""
    reference = Tokenizer.from_str(_tokenizer_json())
    reference.no_padding()
    if max_tokens is None:
        reference.no_truncation()
    else:
        reference.enable_truncation(max_tokens)
    return reference


@pytest.fixture(scope="module")
def ours() -> WordPiece:
    return WordPiece.from_json(_tokenizer_json(), max_tokens=minilm.MAX_TOKENS)


@pytest.fixture(scope="module")
def reference() -> Tokenizer:
    return _reference(minilm.MAX_TOKENS)


def _points() -> list[int]:
    return [p for p in range(sys.maxunicode + 1) if not 0xD800 <= p <= 0xDFFF]  # no surrogates in UTF-8


def test_every_code_point_tokenizes_as_tokenizers_does() -> None:
    # Each character within a word, after one, alone and before capitals: dropped, a space, an
    # ideograph or a punctuation mark set apart, an accent stripped, or kept. 64 per text, with
    # no limit to the ids, to cover all 1.1 million in a few seconds.
    ours = WordPiece.from_json(_tokenizer_json(), max_tokens=1_000_000)
    reference = _reference(None)
    points = _points()
    texts = [
        " | ".join(f"x{chr(p)}x a{chr(p)} {chr(p)}Ab" for p in points[at : at + 64])
        for at in range(0, len(points), 64)
    ]
    differing = [
        text[:40]
        for text, theirs in zip(texts, reference.encode_batch(texts), strict=True)
        if ours.encode(text) != theirs.ids
    ]
    assert not differing, differing[:5]


def test_mixed_texts_tokenize_as_tokenizers_does(ours: WordPiece, reference: Tokenizer) -> None:
    rng = random.Random(20261206)
    pools = [
        [chr(low) for low, _ in table.spans()] + [chr(high) for _, high in table.spans()]
        for table in (DROPPED, NONSPACING, PUNCTUATION)
    ]
    pools.append([chr(p) for p in range(0x20, 0x7F)])
    pools.append(
        list("ÀÉÎõüñçÅåΣσςİıﬁẞß😀🥲中文字한국어日本語\u2000\u3000\u00a0\x85\x0b\x1c\u200b\ufeff\ufffd\u0301")
    )
    pools.append(["[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]", "[cls]", " ", "\n\t", "x" * 101, "ΟΔΟΣ "])
    pools.append(["deploy", "##ing", "un##", "invoice-worker", "kubectl", "résumé", "naïve"])
    pools.append([chr(p) for p in rng.sample(_points(), 5000)])
    texts = [
        "".join(rng.choice(rng.choice(pools)) for _ in range(rng.randrange(1, 60))) for _ in range(20_000)
    ]
    for corpus in sorted((ROOT / "tests" / "corpus").glob("*.jsonl")):
        texts += [json.loads(line)["text"] for line in corpus.read_text().splitlines() if line.strip()]
    texts += ["word " * 200, "a" * 100, "a" * 101, "é" * 101, "", "   ", "[SEP]" * 200]
    differing = [
        text
        for text, theirs in zip(texts, reference.encode_batch(texts), strict=True)
        if ours.encode(text) != theirs.ids
    ]
    assert not differing, differing[:5]


def test_a_sentence_becomes_its_pieces_between_cls_and_sep(ours: WordPiece) -> None:
    vocab = json.loads(_tokenizer_json())["model"]["vocab"]
    tokens = ["[CLS]", "deploy", "##ing", "the", "in", "##vo", "##ice", "-", "worker", "!", "[SEP]"]
    assert ours.encode("Deploying  the INVOICE-worker!") == [vocab[t] for t in tokens]
    assert words("Résumé: ΟΔΟΣ naïve\u200b") == ["resume", ":", "οδοσ", "naive"]


def test_a_text_keeps_its_first_tokens_up_to_the_limit(ours: WordPiece) -> None:
    ids = ours.encode("deploy " * 500)
    assert len(ids) == minilm.MAX_TOKENS
    assert ids[0] == ours.encode("")[0]
    assert ids[-1] == ours.encode("")[-1]
    assert len(set(ids[1:-1])) == 1


def test_a_word_longer_than_the_model_allows_is_unknown(ours: WordPiece) -> None:
    unknown = json.loads(_tokenizer_json())["model"]["vocab"]["[UNK]"]
    assert ours.encode("a" * 101)[1:-1] == [unknown]
    assert unknown not in ours.encode("a" * 100)


def _tables() -> dict[str, list[tuple[int, int]]]:
    """What `tokenizers` drops, strips and splits off beyond ASCII, probed one character at a time.

    Only characters that decomposition leaves as they are: the others are decomposed before the
    marks and punctuation are looked up, and none is a control character.
    """
    reference = _reference(None)
    together, spaced = reference.encode("xx").ids, reference.encode("x x").ids
    points = [p for p in _points() if p >= 0x80 and unicodedata.normalize("NFD", chr(p)) == chr(p)]
    within = reference.encode_batch([f"x{chr(p)}x" for p in points])
    apart = reference.encode_batch([f"x {chr(p)} x" for p in points])
    found: dict[str, list[int]] = {"DROPPED": [], "NONSPACING": [], "PUNCTUATION": []}
    for point, inside, alone in zip(points, within, apart, strict=True):
        if inside.ids == together:  # removed: a mark after decomposition, else before it
            found["NONSPACING" if unicodedata.category(chr(point)) == "Mn" else "DROPPED"].append(point)
        elif inside.ids == alone.ids != spaced and not any(low <= point <= high for low, high in CJK):
            found["PUNCTUATION"].append(point)  # set apart: ideographs are, by their ranges
    spans: dict[str, list[tuple[int, int]]] = {}
    for name, listed in found.items():
        spans[name] = []
        for point in listed:
            if spans[name] and spans[name][-1][1] == point - 1:
                spans[name][-1] = (spans[name][-1][0], point)
            else:
                spans[name].append((point, point))
    return spans


def _write_tables() -> None:
    path = ROOT / "memory" / "embeddings" / "bert_characters.py"
    source = path.read_text()
    head = source[: source.index("DROPPED = Ranges(")]
    parts = []
    for name, spans in _tables().items():
        text = " ".join(f"{a:x}" if a == b else f"{a:x}-{b:x}" for a, b in spans)
        lines = textwrap.fill(
            text, 96, break_on_hyphens=False, initial_indent="    ", subsequent_indent="    "
        )
        parts.append(f'{name} = Ranges(\n    """\n{lines}\n    """\n)\n')
    path.write_text(head + "\n".join(parts))


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit(__doc__)
    _write_tables()
