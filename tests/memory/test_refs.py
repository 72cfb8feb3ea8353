"""Refs are random, unguessable and of one form, however many are made at once."""

from __future__ import annotations

from memory.refs import ALPHABET, TAIL_LENGTH, is_ref, new_ref, ref_tails


def test_ref_tails_are_distinct_words_of_the_alphabet_at_any_count() -> None:
    for count in (0, 1, 2, 7, 8, 9, 5_000):
        tails = ref_tails(count)
        assert len(tails) == count
        assert len(set(tails)) == count
        assert all(len(tail) == TAIL_LENGTH and set(tail) <= set(ALPHABET) for tail in tails)


def test_every_letter_of_the_alphabet_turns_up_in_tails() -> None:
    assert set("".join(ref_tails(200))) == set(ALPHABET)


def test_a_new_ref_is_its_prefix_and_a_tail() -> None:
    ref = new_ref("decision")
    prefix, tail = ref.split("_")
    assert prefix == "decision"
    assert len(tail) == TAIL_LENGTH
    assert is_ref(ref)
