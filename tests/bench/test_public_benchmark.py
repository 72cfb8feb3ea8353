"""The public-benchmark mode of bench/quality.py, on a tiny hand-written sample in MADial-Bench's
format (tests/bench/madial-sample: invented lines, not the benchmark's): the loader reads what the
benchmark's files hold, and the figures come from importing it and asking through the selectors.
"""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import public  # noqa: E402
import quality  # noqa: E402

SAMPLE = Path(__file__).resolve().parent / "madial-sample"


def test_each_memory_becomes_a_dated_item() -> None:
    dataset = public.load("madial-bench", SAMPLE)
    assert [item.source for item in dataset.items] == [f"madial/{i}" for i in range(1, 6)]
    first = dataset.items[0]
    assert first.text == "Mira juggled three oranges at the winter fair and everyone clapped."
    assert first.date == "2023-12-25"


def test_a_question_is_the_conversation_before_the_test_turn_without_speaker_tags() -> None:
    first, second, third = public.load("madial-bench", SAMPLE).questions
    assert first.query == (
        "I want to juggle oranges again at the fair! Great idea. Do you think people will like it?"
    )
    assert first.task == first.query
    assert "marathon" not in first.query
    assert "everyone clapped" not in first.query
    assert second.relevant == {"madial/2", "madial/5"}
    assert public.recall_ceiling(public.load("madial-bench", SAMPLE), 1) == pytest.approx((1 + 1 / 2 + 1) / 3)
    # Two test turns: the conversation stops before the first.
    assert third.query == "I feel like something cold and sweet."


def test_a_long_conversation_keeps_its_latest_words_within_the_tools_bounds(tmp_path: Path) -> None:
    (tmp_path / "MADial-Bench-en-memory.json").write_text(
        json.dumps({"1": {"time": "2023-01-01", "event": "Mira moved to Lisbon."}}) + "\n"
    )
    said = [f'<Mira>: "Sentence number {n} about the move."\n' for n in range(200)]
    row = {"dialogue": ["<BOD>\n", *said, '<Assistant>: "Lisbon!"\n'], "test-turn": [201], "relevant-id": [1]}
    (tmp_path / "MADial-Bench-en-dialogue.json").write_text(json.dumps(row) + "\n")
    (question,) = public.load("madial-bench", tmp_path).questions
    assert len(question.query) <= public.QUERY_MAX
    assert len(question.task) <= public.TASK_MAX
    full = " ".join(f"Sentence number {n} about the move." for n in range(200))
    assert full.endswith(question.query)
    assert full[-len(question.query) - 1] == " "  # cut between words
    assert "Lisbon" not in question.task


@pytest.mark.parametrize(
    ("memory", "dialogue", "message"),
    [
        (None, None, "not found"),
        ("not json\n", "", "not JSON"),
        ('{"1": {"time": "2023-01-01"}}\n', "", "no event text"),
        (
            '{"1": {"event": "Mira moved."}}\n',
            '{"dialogue": ["<BOD>\\n", "<Mira>: \\"hi\\"\\n"], "test-turn": [1], "relevant-id": [9]}\n',
            "not in the memory file",
        ),
        ('{"1": {"event": "Mira moved."}}\n', '{"dialogue": []}\n', "lacks dialogue, test-turn"),
    ],
)
def test_files_not_in_the_benchmarks_format_are_refused_with_the_reason(
    tmp_path: Path, memory: str | None, dialogue: str | None, message: str
) -> None:
    if memory is not None:
        (tmp_path / "MADial-Bench-en-memory.json").write_text(memory)
    if dialogue is not None:
        (tmp_path / "MADial-Bench-en-dialogue.json").write_text(dialogue)
    with pytest.raises(public.DatasetError, match=message):
        public.load("madial-bench", tmp_path)


def test_the_command_line_reports_a_wrong_path_instead_of_failing(tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as stopped:
        quality.main(["--public", "madial-bench", "--public-path", str(tmp_path / "missing")])
    assert stopped.value.code == 2
    assert "not found: --public-path must be the benchmark's data folder" in capsys.readouterr().err


@pytest.mark.django_db
def test_figures_count_the_relevant_items_found_through_the_import_and_the_selectors(tmp_path: Path) -> None:
    dataset = public.load("madial-bench", SAMPLE)
    write = partial(public.write_jsonl, dataset)
    quality.seed(dataset.name, write, len(dataset.items), tmp_path / "sample.jsonl")
    assert quality._seeded(dataset.name, {i.source: i.text for i in dataset.items}, len(dataset.items))
    scope, project = quality._scope_and_project(dataset.name)

    figures = quality.measure_public(dataset, scope, project)

    # No vectors: the lexical ranking alone. Only the first question shares words with its memory
    # ("oranges", "fair"); the other two share none, and the words after the test turn
    # ("marathon gelato") were never asked.
    assert figures["search dialogue recall@1"] == pytest.approx(1 / 3)
    assert figures["search dialogue recall@20"] == pytest.approx(1 / 3)
    # Five items fit whole in a bundle (40 at most): each holds both of the second question's.
    assert figures["get_context dialogue: relevant share in bundle"] == 1.0
