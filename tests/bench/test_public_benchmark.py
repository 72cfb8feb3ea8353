"""The public-benchmark mode of bench/quality.py, on tiny hand-written samples in the formats of
MADial-Bench and REALTALK (tests/bench/*-sample: invented lines, not the benchmarks'): the loaders
read what the benchmarks' files hold, and the figures come from importing them and asking through
the selectors.
"""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path

import pytest

from tests.readpath import _fresh_bundle_cache  # noqa: F401  (autouse: bundles of earlier tests)

BENCH = Path(__file__).resolve().parents[2] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import public  # noqa: E402
import quality  # noqa: E402

SAMPLE = Path(__file__).resolve().parent / "madial-sample"
REALTALK = Path(__file__).resolve().parent / "realtalk-sample"


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


def test_each_chat_message_becomes_a_dated_item_and_each_question_its_evidence() -> None:
    dataset = public.load("realtalk", REALTALK)
    chat = "realtalk/Chat_1_Ann_Bo"
    # The photo without words is no item; the two "Hey!" stay two.
    assert [item.source for item in dataset.items] == [
        f"{chat}/D1:1",
        f"{chat}/D1:2",
        *(f"{chat}/D2:{n}" for n in (1, 2, 3)),
    ]
    assert dataset.items[1].text == "Bo: I went skiing in Colorado over the holidays."
    assert dataset.items[1].date == "2023-12-29"
    skiing, starter = dataset.questions  # the third names no message of the chat
    assert skiing.query == skiing.task == "Where did Bo go skiing?"
    assert skiing.relevant == {f"{chat}/D1:2"}
    assert starter.relevant == {f"{chat}/D2:2", f"{chat}/D2:3"}


@pytest.mark.parametrize(
    ("written", "ids"),
    [
        (["D12:3-D12:5"], ["D12:3", "D12:4", "D12:5"]),
        (["D5:12;D5:16", "D5:3."], ["D5:12", "D5:16", "D5:3"]),
        (["D11:17; D16:1"], ["D11:17", "D16:1"]),
        (["D13:45:D20:19"], ["D13:45", "D20:19"]),
        (["D2:9-D3:1"], ["D2:9", "D3:1"]),
        (["see above"], []),
    ],
)
def test_hand_written_evidence_is_read_as_the_message_ids_it_names(
    written: list[str], ids: list[str]
) -> None:
    assert list(public._evidence_ids(written)) == ids


def test_a_folder_without_chats_is_refused(tmp_path: Path) -> None:
    with pytest.raises(public.DatasetError, match="holds no Chat_"):
        public.load("realtalk", tmp_path)
    (tmp_path / "Chat_1_A_B.json").write_text('{"session_1": [{"speaker": "A"}], "qa": []}')
    with pytest.raises(public.DatasetError, match="not a REALTALK chat"):
        public.load("realtalk", tmp_path)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "sample", "found"),
    [
        # Only the first dialogue shares words with its memory ("oranges", "fair"); the words
        # after its test turn ("marathon gelato") were never asked.
        ("madial-bench", SAMPLE, 1 / 3),
        # "skiing" finds its message; "starter" finds one of its two, "Bake a loaf" shares no word.
        ("realtalk", REALTALK, (1 + 1 / 2) / 2),
    ],
)
def test_figures_count_the_relevant_items_found_through_the_import_and_the_selectors(
    tmp_path: Path, name: str, sample: Path, found: float
) -> None:
    dataset = public.load(name, sample)
    write = partial(public.write_jsonl, dataset)
    quality.seed(dataset.name, write, len(dataset.items), tmp_path / "sample.jsonl")
    assert quality._seeded(dataset.name, {i.source: i.text for i in dataset.items}, len(dataset.items))
    scope, project = quality._scope_and_project(dataset.name)

    figures = quality.measure_public(dataset, scope, project)

    # No vectors: the lexical ranking alone.
    asked = {"madial-bench": "dialogue", "realtalk": "question"}[name]
    assert figures[f"search {asked} recall@1"] == pytest.approx(found)
    assert figures[f"search {asked} recall@20"] == pytest.approx(found)
    # A handful of items fit whole in a bundle (40 at most): each holds all its relevant ones.
    assert figures[f"get_context {asked}: relevant share in bundle"] == 1.0
